"""The outline shape: a table of contents from the library or any URI.

Rows come in tree order — folders before documents (each by name), sections in reading order —
with full URIs that can be fed back to `outline` or to `search --under`. After a node's children
come its outbound links as `→` rows, which never expand their target. A node at the depth limit
says how many children were cut.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Literal

from neo4j import Driver
from pydantic import Field

from shapes.budget import size
from shapes.errors import ShapeError
from shapes.spec import Params, ShapeSpec
from worker.graph.schema import DOCUMENT_LABELS, Label, Rel

MAX_DEPTH = 20
KIND_ORDER = {Label.LIBRARY: 0, Label.FOLDER: 1, Label.DOCUMENT: 2, Label.SECTION: 3}
HIDDEN_WORDS = {"Library": "library", "Folder": "folder", "Document": "document", "Section": "section", "Link": "link", "Unresolved": "unresolved link"}
KIND_WORDS_ORDER = list(HIDDEN_WORDS)


def _by_uri(node: str, uri: str) -> str:
    """A subquery finding `node` by `uri` through the uniqueness index of each document label
    (a label-less match on uri would scan every node)."""
    branches = " UNION ".join(f"MATCH ({node}:{label} {{uri: {uri}}}) RETURN {node}" for label in DOCUMENT_LABELS)
    return f"CALL ({uri.lstrip('$')}) {{ {branches} }}" if not uri.startswith("$") else f"CALL () {{ {branches} }}"


ROOTS = f"MATCH (n:{Label.LIBRARY}) RETURN n.uri AS uri ORDER BY uri"
FIND = f"{_by_uri('n', '$uri')} RETURN n.uri AS uri"


def _tree(depth: int) -> str:
    """The subtree query; the depth is an int checked by the caller (Cypher cannot take it as a parameter)."""
    return f"""
{_by_uri("root", "$uri")}
MATCH path = (root)-[:{Rel.HAS}*0..{depth}]->(n)
RETURN n.uri AS uri, [label IN labels(n) WHERE label IN $labels][0] AS kind, n.name AS name,
       n.displayName AS display, coalesce(n.sort_pos, 0) AS sort_pos, length(path) AS depth,
       CASE WHEN length(path) = 0 THEN null ELSE nodes(path)[-2].uri END AS parent
"""


CUT = f"""
UNWIND $uris AS uri
{_by_uri("n", "uri")}
MATCH (n)-[:{Rel.HAS}]->(child)
RETURN uri, count(child) AS cut
"""
LINKS = f"""
UNWIND $uris AS uri
{_by_uri("n", "uri")}
MATCH (n)-[l:{Rel.LINKS_TO}]->(t)
RETURN uri, t.uri AS target, t.displayName AS display, l.anchor_found AS anchor_found, l.ordinal AS ordinal
ORDER BY uri, ordinal
"""
UNRESOLVED = f"""
UNWIND $uris AS uri
{_by_uri("n", "uri")}
MATCH (n)-[:{Rel.HAS_UNRESOLVED}]->(u)
RETURN uri, u.href AS href, u.reason AS reason, u.ordinal AS ordinal
ORDER BY uri, ordinal
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


def outline(driver: Driver, database: str, uri: str | None, depth: int) -> Outline:
    if not 0 <= depth <= MAX_DEPTH:
        raise ShapeError(f"depth must be between 0 and {MAX_DEPTH}, got {depth}")
    labels = [str(label) for label in DOCUMENT_LABELS]
    if uri is None:
        roots = [row["uri"] for row in driver.execute_query(ROOTS, database_=database).records]
    else:
        if not driver.execute_query(FIND, uri=uri, database_=database).records:
            raise ShapeError(f"no library, folder, document or section has the URI {uri!r}; `outline` without a URI lists the libraries")
        roots = [uri]
    rows: list[OutlineRow] = []
    query = _tree(depth)
    for root in roots:
        nodes = [dict(row) for row in driver.execute_query(query, uri=root, labels=labels, database_=database).records]
        rows.extend(_rows(driver, database, nodes, depth))
    return Outline(uri, depth, rows)


def _rows(driver: Driver, database: str, nodes: list[dict], depth: int) -> list[OutlineRow]:
    children: dict[str | None, list[dict]] = {}
    for node in nodes:
        children.setdefault(node["parent"], []).append(node)
    for siblings in children.values():
        siblings.sort(key=lambda node: (KIND_ORDER[Label(node["kind"])], node["sort_pos"], node["name"] or ""))
    uris = [node["uri"] for node in nodes]
    boundary = [node["uri"] for node in nodes if node["depth"] == depth]
    cut = {row["uri"]: row["cut"] for row in driver.execute_query(CUT, uris=boundary, database_=database).records}
    links: dict[str, list[OutlineRow]] = {}
    for row in driver.execute_query(LINKS, uris=uris, database_=database).records:
        note = "" if row["anchor_found"] else "anchor not found: the document"
        links.setdefault(row["uri"], []).append(OutlineRow(0, "Link", row["target"], row["display"] or row["target"], note))
    for row in driver.execute_query(UNRESOLVED, uris=uris, database_=database).records:
        links.setdefault(row["uri"], []).append(OutlineRow(0, "Unresolved", row["href"], row["href"], row["reason"]))

    found: list[OutlineRow] = []

    def visit(node: dict, level: int) -> None:
        kind = node["kind"]
        label = f"{node['name']}/" if kind in (Label.LIBRARY, Label.FOLDER) else (node["display"] or node["name"])
        more = cut.get(node["uri"], 0)
        found.append(OutlineRow(level, kind, node["uri"], label, f"+{more} below" if more else ""))
        for child in children.get(node["uri"], []):
            visit(child, level + 1)
        for link in links.get(node["uri"], []):
            found.append(OutlineRow(level + 1, link.kind, link.uri, link.label, link.note))

    for root in children.get(None, []):
        visit(root, 0)
    return found


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
            counts = ", ".join(
                f"{count} {HIDDEN_WORDS[kind]}{'' if count == 1 else 's'}"
                for kind, count in sorted(hidden.items(), key=lambda item: KIND_WORDS_ORDER.index(item[0]))
            )
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
    run=lambda shapes, p: outline(shapes.driver, shapes.database, p.uri or None, p.depth),
    render=render,
    rows=("rows",),
    overview=overview,
    needs="documents",
    arguments=("uri",),
)
