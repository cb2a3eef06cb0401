"""PostgreSQL's query log: pg_stat_statements, polled from a watermark.

The view keeps one row per (role, database, normalized statement) with how many times it has run
(`calls`), and no times. The watermark is the calls already counted for each row, with the time
the statistics were last reset (`pg_stat_statements_info.stats_reset`); a poll counts each row's
calls past it, as one event of that many runs, and moves the watermark in the transaction that
counts them (QueryGraph.absorb's `then`), so a poll retried after a failure counts nothing twice.
A restart keeps the statistics (they are saved at shutdown) and so the watermark holds; a reset, or
a row evicted and seen again, starts its count from zero.

Only top-level statements of the configured database that read or write data are learned from, never
lakegraph's own (they start with MARKER). Failed statements never reach the view.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime

from neo4j import Driver, ManagedTransaction

from worker.exceptions import EngineUnavailable
from worker.graph.schema import Label
from worker.shared.postgres_client import MARKER, connect, database_name
from worker.warehouse.audit_log import QueryEvent
from worker.warehouse.query_graph import QueryGraph, QueryLogReport

STATEMENTS = (
    MARKER
    + """
SELECT s.userid::text || ':' || s.queryid::text AS key, s.calls, s.query, coalesce(r.rolname, '') AS role,
       (SELECT stats_reset FROM pg_stat_statements_info) AS epoch
FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid LEFT JOIN pg_roles r ON r.oid = s.userid
WHERE s.toplevel AND d.datname = current_database() AND s.queryid IS NOT NULL
"""
)
READ_WATERMARK = f"MATCH (d:{Label.DATABASE} {{id: $database}}) RETURN d.statements_watermark AS at"
WRITE_WATERMARK = f"""
MERGE (d:{Label.DATABASE} {{id: $database}})
ON CREATE SET d.name = $database
SET d.statements_watermark = $at
"""
# Statements that read or write tables; the others (SET, SHOW, BEGIN, VACUUM, ...) teach no join.
DATA_STATEMENT = re.compile(
    r"^\s*(?:--[^\n]*\n\s*|/\*.*?\*/\s*)*"  # leading comments
    r"(?:select|with|insert|update|delete|merge|table|values|create\s+(?:or\s+replace\s+)?(?:(?:temp|temporary|unlogged)\s+)?(?:table|view|materialized\s+view))\b",
    re.IGNORECASE | re.DOTALL,
)


@dataclass
class Watermark:
    """The calls counted for each statement (`role oid:queryid`) since the statistics' last reset."""

    epoch: str = ""
    calls: dict[str, int] = field(default_factory=dict)

    @classmethod
    def parse(cls, stored: str | None) -> Watermark:
        if not stored:
            return cls()
        found = json.loads(stored)
        return cls(found["epoch"], found["calls"])

    def dump(self) -> str:
        return json.dumps({"epoch": self.epoch, "calls": self.calls}, sort_keys=True)


@dataclass
class StatementsReport:
    statements: int = 0  # rows of pg_stat_statements for this database
    ran: int = 0  # of those, the ones with calls past the watermark
    runs: int = 0  # and how many calls that is
    reset: bool = False  # the statistics were reset since the last poll: counted from zero
    absorbed: QueryLogReport | None = None


class StatementsPoller:
    def __init__(self, url: str, driver: Driver, database: str, queries: QueryGraph) -> None:
        self.url = url
        self.warehouse = database_name(url)
        self.driver = driver
        self.database = database
        self.queries = queries

    def poll(self, now: datetime | None = None) -> StatementsReport:
        import psycopg
        from psycopg.rows import dict_row

        with connect(self.url) as con:
            try:
                rows = con.cursor(row_factory=dict_row).execute(STATEMENTS).fetchall()
            except psycopg.errors.UndefinedTable:
                raise EngineUnavailable(
                    f"pg_stat_statements is not installed in {self.warehouse}: add it to shared_preload_libraries and run CREATE EXTENSION pg_stat_statements"
                ) from None
            except psycopg.Error as err:
                raise EngineUnavailable(f"PostgreSQL refused the pg_stat_statements read: {str(err).strip().splitlines()[0][:200]}") from None
        records = self.driver.execute_query(READ_WATERMARK, database=self.warehouse, database_=self.database).records
        before = Watermark.parse(records[0]["at"] if records else None)
        epoch = rows[0]["epoch"].astimezone(UTC).isoformat() if rows and rows[0]["epoch"] else before.epoch
        report = StatementsReport(statements=len(rows), reset=bool(before.epoch) and epoch != before.epoch)
        counted = {} if report.reset else before.calls
        at = (now or datetime.now(UTC)).isoformat()
        after = Watermark(epoch, {row["key"]: row["calls"] for row in rows})
        events = []
        for row in rows:
            if row["query"].startswith(MARKER) or not DATA_STATEMENT.match(row["query"]):
                continue
            already = counted.get(row["key"], 0)
            runs = row["calls"] - already if row["calls"] >= already else row["calls"]  # fewer: the row was reset or evicted
            if runs > 0:
                events.append(QueryEvent(f"postgres:{self.warehouse}:{epoch}:{row['key']}:{row['calls']}", row["query"], row["role"], at, False, (), runs))
        report.ran, report.runs = len(events), sum(event.runs for event in events)

        def move(tx: ManagedTransaction) -> None:
            tx.run(WRITE_WATERMARK, database=self.warehouse, at=after.dump()).consume()

        if events:
            report.absorbed = self.queries.absorb(events, now, then=move)
        elif after != before:
            with self.driver.session(database=self.database) as session:
                session.execute_write(move)
        return report
