"""The shapes as one service: what the CLI, the MCP server and the HTTP API all call.

Each call returns an `Answer` — the shape's typed result, how fresh the graph is, and both
renderings (text for agents and people, JSON-ready data). `available()` says which shapes make
sense right now (their indexes exist, their data or engine is there), which is how the MCP server
decides what tools to offer. Calls are counted and timed for /metrics.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import asdict, dataclass
from functools import cached_property
from time import perf_counter
from typing import Any, get_args

from neo4j import Driver
from redis.exceptions import RedisError

from shapes import coverage as coverage_shape
from shapes import cypher as cypher_shape
from shapes import freshness as freshness_shape
from shapes import graph_schema, join_path, outline, search, tables
from shapes import sql as sql_shape
from shapes import themes as themes_shape
from shapes.errors import ShapeError
from shapes.metrics import (
    CALLS,
    LATENCY,
    PROBLEMS,
    PROBLEMS_HELD,
    SOURCE_AGE,
    SOURCE_QUEUED,
    TOOLS,
)
from shapes.reader import ReadDriver
from worker import problems
from worker.embedding.factory import embedder
from worker.errors import LakegraphError
from worker.graph.schema import DOCUMENT_TEXT_INDEX, TABLE_TEXT_INDEX, Label
from worker.runtime import redis_server
from worker.settings import Settings

ONLINE_INDEXES = "SHOW INDEXES YIELD name, state WHERE state = 'ONLINE' RETURN collect(name) AS names"
HAS_DATA = f"""
RETURN EXISTS {{ MATCH (:{Label.LIBRARY}) }} AS documents, EXISTS {{ MATCH (:{Label.TABLE}) }} AS tables,
       EXISTS {{ MATCH (:{Label.THEME_RUN}) }} AS themes
"""
log = logging.getLogger(__name__)
PROBLEM_COUNTS = f"MATCH (p:{Label.PROBLEM}) RETURN p.kind AS kind, count(*) AS n"
SHAPES = ("outline", "search", "coverage", "themes", "theme_changes", "tables", "join_path", "run_sql", "schema", "cypher", "freshness")


CHARS_PER_TOKEN = 4  # how answer budgets in tokens are measured, without a tokenizer


@dataclass(frozen=True)
class Answer:
    shape: str
    result: Any
    freshness: freshness_shape.Freshness
    render: Callable[[Any], str]

    def text(self) -> str:
        return f"{self.render(self.result)}\n\n{freshness_shape.render(self.freshness)}"

    def data(self) -> dict:
        return {**asdict(self.result), "freshness": asdict(self.freshness)}


class Shapes:
    def __init__(self, settings: Settings, driver: Driver, database: str) -> None:
        self.settings = settings
        self.driver: Driver = ReadDriver(driver)  # type: ignore[assignment] — the part of Driver shapes use
        self.database = database
        self.probe = freshness_shape.FreshnessProbe(self.driver, database, settings)
        self.join_paths = join_path.JoinPathShape(self.driver, database)
        self.sql_runner = sql_shape.SqlRunner(settings)

    @cached_property
    def table_context(self) -> tables.TableContextShape:
        """Built on first use: loading an embedding model is not free, and most calls need none."""
        return tables.TableContextShape(self.driver, self.database, embedder(self.settings))

    def _answer(self, shape: str, render: Callable[[Any], str], work: Callable[[], Any]) -> Answer:
        began = perf_counter()
        try:
            result = work()
        except ShapeError:
            CALLS.labels(shape, "refused").inc()
            raise
        except Exception:
            CALLS.labels(shape, "error").inc()
            raise
        finally:
            LATENCY.labels(shape).observe(perf_counter() - began)
        CALLS.labels(shape, "ok").inc()
        return Answer(shape, result, self.probe(), render)

    def outline(self, uri: str | None = None, depth: int = 1) -> Answer:
        return self._answer("outline", outline.render, lambda: outline.outline(self.driver, self.database, uri or None, depth))

    def search(self, query: str, under: str | None = None, k: int = 10, expand: list[str] | None = None) -> Answer:
        return self._answer("search", search.render, lambda: search.search(self.driver, self.database, query, under or None, k, expand or []))

    def coverage(self, terms: list[str], under: str | None = None) -> Answer:
        return self._answer("coverage", coverage_shape.render, lambda: coverage_shape.coverage(self.driver, self.database, terms, under or None))

    def tables(self, question: str, k: int = 5) -> Answer:
        return self._answer("tables", tables.render, lambda: self.table_context(question, k))

    def join_path(self, table_a: str, table_b: str, max_hops: int = 3) -> Answer:
        return self._answer("join_path", join_path.render, lambda: self.join_paths(table_a, table_b, max_hops))

    def run_sql(self, sql: str) -> Answer:
        return self._answer("run_sql", sql_shape.render, lambda: self.sql_runner(sql))

    def schema(self) -> Answer:
        return self._answer("schema", graph_schema.render, lambda: graph_schema.graph_schema(self.driver, self.database))

    def cypher(self, query: str, parameters: dict | None = None) -> Answer:
        budget = self.settings.shapes
        return self._answer("cypher", cypher_shape.render, lambda: cypher_shape.run_cypher(
            self.driver, self.database, query, parameters, budget.cypher_max_rows, budget.cypher_timeout,
        ))

    def themes(self, level: int = 0, theme: str | None = None, cursor: str | None = None, limit: int = 200) -> Answer:
        return self._answer(
            "themes", themes_shape.render,
            lambda: themes_shape.themes(
                self.driver, self.database, level, theme, cursor, limit, budget_chars=self.settings.shapes.answer_tokens * CHARS_PER_TOKEN,
            ),
        )

    def theme_changes(self, since: str) -> Answer:
        return self._answer("theme_changes", themes_shape.render_changes, lambda: themes_shape.theme_changes(self.driver, self.database, since))

    def freshness(self) -> Answer:
        return self._answer("freshness", freshness_shape.render, self.probe)

    def available(self) -> set[str]:
        """The shapes that can answer right now: their index is online and their data is there."""
        indexes = set(self.driver.execute_query(ONLINE_INDEXES, database_=self.database).records[0]["names"])
        present = self.driver.execute_query(HAS_DATA, database_=self.database).records[0]
        found = {"schema", "cypher", "freshness"}
        if DOCUMENT_TEXT_INDEX in indexes and present["documents"]:
            found |= {"outline", "search", "coverage"}
        if present["themes"]:
            found |= {"themes", "theme_changes"}
        if TABLE_TEXT_INDEX in indexes and present["tables"]:
            found |= {"tables", "join_path"}
        if self.warehouse_configured():
            found.add("run_sql")
        for shape in SHAPES:
            TOOLS.labels(shape).set(1 if shape in found else 0)
        return found

    def warehouse_configured(self) -> bool:
        if self.settings.warehouse.engine == "bigquery":
            return bool(self.settings.warehouse.bigquery_project)
        return self.settings.duckdb_file.exists()

    def refresh_gauges(self) -> None:
        """Parked problems, source ages and backlogs, read just before /metrics is served. Problems
        held in Redis come first: they are the ones that exist while the graph is down."""
        try:
            PROBLEMS_HELD.set(len(problems.held(redis_server.broker_client(self.settings, timeout=0.5))))
        except (RedisError, LakegraphError):
            log.warning("held problems not counted: Redis is unreachable")
        self.driver.verify_connectivity()
        for source in self.probe().sources:
            if source.age_seconds is not None:
                SOURCE_AGE.labels(source.source).set(source.age_seconds)
            if source.queued is not None:
                SOURCE_QUEUED.labels(source.source).set(source.queued)
        counts = {row["kind"]: row["n"] for row in self.driver.execute_query(PROBLEM_COUNTS, database_=self.database).records}
        for kind in {*get_args(problems.Kind), *counts}:  # a kind whose problems were all replayed reads 0
            PROBLEMS.labels(kind).set(counts.get(kind, 0))
