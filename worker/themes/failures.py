"""A themes run that failed, as `lakegraph errors` shows it: one record whichever process ran it
(the worker's debounced check or `themes --refresh`), replayed as a themes check, cleared by the
next run that succeeds."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from neo4j import Driver
from redis.exceptions import RedisError

from worker import problems
from worker.exceptions import EngineUnavailable, LakegraphError
from worker.graph.engine_errors import explain

if TYPE_CHECKING:
    import redis

SOURCE, KEY = "themes", "run"
NOT_CURRENT = "the run was not made current: the previous themes are still served"


def reason(error: BaseException) -> str | None:
    """What to record and print for a failed run, or None for an error that is a bug (raised as it is)."""
    if isinstance(error, LakegraphError):
        return str(error)
    line = explain(error)
    return None if line is None else f"{line}; {NOT_CURRENT}"


def cleared(driver: Driver, database: str, broker: Callable[[], redis.Redis]) -> None:
    """A run succeeded: the failure recorded before it is over, in the graph or held in Redis
    (where a failure goes when the graph would not take it; no Redis, nothing held)."""
    problems.clear(driver, database, SOURCE, KEY, ("failed",))
    try:
        problems.unhold(broker(), SOURCE, KEY, "failed")
    except (RedisError, EngineUnavailable):
        pass
