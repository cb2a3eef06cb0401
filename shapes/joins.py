"""Declared keys and learned joins side by side, with evidence (`lakegraph joins`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from pydantic import Field

from shapes.access.scope import visible_table
from shapes.access.versioned import Versioned
from shapes.freshness import versions
from shapes.spec import Params, ShapeSpec
from worker.graph.schema import Label, Rel
from worker.shared.grants import EVERYTHING, Grant

if TYPE_CHECKING:
    from neo4j import Driver

DECLARED = f"""
MATCH (a:{Label.COLUMN})-[k:{Rel.REFERENCES}]->(b:{Label.COLUMN})
WHERE ($table = '' OR a.table ENDS WITH $table OR b.table ENDS WITH $table) AND {visible_table("a.table")} AND {visible_table("b.table")}
RETURN a.id AS left, b.id AS right, k.constraint AS constraint
ORDER BY left, right
"""
LEARNED = f"""
MATCH (a:{Label.COLUMN})-[j:{Rel.JOINS_WITH}]->(b:{Label.COLUMN})
WHERE ($table = '' OR a.table ENDS WITH $table OR b.table ENDS WITH $table) AND j.confidence >= $min_confidence
  AND {visible_table("a.table")} AND {visible_table("b.table")}
RETURN a.id AS left, b.id AS right, j.executions AS executions, j.distinct_queries AS queries,
       j.distinct_users AS users, j.first_seen AS first_seen, j.last_seen AS last_seen,
       j.confidence AS confidence, j.declared AS declared, coalesce(j.self_join, false) AS self_join
ORDER BY confidence DESC, left, right
"""


UNRESOLVED = f"""
MATCH (q:{Label.QUERY}) WHERE size(coalesce(q.unresolved, [])) > 0
  AND ($table = '' OR any(column IN q.unresolved WHERE column STARTS WITH $table + '.' OR column CONTAINS '.' + $table + '.'))
WITH q ORDER BY q.executions DESC, q.id
WITH count(q) AS total, collect({{query: q.id, columns: q.unresolved, sql: left(q.sql, 200)}})[..$examples] AS examples
CALL () {{ MATCH (q:{Label.QUERY} {{pending: true}}) WHERE $table = '' RETURN count(q) AS pending }}
RETURN total, examples, pending
"""
UNRESOLVED_EXAMPLES = 5
KEPT_LISTINGS = 8


@dataclass(frozen=True)
class JoinListing:
    declared: list[dict]
    learned: list[dict]
    unresolved_queries: int  # queries naming columns their tables lack: never counted as joins
    unresolved_examples: list[dict]
    pending_queries: int = 0  # unfiltered listings: queries naming tables the graph lacks, counted once they are loaded


class JoinsShape:
    """Listings read again only when the warehouse or the query log changed (the join graph's
    version, as for join paths): the learned joins of a large query log are thousands of pairs."""

    def __init__(self, driver: Driver, database: str) -> None:
        self.driver = driver
        self.database = database
        self.listings: Versioned[JoinListing] = Versioned(KEPT_LISTINGS)

    def __call__(self, table: str, min_confidence: float, grant: Grant = EVERYTHING) -> JoinListing:
        return self.listings.get(
            versions(self.driver, self.database, "warehouse", "query-log"),
            (table, min_confidence, grant.key),
            lambda: list_joins(self.driver, self.database, table, min_confidence, grant),
        )


def list_joins(driver: Driver, database: str, table: str, min_confidence: float, grant: Grant = EVERYTHING) -> JoinListing:
    """The joins whose both ends the grant sees. Within a restricted grant the query log's
    diagnostics (unresolved and pending queries) are withheld: their SQL and counts speak of
    every table."""
    scope = grant.cypher()
    declared = driver.execute_query(DECLARED, table=table, **scope, database_=database).records
    learned = driver.execute_query(LEARNED, table=table, min_confidence=min_confidence, **scope, database_=database).records
    if not grant.everything:
        return JoinListing([dict(row) for row in declared], [dict(row) for row in learned], 0, [], 0)
    unresolved = driver.execute_query(UNRESOLVED, table=table, examples=UNRESOLVED_EXAMPLES, database_=database).records[0]
    return JoinListing(
        [dict(row) for row in declared],
        [dict(row) for row in learned],
        unresolved["total"],
        list(unresolved["examples"]),
        unresolved["pending"],
    )


def render(listing: JoinListing) -> str:
    lines = [f"declared keys ({len(listing.declared)})"]
    lines += [f"  {row['left']} → {row['right']}  ({row['constraint']})" for row in listing.declared]
    lines.append(f"learned from query logs ({len(listing.learned)})")
    for row in listing.learned:
        flags = [word for word, on in (("declared", row["declared"]), ("self-join", row["self_join"])) if on]
        lines.append(
            f"  {row['left']} = {row['right']}  confidence {row['confidence']:.2f}: {row['executions']} executions, "
            f"{row['queries']} queries, {row['users']} users, last {row['last_seen']}" + (f" [{', '.join(flags)}]" if flags else "")
        )
    if listing.unresolved_queries:
        lines.append(f"queries naming columns their tables lack ({listing.unresolved_queries}; not counted as joins)")
        lines += [f"  {', '.join(row['columns'])}  in {row['sql']}" for row in listing.unresolved_examples]
    if listing.pending_queries:
        lines.append(f"queries naming tables the graph does not hold ({listing.pending_queries}; counted once their metadata is loaded)")
    return "\n".join(lines)


class JoinsParams(Params):
    table: str | None = Field(None, description="Only joins touching this table (its id or its tail: dataset.table)")
    min_confidence: float = Field(0.0, ge=0.0, le=1.0, description="Hide learned joins below this confidence")


SPEC = ShapeSpec(
    name="joins",
    purpose="Declared keys and joins learned from query logs side by side, with evidence.",
    guide="Each learned join has its executions, distinct queries and users, and a confidence; queries naming columns their tables lack are listed apart.",
    params=JoinsParams,
    output=JoinListing,
    refers={"left": "column", "right": "column"},
    run=lambda shapes, p, grant: shapes.joins(p.table or "", p.min_confidence, grant),
    render=render,
    rows=("declared", "learned", "unresolved_examples"),
    needs="tables",
    scoped=True,
)
