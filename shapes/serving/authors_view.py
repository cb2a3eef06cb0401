"""What the themes page shows an author beyond the themes shape, all within the viewer's grant:
titles for the URIs it names; the author's own documents, found by title or folder, each with
where it sits (its theme or none, whether it is central there, and the other themes its
strongest links bridge to) and its strongest links in and out; for a stray page, the theme its folder's documents
belong to and that theme's central documents to link to; and the folders to filter by.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from shapes.access.scope import visible
from shapes.themes import LATEST_RUN, ThemesResult
from worker.graph import theme_store
from worker.graph.schema import Label, Rel
from worker.shared.grants import Grant

if TYPE_CHECKING:
    from neo4j import Driver

FOUND_AT_MOST = 20  # documents a search shows
STRONGEST = 5  # links in and out shown per document
MAX_SEARCH = 200  # characters of a search or a folder
FOLDERS_AT_MOST = 2000

# A document's title, or a section's with its document's before it.
TITLES = f"""
UNWIND $uris AS uri
CALL (uri) {{
  MATCH (d:{Label.DOCUMENT} {{uri: uri}}) RETURN d.displayName AS title
  UNION
  MATCH (s:{Label.SECTION} {{uri: uri}})
  OPTIONAL MATCH (d:{Label.DOCUMENT} {{uri: split(uri, '#')[0]}})
  RETURN coalesce(d.displayName + ' › ', '') + coalesce(s.displayName, '') AS title
}}
WITH uri, title WHERE {visible("uri")}
RETURN uri, title
"""
FOLDERS = f"""
MATCH (f:{Label.FOLDER}|{Label.LIBRARY}) WHERE {visible("f.uri")}
RETURN f.uri AS uri ORDER BY uri LIMIT $limit
"""
# A document's level-0 theme at run $run (none: ungrouped).
THEME_OF = f"OPTIONAL MATCH (d)-[:{Rel.IN_THEME}]->(t:{theme_store.VERSIONS} {{level: 0}}) WHERE {theme_store.visible('t')}"
# Documents under $folder whose title or URI holds $text, with their level-0 theme at run $run and
# their outgoing links collapsed to documents (the lists the writer keeps on each document).
FIND = f"""
MATCH (d:{Label.DOCUMENT}) WHERE d.uri STARTS WITH $folder AND {visible("d.uri")}
  AND ($text = '' OR toLower(coalesce(d.displayName, '')) CONTAINS $text OR toLower(d.uri) CONTAINS $text)
WITH d ORDER BY toLower(coalesce(d.displayName, d.uri)), d.uri LIMIT $limit
{THEME_OF}
WITH d, t, coalesce(d.link_targets, []) AS targets, coalesce(d.link_counts, []) AS counts
RETURN d.uri AS uri, d.displayName AS title, t.id AS theme,
       [i IN range(0, size(targets) - 1) WHERE targets[i] <> d.uri | [targets[i], counts[i]]] AS outbound
"""
# The documents linking into each of $uris (to it or to its sections), strongest first.
INBOUND = f"""
UNWIND $uris AS uri
CALL (uri) {{
  MATCH (t:{Label.DOCUMENT} {{uri: uri}}) RETURN t
  UNION
  MATCH (t:{Label.SECTION}) WHERE t.uri STARTS WITH uri + '#' RETURN t
}}
MATCH (source)-[:{Rel.LINKS_TO}]->(t)
WITH uri, split(source.uri, '#')[0] AS origin, count(*) AS links
WHERE origin <> uri AND {visible("origin")}
WITH uri, origin, links ORDER BY links DESC, origin
RETURN uri, collect([origin, links])[..$strongest] AS inbound
"""
# Documents with their title and level-0 theme at run $run.
PLACES = f"""
UNWIND $uris AS uri
MATCH (d:{Label.DOCUMENT} {{uri: uri}}) WHERE {visible("d.uri")}
{THEME_OF}
RETURN d.uri AS uri, d.displayName AS title, t.id AS theme
"""
# The theme most of a folder's documents belong to, per folder.
FOLDER_THEMES = f"""
UNWIND $folders AS folder
MATCH (d:{Label.DOCUMENT})-[:{Rel.IN_THEME}]->(t:{theme_store.VERSIONS} {{level: 0}})
WHERE d.uri STARTS WITH folder AND {visible("d.uri")} AND {theme_store.visible("t")}
WITH folder, t.id AS theme, count(*) AS members ORDER BY members DESC, theme
RETURN folder, head(collect(theme)) AS theme
"""


@dataclass(frozen=True)
class Neighbour:
    uri: str
    title: str | None
    theme: str | None
    links: int


@dataclass(frozen=True)
class Placed:
    """One of an author's documents and where it sits."""

    uri: str
    title: str | None
    theme: str | None
    theme_name: str | None
    central: bool  # its theme's summary names it among the most central
    bridges: list[str]  # the other themes its strongest links reach or come from
    outbound: list[Neighbour] = field(default_factory=list)
    inbound: list[Neighbour] = field(default_factory=list)
    home: str | None = None  # for an ungrouped one: the theme its folder's documents are in
    link_to: list[Neighbour] = field(default_factory=list)  # that theme's central documents


def titles(driver: Driver, database: str, uris: set[str], grant: Grant) -> dict[str, str]:
    """Each URI the grant sees that names a document or section, with its title."""
    rows = driver.execute_query(TITLES, uris=sorted(uris), **grant.cypher(), database_=database).records
    return {row["uri"]: row["title"] for row in rows if row["title"]}


def folders(driver: Driver, database: str, grant: Grant) -> list[str]:
    return [row["uri"] for row in driver.execute_query(FOLDERS, limit=FOLDERS_AT_MOST, **grant.cypher(), database_=database).records]


def find(driver: Driver, database: str, themes: ThemesResult, grant: Grant, text: str, folder: str) -> list[Placed]:
    """The author's documents: up to FOUND_AT_MOST under `folder` whose title or URI holds `text`
    (any case), each placed among `themes` (the level-0 themes the viewer sees)."""
    latest = driver.execute_query(LATEST_RUN, database_=database).records
    run = latest[0]["seq"] if latest else -1  # -1: before any run, no theme is visible
    scope = {**grant.cypher(), "run": run}
    under = folder.strip().strip("/")
    found = driver.execute_query(
        FIND, folder=f"{under}/" if under else "", text=text.strip().lower()[:MAX_SEARCH], limit=FOUND_AT_MOST, **scope, database_=database
    ).records
    if not found:
        return []
    uris = [row["uri"] for row in found]
    inbound = {row["uri"]: row["inbound"] for row in driver.execute_query(INBOUND, uris=uris, strongest=STRONGEST, **scope, database_=database).records}
    outbound = {row["uri"]: sorted(row["outbound"], key=lambda pair: (-pair[1], pair[0]))[:STRONGEST] for row in found}
    by_id = {view.id: view for view in themes.themes}
    strays = sorted({folder_of(row["uri"]) for row in found if row["theme"] is None})
    homes = {row["folder"]: row["theme"] for row in driver.execute_query(FOLDER_THEMES, folders=strays, **scope, database_=database).records}
    central = {uri: view.id for view in themes.themes for uri in (member["uri"] for member in view.central)}
    wanted = {uri for pairs in (*inbound.values(), *outbound.values()) for uri, _ in pairs}
    wanted |= {member["uri"] for theme in homes.values() if theme in by_id for member in by_id[theme].central}
    places = {row["uri"]: row for row in driver.execute_query(PLACES, uris=sorted(wanted), **scope, database_=database).records}

    def neighbours(pairs: list[list[Any]]) -> list[Neighbour]:
        return [Neighbour(uri, places[uri]["title"], places[uri]["theme"], links) for uri, links in pairs if uri in places]

    placed = []
    for row in found:
        theme, links_in, links_out = row["theme"], neighbours(inbound.get(row["uri"], [])), neighbours(outbound[row["uri"]])
        home = homes.get(folder_of(row["uri"])) if theme is None else None
        placed.append(
            Placed(
                row["uri"],
                row["title"],
                theme,
                by_id[theme].name if theme in by_id else None,
                theme is not None and central.get(row["uri"]) == theme,
                sorted({link.theme for link in (*links_in, *links_out) if theme is not None and link.theme not in (None, theme)}),
                links_out,
                links_in,
                home,
                neighbours([[member["uri"], member["links"]] for member in by_id[home].central]) if home in by_id else [],
            )
        )
    return placed


def folder_of(uri: str) -> str:
    """The folder a document lies in, as a prefix of its siblings' URIs."""
    return uri.rsplit("/", 1)[0] + "/"
