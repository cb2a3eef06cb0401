"""How fresh every answer is: per source, when the graph last applied a change, the newest event
it has applied, and how many events wait in the queue (behind the graph, not yet applied)."""

from __future__ import annotations

import json
from collections import Counter
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, cast

from shapes.spec import Params, ShapeSpec
from worker import task_names
from worker.graph import stamps
from worker.graph.schema import Label

if TYPE_CHECKING:
    from neo4j import Driver

    from worker.graph.stamps import SourceName
    from worker.settings import Settings
    from worker.shared.grants import Grant

READ_SOURCES = f"""
MATCH (s:{Label.SOURCE})
RETURN s.id AS source, toString(s.applied_at) AS applied_at, toString(s.event_at) AS event_at,
       duration.inSeconds(s.applied_at, datetime()).seconds AS age, s.changes AS changes
ORDER BY source
"""
QUEUE = "celery"  # Celery's default queue: every lakegraph task goes there
QUEUE_SAMPLE = 5000


@dataclass(frozen=True)
class SourceFreshness:
    source: str
    applied_at: str | None  # when the graph last applied a change from this source
    event_at: str | None  # source-side time of the newest event applied
    age_seconds: int | None
    changes: int | None  # None: withheld within a restricted grant (it counts changes everywhere)
    queued: int | None  # events waiting to be applied (None: the queue could not be read, or withheld)


@dataclass(frozen=True)
class Freshness:
    as_of: str
    sources: list[SourceFreshness] = field(default_factory=list)

    def within(self, grant: Grant) -> Freshness:
        """As a restricted grant sees it: when each source last applied a change, without the
        counts of changes applied and queued, which count what it may not see too."""
        if grant.everything:
            return self
        return replace(self, sources=[replace(source, changes=None, queued=None) for source in self.sources])

    def stamp(self, source: str) -> tuple[str | None, int | None]:
        """The source's last applied change as this reading saw it. It moves with every change the
        source applies (as `worker.graph.stamps.version` does), so what is kept per version of a
        source can be keyed on a call's reading without a read of its own."""
        found = next((seen for seen in self.sources if seen.source == source), None)
        return (None, None) if found is None else (found.applied_at, found.changes)


# The freshness the call being answered is answered at, unrestricted, read once before its shape
# runs (`Shapes._page`, so the answer is at least as fresh as it says): the answer says it, the
# freshness shape answers it, and what a shape keeps per version is keyed on it.
CALL_READING: ContextVar[Freshness] = ContextVar("call_reading")


def versions(driver: Driver, database: str, *sources: SourceName) -> tuple:
    """The sources' stamps, to key what is kept until one of them applies a change: as the call
    being answered read them (no round trip of its own; read first, so what is kept under them is
    at least as fresh), or from the graph for a shape used outside a call."""
    reading = CALL_READING.get(None)
    if reading is None:
        return stamps.version(driver, database, *sources)
    return tuple(reading.stamp(source) for source in sources)


class FreshnessProbe:
    """Reads the Source stamps from the graph and the backlog from the Celery broker."""

    def __init__(self, driver: Driver, database: str, settings: Settings) -> None:
        self.driver = driver
        self.database = database
        self.settings = settings

    def __call__(self) -> Freshness:
        queued = self.backlog()
        stamps = {row["source"]: row for row in self.driver.execute_query(READ_SOURCES, database_=self.database).records}
        names = sorted(set(stamps) | set(queued or {}))
        sources = [
            SourceFreshness(
                source=name,
                applied_at=stamps[name]["applied_at"] if name in stamps else None,
                event_at=stamps[name]["event_at"] if name in stamps else None,
                age_seconds=stamps[name]["age"] if name in stamps else None,
                changes=stamps[name]["changes"] if name in stamps else 0,
                queued=None if queued is None else queued.get(name, 0),
            )
            for name in names
        ]
        return Freshness(datetime.now(UTC).isoformat(timespec="seconds"), sources)

    def backlog(self) -> dict[str, int] | None:
        """Queued tasks per source, from the broker's list (a bounded sample); None if unreachable."""
        from worker.exceptions import EngineUnavailable
        from worker.runtime import redis_server

        try:
            url = redis_server.broker_url(self.settings)
        except EngineUnavailable:
            return None  # none configured and none running: no client to load (redis-py is 85 ms of a call's start)
        from redis.exceptions import RedisError

        try:
            messages = cast(list[bytes], redis_server.client(url, timeout=0.5).lrange(QUEUE, 0, QUEUE_SAMPLE - 1))  # a sync client
        except (RedisError, OSError):
            return None  # an unreachable broker makes the backlog unknown, never the shape fail
        counts: Counter[str] = Counter()
        for raw in messages:
            try:
                task = json.loads(raw)["headers"]["task"]
            except (ValueError, KeyError, TypeError):
                continue
            counts[task_names.SOURCE_OF.get(task, "other")] += 1
        return dict(counts)


def render(freshness: Freshness) -> str:
    if not freshness.sources:
        return "freshness: nothing applied yet"
    parts = []
    for source in freshness.sources:
        age = "never" if source.age_seconds is None else f"{_span(source.age_seconds)} ago"
        queued = "" if source.queued is None else f", {source.queued} queued" if source.queued else ", none queued"
        parts.append(f"{source.source} {age}{queued}")
    return "freshness: " + " · ".join(parts)


def _span(seconds: int) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds // size} {unit}"
    return f"{seconds} s"


class FreshnessParams(Params):
    pass


SPEC = ShapeSpec(
    name="freshness",
    purpose="When the graph last applied a change from each source, and what is still queued.",
    guide="Sources are documents, warehouse, glossary and query log; every other answer ends with the same lines.",
    params=FreshnessParams,
    output=Freshness,
    run=lambda shapes, p, grant: CALL_READING.get().within(grant),
    render=render,
    rows=("sources",),
    scoped=True,
)
