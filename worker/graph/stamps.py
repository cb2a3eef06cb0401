"""Per-source stamps of the last change the graph applied, which every shape reports.

One `Source` node per source (documents, warehouse, glossary, query-log, and the bridge's
warehouse values) holds when the graph
last applied a change from it and the source-side time of the newest event applied (a query
job's time; for the others the moment of applying, as their events carry no better clock).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from worker.graph.schema import Label

if TYPE_CHECKING:
    from neo4j import Driver, ManagedTransaction

SourceName = Literal["documents", "warehouse", "glossary", "query-log", "values"]

STAMP = f"""
MERGE (s:{Label.SOURCE} {{id: $source}})
WITH s, datetime() AS now, datetime(coalesce($event_at, toString(datetime()))) AS event
SET s.applied_at = now, s.changes = coalesce(s.changes, 0) + 1,
    s.event_at = CASE WHEN s.event_at IS NULL OR event > s.event_at THEN event ELSE s.event_at END
"""


def stamp(tx: ManagedTransaction, source: SourceName, event_at: str | None = None) -> None:
    """Call inside the transaction that applied the change, so the stamp commits with it."""
    tx.run(STAMP, source=source, event_at=event_at).consume()


# What a cache keyed on sources reads: each source's stamp, in the order asked ("" before its first
# change). It moves with every change a source applies, since each stamps in the same transaction.
VERSION = f"""
UNWIND $sources AS source
OPTIONAL MATCH (s:{Label.SOURCE} {{id: source}})
RETURN collect(source + '@' + coalesce(toString(s.applied_at) + '#' + toString(s.changes), '')) AS stamps
"""


def version(driver: Driver, database: str, *sources: SourceName) -> tuple[str, ...]:
    """The sources' stamps: equal while none of them applied a change, so an answer read only from
    them can be kept until it moves."""
    return tuple(driver.execute_query(VERSION, sources=list(sources), database_=database).records[0]["stamps"])


def version_in(tx: ManagedTransaction, *sources: SourceName) -> tuple[str, ...]:
    """`version`, read inside a transaction (what it sees is what it will write against)."""
    return tuple(tx.run(VERSION, sources=list(sources)).single(strict=True)["stamps"])
