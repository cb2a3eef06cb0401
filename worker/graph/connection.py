"""Connections to the graph: the configured Neo4j, else the local runtime — with one-line errors."""

from __future__ import annotations

from dataclasses import dataclass

from neo4j import Driver, GraphDatabase
from neo4j.exceptions import (
    AuthError,
    ConfigurationError,
    Neo4jError,
    ServiceUnavailable,
)

from worker.exceptions import EngineUnavailable, LakegraphError, first_line
from worker.runtime import neo4j_server
from worker.settings import Settings

CONNECT_TIMEOUT = 5.0


@dataclass(frozen=True)
class GraphTarget:
    uri: str
    user: str
    password: str
    database: str
    local: bool


def target(settings: Settings) -> GraphTarget:
    """Where the graph lives: neo4j.uri if set, else the running local runtime."""
    conf = settings.neo4j
    if conf.uri:
        return GraphTarget(conf.uri, conf.user, conf.password.get_secret_value(), conf.database, local=False)
    running = neo4j_server.status(settings)
    if running is None:
        raise EngineUnavailable(
            "no Neo4j: neo4j.uri is not set and the local runtime is not running; "
            "start it with `lakegraph neo4j start` (or `lakegraph up`), or set LAKEGRAPH_NEO4J__URI"
        )
    return GraphTarget(running.uri, neo4j_server.LOCAL_USER, running.password, conf.database, local=True)


def connect(settings: Settings) -> tuple[Driver, GraphTarget]:
    """An open, verified driver for the graph."""
    where = target(settings)
    try:
        driver = GraphDatabase.driver(
            where.uri,
            auth=(where.user, where.password),
            connection_timeout=CONNECT_TIMEOUT,
            max_transaction_retry_time=settings.neo4j.retry_seconds,
            notifications_min_severity="OFF",  # "property does not exist yet" on an empty graph is noise
        )
    except (ConfigurationError, ValueError) as err:
        raise LakegraphError(f"bad Neo4j URI {where.uri!r}: {err}") from None
    try:
        driver.verify_connectivity()
    except AuthError:
        driver.close()
        raise LakegraphError(f"Neo4j at {where.uri} refused user {where.user!r}: check neo4j.user and neo4j.password") from None
    except (ServiceUnavailable, OSError, Neo4jError) as err:
        driver.close()
        raise EngineUnavailable(f"Neo4j at {where.uri} is unreachable ({first_line(err)}); is it running?") from None
    return driver, where
