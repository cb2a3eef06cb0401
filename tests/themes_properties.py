"""What the themes properties are measured with, in tests and benchmarks alike: a snapshot of the
stored themes, link edits at document level (and their reversal), and how many ids an edit kept.

Edits write LINKS_TO directly, as an author's edit would through the writer, and re-sign the
touched documents' links the way the writer does (see worker.documents.link_version)."""

from __future__ import annotations

import random
from dataclasses import dataclass

from neo4j import Driver

from worker.documents import link_version

THEMES = """
MATCH (t:Theme)
OPTIONAL MATCH (d:Document)-[:IN_THEME]->(t)
WITH t, collect(d.uri) AS members
RETURN t.id AS id, t.level AS level, t.conductance AS conductance, members
"""
# A link between two documents is any LINKS_TO from one's nodes (it or its sections) to the other's.
TAKE_LINKS = """
UNWIND $pairs AS p
UNWIND [[p[0], p[1]], [p[1], p[0]]] AS way
CALL (way) {
  MATCH (s:Document {uri: way[0]}) RETURN s
  UNION
  MATCH (s:Section {doc_uri: way[0]}) RETURN s
}
MATCH (s)-[l:LINKS_TO]->(t) WHERE coalesce(t.doc_uri, t.uri) = way[1]
WITH s, t, l, [labels(s)[0], s.uri, labels(t)[0], t.uri, properties(l)] AS row
DELETE l
RETURN row
"""
PUT_LINKS = {
    (source, target): f"""
    UNWIND $rows AS r
    MATCH (s:{source} {{uri: r[1]}}) MATCH (t:{target} {{uri: r[3]}})
    CREATE (s)-[l:LINKS_TO]->(t) SET l = r[4]
    """
    for source in ("Document", "Section")
    for target in ("Document", "Section")
}

Snapshot = frozenset[tuple[str, int, float, frozenset[str]]]


def snapshot(driver: Driver) -> Snapshot:
    """Every stored theme: id, level, conductance and members."""
    return frozenset((row["id"], row["level"], row["conductance"], frozenset(row["members"])) for row in driver.execute_query(THEMES).records)


def level0(themes: Snapshot) -> dict[str, frozenset[str]]:
    return {theme_id: members for theme_id, level, _, members in themes if level == 0}


@dataclass(frozen=True)
class LinkEdit:
    removed: list[list]  # [source label, source uri, target label, target uri, properties]
    added: list[list]

    @property
    def ends(self) -> set[str]:
        """The documents at either end of a changed link: the only ones a theme update may move."""
        return {uri.split("#", 1)[0] for row in self.removed + self.added for uri in (row[1], row[3])}


def _put(driver: Driver, rows: list[list]) -> None:
    for (source, target), query in PUT_LINKS.items():
        chosen = [row for row in rows if (row[0], row[2]) == (source, target)]
        if chosen:
            driver.execute_query(query, rows=chosen)


def _resign(driver: Driver, rows: list[list]) -> None:
    touched = {uri.split("#", 1)[0] for row in rows for uri in (row[1], row[3])}
    with driver.session(database="neo4j") as session:
        session.execute_write(link_version.resign, touched)


def edit_links(driver: Driver, fraction: float, rng: random.Random) -> LinkEdit:
    """Change `fraction` of the document-level link graph (what themes run on): half of the changes
    remove every link between two linked documents, half link two documents that were not linked."""
    from worker.themes.projection import document_graph

    graph = document_graph(driver, "neo4j")
    count = max(2, round(len(graph.edges) * fraction))
    gone = rng.sample(sorted(graph.edges), count // 2)
    removed = [row["row"] for row in driver.execute_query(TAKE_LINKS, pairs=[list(pair) for pair in gone]).records]
    added: list[list] = []
    while len(added) < count - len(gone):
        a, b = sorted(rng.sample(graph.documents, 2))
        if (a, b) not in graph.edges:
            added.append(["Document", a, "Document", b, {"ordinal": -1, "kind": "edit"}])
    _put(driver, added)
    _resign(driver, removed + added)
    return LinkEdit(removed, added)


def revert(driver: Driver, edit: LinkEdit) -> None:
    """Undo an edit: its added links go, its removed links come back as they were."""
    driver.execute_query(TAKE_LINKS, pairs=[[row[1], row[3]] for row in edit.added])
    _put(driver, edit.removed)
    _resign(driver, edit.removed + edit.added)


def kept_share(before: dict[str, frozenset[str]], after: dict[str, frozenset[str]]) -> float:
    """The share of the earlier themes whose id survived."""
    return sum(1 for theme_id in before if theme_id in after) / len(before) if before else 1.0


def kept_together(before: dict[str, frozenset[str]], after: dict[str, frozenset[str]], free: set[str]) -> bool:
    """Documents outside `free` that are grouped before and after are grouped with exactly the same
    others, whatever the ids (one may fall out of a theme that shrank below the minimum size)."""
    held = frozenset().union(*before.values(), frozenset()) & frozenset().union(*after.values(), frozenset())
    held -= free

    def parts(themes: dict[str, frozenset[str]]) -> set[frozenset[str]]:
        return {members & held for members in themes.values()} - {frozenset()}

    return parts(before) == parts(after)


def moved(before: dict[str, frozenset[str]], after: dict[str, frozenset[str]]) -> int:
    """Documents whose level-0 theme changed (ungrouped counts as a theme of its own)."""
    old = {uri: theme for theme, members in before.items() for uri in members}
    new = {uri: theme for theme, members in after.items() for uri in members}
    return sum(1 for uri in set(old) | set(new) if old.get(uri) != new.get(uri))
