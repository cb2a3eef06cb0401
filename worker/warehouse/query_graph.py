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
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from neo4j import Driver, ManagedTransaction
from neo4j.exceptions import ConstraintError

from worker.graph.freshness import stamp
from worker.graph.schema import Label, Rel
from worker.warehouse.audit_log import QueryEvent
from worker.warehouse.joins import Extraction, SchemaIndex, fingerprint
from worker.warehouse.query_log import Execution, absorb

SCHEMA_TTL = 30.0
DUPLICATE_RACE_ATTEMPTS = 3
SCHEMA_COLUMNS = f"""
MATCH (t:{Label.TABLE})-[:{Rel.HAS_COLUMN}]->(c:{Label.COLUMN})
WHERE NOT coalesce(c.nested, false)
RETURN t.database AS database, t.schema AS schema, t.name AS table, c.name AS column, c.type AS type
"""
SEEN_RUNS = f"UNWIND $ids AS id MATCH (r:{Label.QUERY_RUN} {{id: id}}) RETURN r.id AS id"
RECORD_RUNS = f"""
UNWIND $rows AS r
CREATE (:{Label.QUERY_RUN} {{id: r.id, query: r.query, user: r.user, at: r.at, failed: r.failed}})
"""
MERGE_QUERIES = f"""
UNWIND $rows AS r
MERGE (q:{Label.QUERY} {{id: r.id}})
ON CREATE SET q.sql = r.sql, q.executions = 0, q.first_seen = r.first, q.error = r.error
SET q.unresolved = r.unresolved, q.executions = q.executions + r.executions,
    q.first_seen = CASE WHEN r.first < q.first_seen THEN r.first ELSE q.first_seen END,
    q.last_seen = CASE WHEN q.last_seen IS NULL OR r.last > q.last_seen THEN r.last ELSE q.last_seen END
WITH q, r
UNWIND r.tables AS table
MATCH (t:{Label.TABLE} {{id: table}})
MERGE (q)-[:{Rel.USES}]->(t)
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


class QueryGraph:
    """Absorbs query events; keeps the resolved shapes, and the schema for a short while, in memory."""

    def __init__(self, driver: Driver, database: str, dialect: str = "bigquery", clock: Callable[[], float] = time.monotonic) -> None:
        self.driver = driver
        self.database = database
        self.dialect = dialect
        self.cache: dict[str, Extraction] = {}
        self.clock = clock
        self._schema: tuple[float, SchemaIndex] | None = None

    def schema(self) -> SchemaIndex:
        """The graph's tables and columns as a sqlglot schema, re-read at most every SCHEMA_TTL seconds
        (one task per message must not re-read the whole catalogue each time)."""
        if self._schema is not None and self.clock() - self._schema[0] < SCHEMA_TTL:
            return self._schema[1]
        mapping: dict = defaultdict(lambda: defaultdict(dict))
        for row in self.driver.execute_query(SCHEMA_COLUMNS, database_=self.database).records:
            mapping[row["database"]][row["schema"]].setdefault(row["table"], {})[row["column"]] = row["type"] or "STRING"
        only = next(iter(mapping)) if len(mapping) == 1 else None
        index = SchemaIndex({db: dict(schemas) for db, schemas in mapping.items()}, default_catalog=only)
        self._schema = (self.clock(), index)
        return index

    def absorb(self, events: list[QueryEvent], now: datetime | None = None) -> QueryLogReport:
        """Record and count the events whose job ids are new. Two deliveries of one job absorbed at
        once both see it unseen; the unique QueryRun id lets only one commit, and the other, run
        again, finds it seen and counts it as a duplicate."""
        attempts_left = DUPLICATE_RACE_ATTEMPTS
        while True:
            try:
                with self.driver.session(database=self.database) as session:
                    return session.execute_write(self._absorb, events, (now or datetime.now(UTC)).isoformat())
            except ConstraintError:
                attempts_left -= 1
                if not attempts_left:
                    raise

    def _absorb(self, tx: ManagedTransaction, events: list[QueryEvent], now: str) -> QueryLogReport:
        report = QueryLogReport()
        seen = {row["id"] for row in tx.run(SEEN_RUNS, ids=[event.job_id for event in events])}
        fresh: dict[str, QueryEvent] = {}
        for event in events:
            if event.job_id in seen or event.job_id in fresh:
                report.duplicates += 1
            else:
                fresh[event.job_id] = event
        tx.run(
            RECORD_RUNS,
            rows=[
                {"id": event.job_id, "query": fingerprint(event.sql), "user": event.user, "at": event.at, "failed": event.failed} for event in fresh.values()
            ],
        ).consume()
        if fresh:
            stamp(tx, "query-log", max(event.at for event in fresh.values()))
        counted = [event for event in fresh.values() if not event.failed]
        report.runs, report.failed = len(counted), len(fresh) - len(counted)
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
        times: dict[str, list[str]] = defaultdict(list)
        samples: dict[str, str] = {}
        for event in counted:
            shape = fingerprint(event.sql)
            times[shape].append(event.at)
            samples.setdefault(shape, event.sql)
        tx.run(
            MERGE_QUERIES,
            rows=[
                {
                    "id": shape,
                    "sql": samples[shape][:20_000],
                    "executions": len(times[shape]),
                    "first": min(times[shape]),
                    "last": max(times[shape]),
                    "error": extraction.error,
                    "tables": sorted(extraction.tables),
                    "unresolved": sorted(extraction.unresolved),
                }
                for shape, extraction in result.shapes.items()
            ],
        ).consume()
        join_rows = []
        for pair, stats in result.pairs.items():
            stamps = [stamp for shape in stats.queries for stamp in times[shape]]
            join_rows.append(
                {
                    "left": str(pair.left),
                    "right": str(pair.right),
                    "executions": stats.executions,
                    "queries": sorted(stats.queries),
                    "users": sorted(stats.users),
                    "first": min(stamps),
                    "last": max(stamps),
                    "self_join": pair.self_join,
                }
            )
        tx.run(MERGE_JOINS, rows=join_rows, now=now).consume()
        report.pairs = len(join_rows)
        return report
