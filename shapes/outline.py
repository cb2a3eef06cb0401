"""The outline shape: a table of contents from the library or any URI.

Rows come in tree order — folders before documents (each by name), sections in reading order —
with full URIs that can be fed back to `outline` or to `search --under`. After a node's children
come its outbound links as `→` rows, which never expand their target. A node at the depth limit
says how many children were cut. The tree is read a level at a time and never past MAX_NODES
nodes: an outline of a large estate stops at the last level that fits and counts the rest, so
its cost grows with what it shows, not with the estate.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from shapes.access.scope import visible
from shapes.access.versioned import Versioned
from shapes.freshness import versions
from shapes.spec import Params, ShapeSpec
from shapes.spec.budget import size
from shapes.spec.exceptions import NotFound, ShapeError
from worker.graph.schema import DOCUMENT_LABELS, Label, Rel

if TYPE_CHECKING:
    from neo4j import Driver

    from worker.shared.grants import Grant

MAX_DEPTH = 20
MAX_NODES = 1_000  # an outline reads at most this many nodes: about four default pages
KEPT_OUTLINES = 32  # outlines kept for one version of the documents (one per URI and depth asked)
KIND_ORDER = {Label.LIBRARY: 0, Label.FOLDER: 1, Label.DOCUMENT: 2, Label.SECTION: 3}
HIDDEN_WORDS = {"Library": "library", "Folder": "folder", "Document": "document", "Section": "section", "Link": "link", "Unresolved": "unresolved link"}
KIND_WORDS_ORDER = list(HIDDEN_WORDS)


def _by_uri(node: str, uri: str) -> str:
    """A subquery finding `node` by `uri` through the uniqueness index of each document label
    (a label-less match on uri would scan every node)."""
    branches = " UNION ".join(f"MATCH ({node}:{label} {{uri: {uri}}}) RETURN {node}" for label in DOCUMENT_LABELS)
    return f"CALL ({uri.lstrip('$')}) {{ {branches} }}" if not uri.startswith("$") else f"CALL () {{ {branches} }}"


# A node's fields; its kind is the first of its labels the outline knows.
NODE = """{id: elementId(n), uri: n.uri, kind: [label IN labels(n) WHERE label IN $labels][0], name: n.name,
       display: n.displayName, sort_pos: coalesce(n.sort_pos, 0)}"""
# The first level: every library, or the node the outline starts at.
LIBRARIES = f"MATCH (n:{Label.LIBRARY}) RETURN {NODE} AS node ORDER BY n.uri"
# A restricted grant's first level: the nodes at its prefixes (what lies above them is not its).
GRANTED_ROOTS = f"UNWIND $prefixes AS prefix {_by_uri('n', 'prefix')} RETURN {NODE} AS node ORDER BY n.uri"
START = f"{_by_uri('n', '$uri')} RETURN {NODE} AS node"
# One level of the tree: how many children the level above has (their degrees, read without
# expanding), and the children themselves only when that many still fit in the outline.
CHILDREN = f"""
UNWIND $ids AS id
MATCH (p) WHERE elementId(p) = id
WITH collect(p) AS parents, sum(COUNT {{ (p)-[:{Rel.HAS}]->() }}) AS total
CALL (parents, total) {{
  UNWIND CASE WHEN total <= $room THEN parents ELSE [] END AS p
  MATCH (p)-[:{Rel.HAS}]->(n)
  RETURN collect({{parent: p.uri, node: {NODE}}}) AS children
}}
RETURN total, children
"""
# What lies directly below the last level shown, by kind: a document's or section's children are
# sections (their count is the node's degree, read without expanding); a library's or folder's
# are folders and documents.
BELOW = f"""
UNWIND $ids AS id
MATCH (n) WHERE elementId(n) = id
WITH n, COUNT {{ (n)-[:{Rel.HAS}]->() }} AS children
WITH n, children, CASE WHEN n:{Label.LIBRARY} OR n:{Label.FOLDER} THEN COUNT {{ (n)-[:{Rel.HAS}]->(:{Label.FOLDER}) }} ELSE 0 END AS folders
RETURN n.uri AS uri, children, folders, n:{Label.LIBRARY} OR n:{Label.FOLDER} AS container
"""
# Each shown node's outbound links, resolved then unresolved, in their order in the node.
LINKS = f"""
UNWIND $ids AS id
MATCH (n) WHERE elementId(n) = id
CALL (n) {{
  MATCH (n)-[l:{Rel.LINKS_TO}]->(t) WHERE {visible("t.uri")}
  RETURN 'Link' AS kind, t.uri AS target, CASE WHEN coalesce(t.displayName, '') = '' THEN t.uri ELSE t.displayName END AS label, CASE WHEN l.anchor_found THEN coalesce(l.anchor_note, '') ELSE coalesce(l.anchor_note, 'anchor not found') + ': the document' END AS note,
         l.ordinal AS ordinal
  UNION ALL
  MATCH (n)-[:{Rel.HAS_UNRESOLVED}]->(u)
  RETURN 'Unresolved' AS kind, u.href AS target, u.href AS label, u.reason AS note, u.ordinal AS ordinal
}}
RETURN n.uri AS uri, kind, target, label, note
ORDER BY uri, kind, ordinal
"""

Kind = Literal["Library", "Folder", "Document", "Section", "Link", "Unresolved"]


@dataclass(frozen=True)
class OutlineRow:
    depth: int
    kind: Kind
    uri: str  # for links: the target's uri
    label: str  # folders by name with "/", documents and sections by display name
    note: str = ""  # cut counts, link flags, unresolved reasons


@dataclass(frozen=True)
class Outline:
    root: str | None
    depth: int
    rows: list[OutlineRow] = field(default_factory=list)
    shown_depth: int | None = None  # set when the tree was cut above `depth`: the last level read, the rest counted


def outline(driver: Driver, database: str, uri: str | None, depth: int, grant: Grant, max_nodes: int = MAX_NODES) -> Outline:
    """The tree below `uri` (or every library the grant sees, or its prefixes' nodes) to `depth`,
    read a level at a time. Everything below a node the grant sees is seen too; a link to a node
    it does not see is left out, and a URI it does not see is not found. A level that
    would take the outline past `max_nodes` nodes is not read (its size is known from the degrees
    of the level above): the level above it is the last shown, each of its nodes counting what
    lies below it, so the work is bounded by what is shown, whatever the size of the estate."""
    if not 0 <= depth <= MAX_DEPTH:
        raise ShapeError(f"depth must be between 0 and {MAX_DEPTH}, got {depth}")
    labels = [str(label) for label in DOCUMENT_LABELS]
    if uri is not None:
        first = driver.execute_query(START, uri=uri, labels=labels, database_=database).records if grant.sees_uri(uri) else []
    elif grant.everything:
        first = driver.execute_query(LIBRARIES, labels=labels, database_=database).records
    else:
        first = driver.execute_query(GRANTED_ROOTS, prefixes=list(grant.libraries), labels=labels, database_=database).records
    levels = [[{"parent": None, **row["node"]} for row in first]]
    if uri is not None and not levels[0]:
        raise NotFound(f"no library, folder, document or section has the URI {uri!r}; `outline` without a URI lists the libraries")
    read = len(levels[0])
    shown_depth: int | None = None
    while len(levels) <= depth and levels[-1]:
        room = max_nodes - read
        found = driver.execute_query(CHILDREN, ids=[node["id"] for node in levels[-1]], labels=labels, room=room, database_=database).records[0]
        if found["total"] > room:
            shown_depth = len(levels) - 1
            break
        below = [{"parent": child["parent"], **child["node"]} for child in found["children"]]
        levels.append(below)
        read += len(below)
    for level, nodes in enumerate(levels):
        for node in nodes:
            node["depth"] = level
    nodes = [node for level in levels for node in level]
    boundary = [node["id"] for node in levels[-1]] if len(levels) > depth or shown_depth is not None else []
    return Outline(uri, depth, _rows(driver, database, nodes, boundary, grant), shown_depth)


def _rows(driver: Driver, database: str, nodes: list[dict], boundary: list[str], grant: Grant) -> list[OutlineRow]:
    children: dict[str | None, list[dict]] = {}
    for node in nodes:
        children.setdefault(node["parent"], []).append(node)
    for siblings in children.values():
        siblings.sort(key=lambda node: (KIND_ORDER[Label(node["kind"])], node["sort_pos"], node["name"] or ""))
    ids = [node["id"] for node in nodes]
    notes = {row["uri"]: _below(row) for row in driver.execute_query(BELOW, ids=boundary, database_=database).records} if boundary else {}
    links: dict[str, list[OutlineRow]] = {}
    for row in driver.execute_query(LINKS, ids=ids, **grant.cypher(), database_=database).records:
        links.setdefault(row["uri"], []).append(OutlineRow(0, row["kind"], row["target"], row["label"], row["note"] or ""))

    found: list[OutlineRow] = []

    def visit(node: dict, level: int) -> None:
        kind = node["kind"]
        label = f"{node['name']}/" if kind in (Label.LIBRARY, Label.FOLDER) else (node["display"] or node["name"])
        found.append(OutlineRow(level, kind, node["uri"], label, notes.get(node["uri"], "")))
        for child in children.get(node["uri"], []):
            visit(child, level + 1)
        for link in links.get(node["uri"], []):
            found.append(OutlineRow(level + 1, link.kind, link.uri, link.label, link.note))

    for root in children.get(None, []):
        visit(root, 0)
    return found


def _below(row: Any) -> str:
    """ "+3 folders, 12 documents below" for a container, "+4 sections below" for the others."""
    if not row["children"]:
        return ""
    if not row["container"]:
        return f"+{_count(row['children'], 'section')} below"
    parts = [_count(row["folders"], "folder"), _count(row["children"] - row["folders"], "document")]
    return "+" + ", ".join(part for part in parts if not part.startswith("0 ")) + " below"


def _count(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def render(shape: Outline) -> str:
    if not shape.rows:
        return "(empty: no library loaded yet; `lakegraph load docs`)"
    lines = []
    for row in shape.rows:
        indent = "  " * row.depth
        if row.kind == "Link":
            text = f"{indent}→ {row.label}  {row.uri}"
        elif row.kind == "Unresolved":
            text = f"{indent}✗ {row.label}"
        else:
            text = f"{indent}{row.label}  [{row.kind}]  {row.uri}"
        lines.append(text + (f"  ({row.note})" if row.note else ""))
    if shape.shown_depth is not None:
        lines.append(
            f"(levels {shape.shown_depth + 1}–{shape.depth} not read: more than {MAX_NODES:,} nodes; each node of level "
            f"{shape.shown_depth} counts what lies below it — drill into its URI)"
        )
    return "\n".join(lines)


def overview(whole: Outline, chars: int) -> Outline | None:
    """The outline as a table of contents that fits `chars`: the deepest levels that fit are kept,
    and each row at the last kept level counts what it hides ("+9 folders, 412 documents") — its
    URI drills in. None when not even the roots' children fit (plain pages do better then)."""
    for level in range(max(row.depth for row in whole.rows) - 1, 0, -1):
        rows = _summarised(whole.rows, level)
        if size(replace(whole, rows=rows)) <= chars:
            return replace(whole, rows=rows)
    return None


def _summarised(rows: list[OutlineRow], level: int) -> list[OutlineRow]:
    kept: list[OutlineRow] = []
    hidden: Counter[str] = Counter()

    def close() -> None:
        if hidden and kept:
            counts = ", ".join(_count(count, HIDDEN_WORDS[kind]) for kind, count in sorted(hidden.items(), key=lambda item: KIND_WORDS_ORDER.index(item[0])))
            last = kept[-1]
            kept[-1] = replace(last, note=f"{last.note}; +{counts} below" if last.note else f"+{counts} below")
        hidden.clear()

    for row in rows:
        if row.depth > level:
            hidden[row.kind] += 1
            continue
        close()
        kept.append(row)
    close()
    return kept


class OutlineShape:
    """Outlines kept until the documents change (the documents source's stamp keys them): agents
    open with the libraries' outline and come back to it, and at 100k documents reading even a
    bounded tree costs a few round trips."""

    def __init__(self, driver: Driver, database: str) -> None:
        self.driver = driver
        self.database = database
        self.outlines: Versioned[Outline] = Versioned(KEPT_OUTLINES)

    def __call__(self, uri: str | None, depth: int, grant: Grant) -> Outline:
        return self.outlines.get(
            versions(self.driver, self.database, "documents"), (uri, depth, grant.key), lambda: outline(self.driver, self.database, uri, depth, grant)
        )


class OutlineParams(Params):
    uri: str | None = Field(None, description="Start here: a URI from an earlier answer; omit for the libraries")
    depth: int = Field(1, ge=0, le=MAX_DEPTH, description="Levels below the URI to show")


SPEC = ShapeSpec(
    name="outline",
    purpose="Table of contents from the libraries or any URI, with each node's links.",
    guide="Folders, documents and sections in reading order, and each node's outbound links as → rows; "
    "use it to read a document's structure or follow its references. URIs feed back into outline and search's under.",
    params=OutlineParams,
    output=Outline,
    refers={"root": "outline", "uri": "outline"},
    run=lambda shapes, p, grant: shapes.outlines(p.uri or None, p.depth, grant),
    scoped=True,
    render=render,
    rows=("rows",),
    overview=overview,
    needs="documents",
    arguments=("uri",),
)
