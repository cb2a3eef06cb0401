"""Per-source stamps of the last change the graph applied, which every shape reports.

One `Source` node per source (documents, warehouse, glossary, query-log, and the bridge's
warehouse values) holds when the graph
last applied a change from it and the source-side time of the newest event applied (a query
job's time; for the others the moment of applying, as their events carry no better clock).
"""

from __future__ import annotations

from typing import Literal

from neo4j import ManagedTransaction

from worker.graph.schema import Label

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
