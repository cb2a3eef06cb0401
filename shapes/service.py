"""The shapes as one service: what the CLI, the MCP server and the HTTP API all call.

`ask(name, **params)` runs any shape of the registry (`shapes/registry.py`) with its parameters
checked by the shape's spec. Each call returns an `Answer` — the shape's typed result, how fresh the graph is, and both
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

from shapes import freshness as freshness_shape
from shapes import join_path, tables
from shapes import sql as sql_shape
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
from shapes.registry import SPECS
from shapes.spec import Needs
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

    @property
    def budget_chars(self) -> int:
        return self.settings.shapes.answer_tokens * CHARS_PER_TOKEN

    def ask(self, name: str, **raw: Any) -> Answer:
        """Shape `name` with parameters from any surface, checked by its spec's model."""
        spec = SPECS[name]
        began = perf_counter()
        try:
            result = spec.run(self, spec.validate(raw))
        except ShapeError:
            CALLS.labels(name, "refused").inc()
            raise
        except Exception:
            CALLS.labels(name, "error").inc()
            raise
        finally:
            LATENCY.labels(name).observe(perf_counter() - began)
        CALLS.labels(name, "ok").inc()
        return Answer(name, result, self.probe(), spec.render)

    def available(self) -> set[str]:
        """The shapes that can answer right now: their index is online and their data is there."""
        indexes = set(self.driver.execute_query(ONLINE_INDEXES, database_=self.database).records[0]["names"])
        present = self.driver.execute_query(HAS_DATA, database_=self.database).records[0]
        holds: dict[Needs, bool] = {
            "graph": True,
            "documents": DOCUMENT_TEXT_INDEX in indexes and present["documents"],
            "themes": present["themes"],
            "tables": TABLE_TEXT_INDEX in indexes and present["tables"],
            "warehouse": self.warehouse_configured(),
        }
        found = {name for name, spec in SPECS.items() if holds[spec.needs]}
        for name in SPECS:
            TOOLS.labels(name).set(1 if name in found else 0)
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
