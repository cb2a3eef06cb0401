"""Query events into the graph: Query nodes by fingerprint, USES edges to tables, and JOINS_WITH
edges between columns with their evidence.

Each job id is recorded once (a `QueryRun`), so a replayed or duplicated event adds nothing;
a failed job is recorded but counts for nothing. Columns resolve against the schema the graph
holds (full `project.dataset.table` ids). Each JOINS_WITH edge points from the smaller column id
to the larger and carries executions, distinct queries and users, first and last seen, and a
confidence in [0, 1]:

    confidence = 0.5 * evidence + 0.2 * recency + 0.3 * declared
    evidence   = 1 - exp(-(distinct queries + distinct users) / 4)
    recency    = exp(-(days since last seen) / 90)
    declared   = 1 when a declared key (REFERENCES) joins the same two columns, else 0

A query naming a table the graph does not hold yet (the audit log came before the metadata) is
kept `pending`: its runs are recorded but not credited. Every metadata sync then `relearn`s the
pending queries against the new schema and credits each run exactly once (`QueryRun.credited`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TypeVar

from neo4j import Driver, ManagedTransaction
from neo4j.exceptions import ConstraintError

from worker.graph.locks import lock_query_log
from worker.graph.schema import Label, Rel
from worker.graph.stamps import stamp
from worker.graph.stamps import version as freshness_version
from worker.shared.changes import Announce, Change
from worker.warehouse.audit_log import QueryEvent
from worker.warehouse.joins import Extraction, JoinPair, SchemaIndex, extract, fingerprint, known_dialect
from worker.warehouse.query_log import Execution, absorb

DUPLICATE_RACE_ATTEMPTS = 3
# The tables of one warehouse: the configured one ($engine null: its databases carry no engine), or
# one known from its exports (worker/warehouse/exports.py), so no query resolves to another's table.
SCHEMA_COLUMNS = f"""
MATCH (d:{Label.DATABASE})
WHERE d.engine IS NULL AND $engine IS NULL OR d.engine = $engine
MATCH (d)-[:{Rel.HAS_SCHEMA}]->(:{Label.SCHEMA})-[:{Rel.HAS_TABLE}]->(t:{Label.TABLE})-[:{Rel.HAS_COLUMN}]->(c:{Label.COLUMN})
WHERE NOT coalesce(c.nested, false)
RETURN t.database AS database, t.schema AS schema, t.name AS table, c.name AS column, c.type AS type
"""
SEEN_RUNS = f"UNWIND $ids AS id MATCH (r:{Label.QUERY_RUN} {{id: id}}) RETURN r.id AS id"
RECORD_RUNS = f"""
UNWIND $rows AS r
CREATE (:{Label.QUERY_RUN} {{id: r.id, query: r.query, user: r.user, at: r.at, runs: r.runs, failed: r.failed, credited: true}})
"""
# A query's USES edges to the tables the graph holds, and how many of its tables those are.
USES_TABLES = f"""
CALL (q, r) {{
  UNWIND r.tables AS table
  MATCH (t:{Label.TABLE} {{id: table}})
  MERGE (q)-[:{Rel.USES}]->(t)
  RETURN count(t) AS found
}}
"""
MERGE_QUERIES = f"""
UNWIND $rows AS r
MERGE (q:{Label.QUERY} {{id: r.id}})
ON CREATE SET q.sql = r.sql, q.executions = 0, q.first_seen = r.first, q.error = r.error
SET q.unresolved = r.unresolved, q.executions = q.executions + r.executions,
    q.first_seen = CASE WHEN r.first < q.first_seen THEN r.first ELSE q.first_seen END,
    q.last_seen = CASE WHEN q.last_seen IS NULL OR r.last > q.last_seen THEN r.last ELSE q.last_seen END
WITH q, r
{USES_TABLES}
SET q.pending = coalesce(q.pending, false) OR found < size(r.tables)
RETURN q.id AS id, q.pending AS pending
"""
UNCREDIT_RUNS = f"UNWIND $ids AS id MATCH (r:{Label.QUERY_RUN} {{id: id}}) SET r.credited = false"
ANY_PENDING = f"RETURN EXISTS {{ MATCH (:{Label.QUERY} {{pending: true}}) }} AS found"
PENDING_QUERIES = f"MATCH (q:{Label.QUERY} {{pending: true}}) RETURN q.id AS id, q.sql AS sql ORDER BY id"
# The pending queries every table of which the graph now holds: no longer pending.
SETTLE_QUERIES = f"""
UNWIND $rows AS r
MATCH (q:{Label.QUERY} {{id: r.id}})
{USES_TABLES}
WITH q, r, found WHERE found = size(r.tables)
SET q.pending = false, q.unresolved = r.unresolved
RETURN q.id AS id
"""
UNCREDITED_RUNS = f"""
UNWIND $queries AS query
MATCH (r:{Label.QUERY_RUN} {{query: query}}) WHERE r.credited = false AND NOT r.failed
SET r.credited = true
RETURN r.query AS query, r.user AS user, r.at AS at, coalesce(r.runs, 1) AS runs
"""
MERGE_JOINS = f"""
UNWIND $rows AS r
MATCH (a:{Label.COLUMN} {{id: r.left}})
MATCH (b:{Label.COLUMN} {{id: r.right}})
MERGE (a)-[j:{Rel.JOINS_WITH}]->(b)
ON CREATE SET j.executions = 0, j.queries = [], j.users = [], j.first_seen = r.first, j.last_seen = r.last
SET j.executions = j.executions + r.executions,
    j.queries = j.queries + [q IN r.queries WHERE NOT q IN j.queries],
    j.users = j.users + [u IN r.users WHERE NOT u IN j.users],
    j.first_seen = CASE WHEN r.first < j.first_seen THEN r.first ELSE j.first_seen END,
    j.last_seen = CASE WHEN r.last > j.last_seen THEN r.last ELSE j.last_seen END,
    j.self_join = r.self_join
WITH a, b, j
OPTIONAL MATCH (a)-[k:{Rel.REFERENCES}]-(b)
WITH j, count(k) > 0 AS declared
SET j.declared = declared,
    j.distinct_queries = size(j.queries), j.distinct_users = size(j.users),
    j.confidence = round(
      0.5 * (1 - exp(-(size(j.queries) + size(j.users)) / 4.0))
      + 0.2 * exp(-duration.inDays(datetime(j.last_seen), datetime($now)).days / 90.0)
      + 0.3 * CASE WHEN declared THEN 1 ELSE 0 END, 4)
"""


@dataclass
class QueryLogReport:
    runs: int = 0
    duplicates: int = 0
    failed: int = 0
    unparsable: int = 0
    unresolved: int = 0  # distinct queries naming a column its table lacks
    pairs: int = 0
    pending: int = 0  # distinct queries naming a table the graph does not hold yet: credited later


@dataclass
class RelearnReport:
    pending: int = 0  # queries waiting for their tables before this pass
    settled: int = 0  # of those, the ones whose tables all exist now
    runs: int = 0  # their runs, credited now
    pairs: int = 0


ReportT = TypeVar("ReportT", QueryLogReport, RelearnReport)
Run = tuple[str, str, int]  # counted runs of a query: their user, time and number


class QueryGraph:
    """Absorbs query events; keeps the resolved shapes, and the schema they were resolved against,
    in memory until a metadata write moves the schema's version."""

    def __init__(self, driver: Driver, database: str, dialect: str = "bigquery", announce: Announce | None = None, engine: str | None = None) -> None:
        """`announce` hears of each committed change to the learned joins (worker/shared/changes.py);
        `engine` names a warehouse known from its exports, whose tables alone its queries read."""
        self.driver = driver
        self.database = database
        self.announce = announce
        self.dialect = known_dialect(dialect)
        self.engine = engine
        self.cache: dict[str, Extraction] = {}
        self._schema: tuple[object, SchemaIndex] | None = None

    def schema(self) -> SchemaIndex:
        """The graph's tables and columns as a sqlglot schema, read again only when the warehouse
        source's stamp has moved (one task per message must not re-read the whole catalogue each
        time); shapes resolved against an older schema are forgotten with it."""
        version = freshness_version(self.driver, self.database, "warehouse")
        if self._schema is not None and self._schema[0] == version:
            return self._schema[1]
        mapping: dict = defaultdict(lambda: defaultdict(dict))
        for row in self.driver.execute_query(SCHEMA_COLUMNS, engine=self.engine, database_=self.database).records:
            mapping[row["database"]][row["schema"]].setdefault(row["table"], {})[row["column"]] = row["type"] or "STRING"
        only = next(iter(mapping)) if len(mapping) == 1 else None
        index = SchemaIndex({db: dict(schemas) for db, schemas in mapping.items()}, default_catalog=only)
        self._schema = (version, index)
        self.cache.clear()
        return index

    def absorb(self, events: list[QueryEvent], now: datetime | None = None, then: Callable[[ManagedTransaction], None] | None = None) -> QueryLogReport:
        """Record and count the events whose job ids are new. Two deliveries of one job absorbed at
        once both see it unseen; the unique QueryRun id lets only one commit, and the other, run
        again, finds it seen and counts it as a duplicate. `then` runs in the same transaction (a
        poller's watermark moves with the runs it counted, or not at all)."""
        attempts_left = DUPLICATE_RACE_ATTEMPTS
        while True:
            try:
                with self.driver.session(database=self.database) as session:
                    report = session.execute_write(self._absorb, events, (now or datetime.now(UTC)).isoformat(), then)
                return self._announced(report, report.runs + report.failed)
            except ConstraintError:
                attempts_left -= 1
                if not attempts_left:
                    raise

    def relearn(self, now: datetime | None = None) -> RelearnReport:
        """Credit the runs of pending queries whose tables the graph now holds (after a metadata
        sync): each run once, whichever of this and a concurrent absorb comes first."""
        if not self.driver.execute_query(ANY_PENDING, database_=self.database).records[0]["found"]:
            return RelearnReport()  # the usual case: a table event costs one lookup, no schema read
        schema = self.schema()
        with self.driver.session(database=self.database) as session:
            report = session.execute_write(self._relearn, schema, (now or datetime.now(UTC)).isoformat())
        return self._announced(report, report.runs)

    def _announced(self, report: ReportT, changed: int) -> ReportT:
        """Learned joins belong to the tables they join: any table's context may have moved."""
        if changed and self.announce is not None:
            self.announce(Change("query-log"))
        return report

    def _absorb(self, tx: ManagedTransaction, events: list[QueryEvent], now: str, then: Callable[[ManagedTransaction], None] | None) -> QueryLogReport:
        report = QueryLogReport()
        seen = {row["id"] for row in tx.run(SEEN_RUNS, ids=[event.job_id for event in events])}
        fresh: dict[str, QueryEvent] = {}
        for event in events:
            if event.job_id in seen or event.job_id in fresh:
                report.duplicates += 1
            else:
                fresh[event.job_id] = event
        shape_of = {job: fingerprint(event.sql) for job, event in fresh.items()}  # once per event: it hashes the whole SQL
        tx.run(
            RECORD_RUNS,
            rows=[
                {"id": job, "query": shape_of[job], "user": event.user, "at": event.at, "runs": event.runs, "failed": event.failed}
                for job, event in fresh.items()
            ],
        ).consume()
        if fresh:
            stamp(tx, "query-log", max(event.at for event in fresh.values()))
        if then is not None:
            then(tx)
        counted = [event for event in fresh.values() if not event.failed]
        report.runs, report.failed = sum(event.runs for event in counted), len(fresh) - len(counted)
        if not counted:
            return report
        result = absorb(
            [Execution(event.job_id, event.sql, event.user) for event in counted],
            self.dialect,
            self.schema(),
            workers=1,
            cache=self.cache,
        )
        report.unparsable = len(result.unparsable)
        report.unresolved = len(result.unresolved)
        runs: dict[str, list[Run]] = defaultdict(list)
        for event in counted:
            runs[shape_of[event.job_id]].append((event.user, event.at, event.runs))
        merged = tx.run(
            MERGE_QUERIES,
            rows=[
                {
                    "id": shape,
                    "sql": result.samples[shape][:20_000],
                    "executions": sum(count for _, _, count in runs[shape]),
                    "first": min(at for _, at, _ in runs[shape]),
                    "last": max(at for _, at, _ in runs[shape]),
                    "error": extraction.error,
                    "tables": sorted(extraction.tables),
                    "unresolved": sorted(extraction.unresolved),
                }
                for shape, extraction in result.shapes.items()
            ],
        )
        pending = {row["id"] for row in merged if row["pending"]}
        report.pending = len(pending)
        if pending:
            tx.run(UNCREDIT_RUNS, ids=[event.job_id for event in counted if shape_of[event.job_id] in pending]).consume()
        credited = {shape: extraction for shape, extraction in result.shapes.items() if shape not in pending}
        report.pairs = self._credit(tx, credited, runs, now)
        return report

    def _relearn(self, tx: ManagedTransaction, schema: SchemaIndex, now: str) -> RelearnReport:
        report = RelearnReport()
        lock_query_log(tx)
        waiting = {row["id"]: row["sql"] for row in tx.run(PENDING_QUERIES)}
        report.pending = len(waiting)
        if not waiting:
            return report
        for shape, sql in waiting.items():
            if shape not in self.cache:
                self.cache[shape] = extract(sql, self.dialect, schema)
        rows = [
            {"id": shape, "tables": sorted(self.cache[shape].tables), "unresolved": sorted(self.cache[shape].unresolved)}
            for shape in waiting
            if not self.cache[shape].error
        ]
        settled = [row["id"] for row in tx.run(SETTLE_QUERIES, rows=rows)]
        report.settled = len(settled)
        runs: dict[str, list[Run]] = defaultdict(list)
        for row in tx.run(UNCREDITED_RUNS, queries=settled):
            runs[row["query"]].append((row["user"], row["at"], row["runs"]))
        report.runs = sum(count for found in runs.values() for _, _, count in found)
        report.pairs = self._credit(tx, {shape: self.cache[shape] for shape in runs}, runs, now)
        if report.runs:
            stamp(tx, "query-log", max(at for found in runs.values() for _, at, _ in found))
        return report

    @staticmethod
    def _credit(tx: ManagedTransaction, shapes: dict[str, Extraction], runs: dict[str, list[Run]], now: str) -> int:
        """Add these runs of these shapes to the JOINS_WITH edges of the pairs the shapes join."""
        join_rows = [
            {
                "left": str(pair.left),
                "right": str(pair.right),
                "executions": sum(count for _, _, count in pair_runs),
                "queries": sorted(queries),
                "users": sorted({user for user, _, _ in pair_runs if user}),
                "first": min(at for _, at, _ in pair_runs),
                "last": max(at for _, at, _ in pair_runs),
                "self_join": pair.self_join,
            }
            for pair, queries, pair_runs in _by_pair(shapes, runs)
        ]
        tx.run(MERGE_JOINS, rows=join_rows, now=now).consume()
        return len(join_rows)


def _by_pair(shapes: dict[str, Extraction], runs: dict[str, list[Run]]) -> Iterable[tuple[JoinPair, set[str], list[Run]]]:
    """Each pair the shapes join, with the shapes that join it and all their runs."""
    queries: dict[JoinPair, set[str]] = defaultdict(set)
    for shape, extraction in shapes.items():
        for pair in extraction.pairs:
            queries[pair].add(shape)
    for pair, found in sorted(queries.items()):
        yield pair, found, [run for shape in sorted(found) for run in runs[shape]]
