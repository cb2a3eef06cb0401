"""Recorded problems: inputs skipped or loaded with warnings, and work that failed after retries.

Each has a stable id (source, key, kind), so a recurring problem updates one record; each names
the task that makes its key current again, so `lakegraph errors --replay ID` can re-run it.
Records are cleared when their key syncs cleanly.

A problem that happens while the graph itself is down is held in Redis (the broker the worker
already depends on) and moved into the graph by a periodic task once it is back, so nothing
parked is lost and `lakegraph errors` and /metrics count it in the meantime.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Literal, cast

from neo4j import Driver
from neo4j.exceptions import DriverError, Neo4jError

from worker.exceptions import EngineUnavailable
from worker.graph.schema import Label

if TYPE_CHECKING:
    import redis

    from worker.settings import Settings

Kind = Literal["skipped", "warning", "failed", "conflict"]


@dataclass(frozen=True)
class Problem:
    id: str
    source: str  # documents, warehouse, pubsub, ...
    key: str  # what it is about, e.g. "technical-library:bulletins/tsb-1.md"
    kind: Kind
    reason: str
    first_seen: str
    last_seen: str
    occurrences: int
    task: str
    args: list
    stamp: str | None = None  # the input's stamp when refused: it is not read again while it holds


RECORD = f"""
MERGE (p:{Label.PROBLEM} {{id: $id}})
ON CREATE SET p.first_seen = datetime(), p.occurrences = 0
SET p.source = $source, p.key = $key, p.kind = $kind, p.reason = $reason, p.last_seen = datetime(),
    p.occurrences = p.occurrences + 1, p.task = $task, p.args = $args, p.stamp = $stamp
"""
CLEAR = f"""
MATCH (p:{Label.PROBLEM} {{key: $key}})
WHERE p.source = $source AND p.kind IN $kinds
DELETE p
"""
CLEAR_MANY = f"""
UNWIND $keys AS key
MATCH (p:{Label.PROBLEM} {{key: key}})
WHERE p.source = $source AND p.kind IN $kinds
DELETE p
"""
LIST = f"""
MATCH (p:{Label.PROBLEM})
WHERE $source IS NULL OR p.source = $source
RETURN p {{.*, first_seen: toString(p.first_seen), last_seen: toString(p.last_seen)}} AS p
ORDER BY p.last_seen DESC, p.id
"""
GET = f"""
MATCH (p:{Label.PROBLEM} {{id: $id}})
RETURN p {{.*, first_seen: toString(p.first_seen), last_seen: toString(p.last_seen)}} AS p
"""


log = logging.getLogger(__name__)
GRAPH_DOWN = (EngineUnavailable, DriverError, Neo4jError, OSError)
HELD = "lakegraph:problems:held"  # Redis hash: problem id → JSON of record()'s arguments


def problem_id(source: str, key: str, kind: str) -> str:
    return hashlib.sha256(f"{source}\0{key}\0{kind}".encode()).hexdigest()[:12]


def record(driver: Driver, database: str, source: str, key: str, kind: Kind, reason: str, task: str, args: list, stamp: str | None = None) -> str:
    pid = problem_id(source, key, kind)
    driver.execute_query(
        RECORD,
        id=pid,
        source=source,
        key=key,
        kind=kind,
        reason=reason[:2000],
        task=task,
        args=json.dumps(args),
        stamp=stamp,
        database_=database,
    )
    return pid


def clear(driver: Driver, database: str, source: str, key: str, kinds: tuple[Kind, ...]) -> None:
    driver.execute_query(CLEAR, source=source, key=key, kinds=list(kinds), database_=database)


def clear_many(driver: Driver, database: str, source: str, keys: list[str], kinds: tuple[Kind, ...]) -> None:
    driver.execute_query(CLEAR_MANY, source=source, keys=keys, kinds=list(kinds), database_=database)


def _problem(data: dict) -> Problem:
    return Problem(**{**data, "args": json.loads(data["args"])})


def listing(driver: Driver, database: str, source: str | None = None) -> list[Problem]:
    return [_problem(row["p"]) for row in driver.execute_query(LIST, source=source, database_=database).records]


def get(driver: Driver, database: str, pid: str) -> Problem | None:
    records = driver.execute_query(GET, id=pid, database_=database).records
    return _problem(records[0]["p"]) if records else None


def park(
    graph: Callable[[], tuple[Driver, str]],
    broker: Callable[[], redis.Redis],
    source: str,
    key: str,
    kind: Kind,
    reason: str,
    task: str,
    args: list,
) -> str:
    """Record a problem in the graph (`graph()` gives the driver and database), or hold it in Redis
    when the graph is unreachable. Raises only when both are down (the caller then leaves the work
    undone, to be delivered again)."""
    try:
        driver, database = graph()
        driver.verify_connectivity()  # fails at once; a write to a dead server retries for 30 s or more
        return record(driver, database, source, key, kind, reason, task, args)
    except GRAPH_DOWN as graph_down:
        log.warning("the graph is down (%s); holding problem %s %s in Redis", graph_down, source, key)
    return hold(broker(), source, key, kind, reason, task, args)


def park_from_command(settings: Settings, source: str, key: str, reason: str, task: str = "", args: list | None = None) -> str | None:
    """A command's failure, parked (see `park`) with the command's own settings; None when neither
    the graph nor Redis takes it — the command's error line still says it."""
    from redis.exceptions import RedisError

    from worker.graph.connection import connect
    from worker.runtime import redis_server

    opened: list[Driver] = []

    def graph() -> tuple[Driver, str]:
        driver, where = connect(settings)
        opened.append(driver)
        return driver, where.database

    try:
        return park(graph, lambda: redis_server.broker_client(settings, timeout=2), source, key, "failed", reason, task, args or [])
    except (RedisError, EngineUnavailable, OSError):
        log.warning("could not record the failure of %s %s anywhere", source, key)
        return None
    finally:
        for driver in opened:
            driver.close()


def hold(client: redis.Redis, source: str, key: str, kind: Kind, reason: str, task: str, args: list) -> str:
    """Keep a problem in Redis while the graph cannot take it."""
    pid = problem_id(source, key, kind)
    held = {"source": source, "key": key, "kind": kind, "reason": reason[:2000], "task": task, "args": args, "at": _now()}
    client.hset(HELD, pid, json.dumps(held))
    return pid


def unhold(client: redis.Redis, source: str, key: str, kind: Kind) -> None:
    """A problem held in Redis is over before it reached the graph (its work has since succeeded)."""
    client.hdel(HELD, problem_id(source, key, kind))


def held(client: redis.Redis) -> list[Problem]:
    """Problems waiting in Redis for the graph, oldest first."""
    found = []
    for pid, raw in cast(dict, client.hgetall(HELD)).items():
        data = json.loads(raw)
        found.append(
            Problem(
                id=pid.decode(),
                source=data["source"],
                key=data["key"],
                kind=data["kind"],
                reason=data["reason"],
                first_seen=data["at"],
                last_seen=data["at"],
                occurrences=1,
                task=data["task"],
                args=data["args"],
            )
        )
    return sorted(found, key=lambda problem: problem.first_seen)


def settle_held(client: redis.Redis, driver: Driver, database: str) -> int:
    """Move held problems into the graph; each leaves Redis only once the graph has it."""
    moved = 0
    for problem in held(client):
        record(driver, database, problem.source, problem.key, problem.kind, problem.reason, problem.task, problem.args)
        client.hdel(HELD, problem.id)
        moved += 1
    return moved


def _now() -> str:
    return datetime.now(UTC).isoformat()
