"""Declared keys and learned joins side by side, with evidence (`lakegraph joins`)."""

from __future__ import annotations

from dataclasses import dataclass

from neo4j import Driver

from worker.graph.schema import Label, Rel

DECLARED = f"""
MATCH (a:{Label.COLUMN})-[k:{Rel.REFERENCES}]->(b:{Label.COLUMN})
WHERE $table = '' OR a.table ENDS WITH $table OR b.table ENDS WITH $table
RETURN a.id AS left, b.id AS right, k.constraint AS constraint
ORDER BY left, right
"""
LEARNED = f"""
MATCH (a:{Label.COLUMN})-[j:{Rel.JOINS_WITH}]->(b:{Label.COLUMN})
WHERE ($table = '' OR a.table ENDS WITH $table OR b.table ENDS WITH $table) AND j.confidence >= $min_confidence
RETURN a.id AS left, b.id AS right, j.executions AS executions, j.distinct_queries AS queries,
       j.distinct_users AS users, j.first_seen AS first_seen, j.last_seen AS last_seen,
       j.confidence AS confidence, j.declared AS declared, coalesce(j.self_join, false) AS self_join
ORDER BY confidence DESC, left, right
"""


@dataclass(frozen=True)
class JoinListing:
    declared: list[dict]
    learned: list[dict]


def list_joins(driver: Driver, database: str, table: str = "", min_confidence: float = 0.0) -> JoinListing:
    declared = driver.execute_query(DECLARED, table=table, database_=database).records
    learned = driver.execute_query(LEARNED, table=table, min_confidence=min_confidence, database_=database).records
    return JoinListing([dict(row) for row in declared], [dict(row) for row in learned])


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
    return "\n".join(lines)
