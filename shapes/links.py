"""Cross-references as data: resolved links, unresolved ones with the reason, and those that landed
by a fallback (a moved heading path, punctuation ignored, an anchor gone) with what was done, so an
author can fix them at the source (`lakegraph links`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from pydantic import Field

from shapes.access.scope import visible
from shapes.access.versioned import Versioned
from shapes.freshness import versions
from shapes.spec import Params, ShapeSpec
from worker.graph.schema import Label, Rel

if TYPE_CHECKING:
    from neo4j import Driver

    from worker.shared.grants import Grant

# The link sources at or below $under, found through each label's uri index (a prefix seek), so a
# subtree's listing costs its own links, not a scan of every link of the estate.
SOURCES_UNDER = f"""
CALL () {{
  MATCH (s:{Label.DOCUMENT}) WHERE s.uri STARTS WITH $under AND {visible("s.uri")} RETURN s
  UNION ALL
  MATCH (s:{Label.SECTION}) WHERE s.uri STARTS WITH $under AND {visible("s.uri")} RETURN s
}}
"""
RESOLVED = f"""
{SOURCES_UNDER}
MATCH (s)-[l:{Rel.LINKS_TO}]->(t) WHERE {visible("t.uri")} AND (NOT $fallback OR l.anchor_found = false OR l.anchor_note IS NOT NULL)
RETURN s.uri AS source, t.uri AS target, l.href AS href, l.anchor_found AS anchor_found, l.anchor_note AS note
ORDER BY source, l.ordinal
"""
UNRESOLVED = f"""
MATCH (u:{Label.UNRESOLVED_LINK})
WHERE u.source STARTS WITH $under AND {visible("u.source")}
RETURN u.source AS source, u.href AS href, u.reason AS reason
ORDER BY source, u.ordinal
"""
KEPT_LISTINGS = 8
COUNTS = f"""
CALL () {{ {SOURCES_UNDER} RETURN sum(COUNT {{ (s)-[:{Rel.LINKS_TO}]->(t) WHERE {visible("t.uri")} }}) AS resolved }}
CALL () {{ MATCH (u:{Label.UNRESOLVED_LINK}) WHERE u.source STARTS WITH $under AND {visible("u.source")} RETURN count(u) AS unresolved }}
RETURN resolved, unresolved
"""


@dataclass(frozen=True)
class LinkListing:
    resolved: int
    unresolved: int
    rows: list[dict]
    broken: bool
    fallback: bool = False  # the resolved rows are only those that landed by a fallback


def list_links(driver: Driver, database: str, broken: bool, under: str, grant: Grant, fallback: bool = False) -> LinkListing:
    """The links written at or below `under` by sources the grant sees; a resolved link counts
    and shows only when its target is seen too (a link into a hidden library is not told)."""
    counts = driver.execute_query(COUNTS, under=under, **grant.cypher(), database_=database).records[0]
    # broken and fallback together: everything an author should fix, the unresolved links first
    queries = ([UNRESOLVED] if broken else []) + ([RESOLVED] if fallback or not broken else [])
    rows = [row for query in queries for row in driver.execute_query(query, under=under, fallback=fallback, **grant.cypher(), database_=database).records]
    # a note (how a fallback landed, why an anchor ended at its document) only where there is one
    return LinkListing(
        counts["resolved"], counts["unresolved"], [{key: value for key, value in row.items() if key != "note" or value} for row in rows], broken, fallback
    )


class LinksShape:
    """Listings read again only when the documents changed: every link of a large library is
    tens of thousands of rows, and agents page through them or ask again with the same scope."""

    def __init__(self, driver: Driver, database: str) -> None:
        self.driver = driver
        self.database = database
        self.listings: Versioned[LinkListing] = Versioned(KEPT_LISTINGS)

    def __call__(self, broken: bool, under: str, grant: Grant, fallback: bool = False) -> LinkListing:
        """Links change only when the documents source applies a change: its stamp keys the
        listings, one per scope and grant."""
        return self.listings.get(
            versions(self.driver, self.database, "documents"),
            (broken, fallback, under, grant.key),
            lambda: list_links(self.driver, self.database, broken, under, grant, fallback),
        )


def render(listing: LinkListing) -> str:
    lines = [f"{listing.resolved} resolved links, {listing.unresolved} unresolved"]
    if listing.fallback:
        lines[0] += f"; {sum('reason' not in row for row in listing.rows)} landed by a fallback"
    for row in listing.rows:
        if "reason" in row:
            lines.append(f"{row['source']}  {row['href']}  ({row['reason']})")
        elif not row["anchor_found"]:
            lines.append(f"{row['source']} → {row['target']}  ({row.get('note') or 'anchor not found'}: ends at the document)")
        else:
            flag = f"  ({row['note']})" if row.get("note") else ""
            lines.append(f"{row['source']} → {row['target']}{flag}")
    return "\n".join(lines)


class LinksParams(Params):
    broken: bool = Field(False, description="List the unresolved links with the reason instead of the resolved ones")
    fallback: bool = Field(
        False,
        description="List only the resolved links that landed by a fallback (a moved heading path, punctuation ignored, an anchor gone); "
        "with broken, both: every link to fix at the source",
    )
    under: str | None = Field(None, description="Only links written at or below this URI")


SPEC = ShapeSpec(
    name="links",
    purpose="Cross-references as data: resolved links, with broken the unresolved ones and why, with fallback those that landed by a fallback.",
    guide="Counts of both kinds come first; a resolved link whose anchor is gone ends at the document; "
    "one that landed by a fallback says how (`path moved: ...`).",
    params=LinksParams,
    output=LinkListing,
    refers={"source": "outline", "target": "outline"},
    run=lambda shapes, p, grant: shapes.links(p.broken, p.under or "", grant, p.fallback),
    render=render,
    rows=("rows",),
    needs="documents",
    scoped=True,
)
