"""Per-worker-process resources: settings and one Neo4j driver, opened on first use."""

from __future__ import annotations

from functools import cache

import redis
from celery.signals import worker_process_init
from google.api_core import exceptions as google_errors
from neo4j import Driver
from neo4j.exceptions import ServiceUnavailable, SessionExpired, TransientError

from worker.documents.sync import DocumentSync
from worker.errors import EngineUnavailable
from worker.graph.connection import GraphTarget, connect
from worker.runtime import redis_server
from worker.settings import Settings, load_settings
from worker.themes.runner import ThemeRunner
from worker.themes.schedule import ThemeScheduler
from worker.warehouse.query_graph import QueryGraph
from worker.warehouse.sync import WarehouseSync

# Errors worth retrying with backoff: the engine is restarting, briefly unreachable or throttling.
TRANSIENT_ERRORS = (
    EngineUnavailable,
    ServiceUnavailable,
    SessionExpired,
    TransientError,  # Neo4j
    redis.ConnectionError,
    redis.TimeoutError,  # Redis (the theme scheduler's own client)
    google_errors.ServiceUnavailable,
    google_errors.TooManyRequests,
    google_errors.InternalServerError,
    google_errors.DeadlineExceeded,
    google_errors.BadGateway,  # BigQuery and Pub/Sub
    ConnectionError,
    TimeoutError,
)


@cache
def settings() -> Settings:
    return load_settings()


@cache
def graph() -> tuple[Driver, GraphTarget]:
    return connect(settings())


def graph_database() -> tuple[Driver, str]:
    driver, where = graph()
    return driver, where.database


@cache
def documents() -> DocumentSync:
    driver, where = graph()
    return DocumentSync(settings(), driver, where.database)


@cache
def warehouse() -> WarehouseSync:
    driver, where = graph()
    return WarehouseSync(settings(), driver, where.database)


@cache
def query_graph() -> QueryGraph:
    """One per process: it keeps the resolved query shapes across tasks."""
    driver, where = graph()
    return QueryGraph(driver, where.database, settings().warehouse.sql_dialect)


@cache
def theme_runner() -> ThemeRunner:
    driver, where = graph()
    return ThemeRunner(settings(), driver, where.database)


@cache
def broker() -> redis.Redis:
    """A plain client of the broker's Redis, for the worker's own bookkeeping."""
    return redis_server.broker_client(settings(), timeout=5)


@cache
def theme_scheduler() -> ThemeScheduler:
    conf = settings()
    return ThemeScheduler(broker(), conf.themes.quiet_seconds, conf.themes.max_wait_seconds)


@worker_process_init.connect
def _connect_early(**_: object) -> None:
    """Open the graph connection as each pool process starts, not inside the first task."""
    try:
        graph()
    except EngineUnavailable:
        pass  # the first task retries with backoff until Neo4j is back
