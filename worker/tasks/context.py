"""Per-worker-process resources: settings and the composition root (worker/components.py), opened on
first use. The components' modules are imported here, by the worker's parent process before it
forks its pool, so that no pool process pays for them in its first task."""

from __future__ import annotations

from functools import cache

import redis
from celery.signals import worker_process_init
from google.api_core import exceptions as google_errors
from neo4j import Driver
from neo4j.exceptions import ServiceUnavailable, SessionExpired, TransientError

from worker.bridge.refresh import BridgeRefresh
from worker.components import Components
from worker.documents.sync import DocumentSync
from worker.exceptions import EngineUnavailable
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
def components() -> Components:
    """This process's graph connection and the components on it, opened on first use."""
    conf = settings()
    driver, where = connect(conf)
    return Components(conf, driver, where)


def graph() -> tuple[Driver, GraphTarget]:
    return components().driver, components().where


def graph_database() -> tuple[Driver, str]:
    return components().driver, components().database


def documents() -> DocumentSync:
    return components().documents


def warehouse() -> WarehouseSync:
    return components().warehouse


def bridge() -> BridgeRefresh:
    return components().bridge


def query_graph() -> QueryGraph:
    return components().query_graph


def theme_runner() -> ThemeRunner:
    return components().themes


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
        components()
    except EngineUnavailable:
        pass  # the first task retries with backoff until Neo4j is back
