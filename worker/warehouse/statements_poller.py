"""A server's statement statistics as its query log: PostgreSQL's pg_stat_statements, MySQL's
performance_schema digests, polled from a watermark.

Both keep one row per normalized statement with how many times it has run, and no times. The
watermark is the calls already counted for each row (its key says since when its count runs), with
the time the statistics were last reset where the engine says it; a poll counts each row's calls
past it, as one event of that many runs, and moves the watermark in the transaction that counts
them (QueryGraph.absorb's `then`), so a poll retried after a failure counts nothing twice. A reset,
or a row evicted and seen again, starts its count from zero. Each engine's reader
(worker/warehouse/postgres.py, mysql.py) says what its rows are; only data statements are learned
from, and failed statements never reach either view.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from neo4j import Driver, ManagedTransaction

from worker.graph.schema import Label
from worker.warehouse.audit_log import QueryEvent
from worker.warehouse.query_graph import QueryGraph, QueryLogReport

READ_WATERMARK = f"MATCH (d:{Label.DATABASE} {{id: $database}}) RETURN d.statements_watermark AS at"
WRITE_WATERMARK = f"""
MERGE (d:{Label.DATABASE} {{id: $database}})
ON CREATE SET d.name = $database
SET d.statements_watermark = $at
"""
# What comes before a statement's first word: comments, and the USE of the session's database a
# reader puts there.
LEAD = r"^\s*(?:--[^\n]*\n\s*|/\*.*?\*/\s*)*(?:use\s+[^;]+;\s*)?"
# Statements that read or write tables; the others (SET, SHOW, BEGIN, VACUUM, ...) teach no join.
DATA_STATEMENT = re.compile(
    LEAD
    + r"(?:select|with|insert|update|delete|merge|replace|table|values|create\s+(?:or\s+replace\s+)?(?:(?:temp|temporary|unlogged)\s+)?(?:table|view|materialized\s+view))\b",
    re.IGNORECASE | re.DOTALL,
)
# Statements that change a table's definition: the tables they name are read again at once.
SCHEMA_CHANGE = re.compile(LEAD + r"(?:create|alter|drop|comment\s+on)\b", re.IGNORECASE | re.DOTALL)


def changed_tables(sql: str, dialect: str, default_schema: str | None) -> set[tuple[str, str]]:
    """The (schema, table) of each table a statement creates, alters, drops or comments on (and
    those it names beside them: a key's target, an index's table); an unqualified table is in the
    schema a USE before it names, else in `default_schema` (None: left to the reconcile)."""
    import sqlglot
    from sqlglot import exp

    from worker.shared.sql_failures import PARSER_FAILURES

    try:
        statements = sqlglot.parse(sql, read=dialect)
    except PARSER_FAILURES:
        return set()
    found: set[tuple[str, str]] = set()
    for statement in statements:
        if isinstance(statement, exp.Use):
            default_schema = statement.this.name if statement.this else default_schema
        elif isinstance(statement, exp.Comment) and isinstance(statement.this, exp.Column):
            found.add((statement.this.db or default_schema or "", statement.this.table))
        elif isinstance(statement, exp.Create | exp.Alter | exp.Drop | exp.Comment):
            found |= {(table.db or default_schema or "", table.name) for table in statement.find_all(exp.Table)}
    return {(schema, table) for schema, table in found if schema and table}


@dataclass(frozen=True)
class Statement:
    """One row of a server's statement statistics."""

    key: str  # the row, and since when its count runs where the engine says (MySQL's FIRST_SEEN)
    calls: int
    query: str  # as it is parsed: after a USE of the session's database where the engine keeps it
    user: str = ""


# A server's statistics now: the time they were last reset ("" where the keys say it) and the rows.
Reader = Callable[[], tuple[str, list[Statement]]]


@dataclass
class Watermark:
    """The calls counted for each statement since the statistics' last reset."""

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
    statements: int = 0  # rows of the statistics for this database
    ran: int = 0  # of those, the data statements with calls past the watermark
    runs: int = 0  # and how many calls that is
    reset: bool = False  # the statistics were reset since the last poll: counted from zero
    absorbed: QueryLogReport | None = None
    tables_changed: list[str] = field(default_factory=list)  # schema.table read again after a DDL statement ran


class StatementsPoller:
    def __init__(
        self,
        engine: str,
        warehouse: str,
        read: Reader,
        driver: Driver,
        database: str,
        queries: QueryGraph,
        default_schema: str | None = None,
        on_table: Callable[[str, str], object] | None = None,
    ) -> None:
        """`warehouse`: the database the rows are of (its Database node keeps the watermark);
        `on_table(schema, table)`: a table a DDL statement changed is read again (the metadata sync),
        `default_schema` being where an unqualified one is."""
        self.engine = engine
        self.warehouse = warehouse
        self.read = read
        self.driver = driver
        self.database = database
        self.queries = queries
        self.default_schema = default_schema
        self.on_table = on_table

    def poll(self, now: datetime | None = None) -> StatementsReport:
        epoch, rows = self.read()
        records = self.driver.execute_query(READ_WATERMARK, database=self.warehouse, database_=self.database).records
        before = Watermark.parse(records[0]["at"] if records else None)
        report = StatementsReport(statements=len(rows), reset=bool(before.epoch) and epoch != before.epoch)
        counted = {} if report.reset else before.calls
        at = (now or datetime.now(UTC)).isoformat()
        after = Watermark(epoch, {row.key: row.calls for row in rows})
        events, changed = [], set()
        for row in rows:
            already = counted.get(row.key, 0)
            runs = row.calls - already if row.calls >= already else row.calls  # fewer: the row was reset or evicted
            if runs <= 0:
                continue
            if DATA_STATEMENT.match(row.query):
                events.append(QueryEvent(f"{self.engine}:{self.warehouse}:{epoch}:{row.key}:{row.calls}", row.query, row.user, at, False, (), runs))
            if self.on_table is not None and SCHEMA_CHANGE.match(row.query):
                changed |= changed_tables(row.query, self.engine, self.default_schema)
        report.ran, report.runs = len(events), sum(event.runs for event in events)

        def move(tx: ManagedTransaction) -> None:
            tx.run(WRITE_WATERMARK, database=self.warehouse, at=after.dump()).consume()

        if events:
            report.absorbed = self.queries.absorb(events, now, then=move)
        elif after != before:
            with self.driver.session(database=self.database) as session:
                session.execute_write(move)
        for schema, table in sorted(changed):  # after the watermark moved: a failed read is the reconcile's to repair
            if self.on_table is not None:
                self.on_table(schema, table)
            report.tables_changed.append(f"{schema}.{table}")
        return report
