"""From the graph's change stream to this replica's subscribers: which watched resource moved.

Every `serve` process reads the stream the writers append to (worker/shared/changes.py) on its own, so a
subscriber hears of a change whichever worker made it and whichever replica it is connected to.
A change names its source and the documents or tables it touched; the catalogue says which
watched URIs it may move (`resources.affected`), and a resource whose last answer linked to a
changed document is a candidate too (an outline shows its link targets' names). Each candidate
is read again and notified only when its answer differs from the one last notified, so the
notification comes after the state it announces is readable, and a burst of edits coalesces: a
URI is notified at most once per `serve.notify_interval`, the last time after the final state.

A resource is watched as its watcher's grant sees it (`Watch`): read within that grant, and
notified with the grant's key (`GrantedUpdate`), so a subscriber hears only of changes to what it
may read. A change naming only documents or tables a grant cannot see is not even a candidate for
that grant's watches, so no timing of a notification tells of a hidden change.

A replica that loses Redis reconnects with backoff and resumes from the last entry it read; then
every watched URI is read again, so a change made during the outage is notified after it.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio
from mcp.server.subscriptions import InMemorySubscriptionBus
from mcp.shared.subscriptions import ResourceUpdated, ServerEvent

from shapes.serving import resources
from shapes.serving.identity import Caller
from shapes.serving.metrics import NOTIFIED, WATCHED
from shapes.serving.service import FEED
from shapes.spec.exceptions import ShapeError
from shapes.spec.registry import SPECS
from worker.exceptions import LakegraphError
from worker.shared.changes import STREAM, Change
from worker.shared.grants import EVERYTHING, Grant

if TYPE_CHECKING:
    import redis

    from shapes.serving.service import Answer, Shapes

log = logging.getLogger(__name__)
READ_BLOCK_MS = 1000
MAX_BACKOFF = 5.0
UNREAD = "unread"  # the digest of a watch not read since it began: any change it may see notifies it
FEED_SUBJECT = "change feed"  # who re-reads a watched resource, on its watchers' behalf


@dataclass(frozen=True)
class GrantedUpdate(ResourceUpdated):
    """The resource at `uri` moved as the grant with key `grant` sees it."""

    grant: str = EVERYTHING.key


@dataclass(frozen=True)
class Watch:
    """One resource as one grant sees it: what the feed reads again and notifies."""

    uri: str
    grant: Grant = EVERYTHING

    def heard(self, event: ServerEvent) -> bool:
        return isinstance(event, ResourceUpdated) and event.uri == self.uri and heard_by(event, self.grant)

    def may_move(self, change: Change) -> bool:
        """Whether `change` may move what this grant sees: a change naming documents or tables only
        when it names one the grant sees (one naming none may move anything); a themes run always
        (the digest decides)."""
        if self.grant.everything or not change.keys:
            return True
        if change.source == "documents":
            return any(self.grant.touches(key) for key in change.keys)
        if change.source in resources.TABLE_SOURCES:
            return any(self.grant.sees_table(key) for key in change.keys)
        return True


def heard_by(event: ServerEvent, grant: Grant) -> bool:
    """Whether a listener within `grant` may hear `event`: a resource update only when it was
    computed for that grant; a list change (the same for everyone) always."""
    return not isinstance(event, ResourceUpdated) or (isinstance(event, GrantedUpdate) and event.grant == grant.key)


class Watched:
    """What this replica's subscribers watch (counted: several may watch one), with the digest of
    each one's last notified answer and the resource URIs that answer linked to."""

    def __init__(self) -> None:
        self.counts: Counter[Watch] = Counter()
        self.digests: dict[Watch, str] = {}
        self.linked: dict[Watch, frozenset[str]] = {}

    def add(self, watch: Watch) -> None:
        self.counts[watch] += 1
        self.digests.setdefault(watch, UNREAD)

    def remove(self, watch: Watch) -> None:
        self.counts[watch] -= 1
        if self.counts[watch] <= 0:
            del self.counts[watch]
            self.digests.pop(watch, None)
            self.linked.pop(watch, None)

    def __contains__(self, watch: object) -> bool:
        return watch in self.counts

    def watches(self) -> set[Watch]:
        return set(self.counts)

    def candidates(self, change: Change) -> set[Watch]:
        """What `change` may move: by the catalogue, or through a link of the watched answer, and
        only where the watch's grant may see it move."""
        seen = [watch for watch in self.counts if watch.may_move(change)]
        moved = resources.affected(change, {watch.uri for watch in seen})
        found = {watch for watch in seen if watch.uri in moved}
        if change.source == "documents":
            places = [resources.outline_uri(key) for key in change.keys]
            found |= {watch for watch in seen if any(link.startswith(prefix) for link in self.linked.get(watch, ()) for prefix in places)}
        return found


def digest(answer: Answer) -> str:
    """The answer without its freshness (which moves with every change anywhere) and without its
    cursor (which names the snapshot this read kept: a new one each read; the page's offset,
    count and total say where it stands)."""
    data = {key: value for key, value in answer.data().items() if key != "freshness"}
    data["page"] = {key: value for key, value in data["page"].items() if key != "next_cursor"}
    return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()


def read(shapes: Shapes, watch: Watch) -> tuple[str, frozenset[str]]:
    """The resource's digest now, within the watch's grant, and what its answer links to; a refusal
    (a document deleted since) is a state of its own."""
    found = resources.resolve(watch.uri)
    if found is None:
        return "unknown", frozenset()
    resource, values = found
    try:
        answer = shapes.ask(resource.shape, Caller(FEED_SUBJECT, "", watch.grant), FEED, **resource.params(values))
    except ShapeError as refused:
        return f"refused: {refused}", frozenset()
    if resource.shape == "freshness":
        return f"read at {time.monotonic()}", frozenset()  # its ages move by themselves: every change is news
    return digest(answer), frozenset(resources.links(SPECS[resource.shape], answer.result))


class Signal:
    """Raised by notifications, lowered by the one waiting for them."""

    def __init__(self) -> None:
        self.event = anyio.Event()

    def raise_(self) -> None:
        self.event.set()

    async def wait(self, seconds: float) -> bool:
        """True when raised within `seconds` (and lowered again), False when they passed first."""
        with anyio.move_on_after(seconds):
            await self.event.wait()
            self.event = anyio.Event()
            return True
        return False


class ChangeFeed:
    """Publishes `GrantedUpdate(uri, grant)` on `bus` for each watch whose answer moved: the MCP
    listen streams, the 2025 sessions and the themes page all hear of changes there, each only of
    its own grant's."""

    def __init__(self, shapes: Shapes, connect: Callable[[], redis.Redis], interval: float) -> None:
        self.shapes = shapes
        self.connect = connect
        self.bus = InMemorySubscriptionBus()
        self.interval = interval
        self.watched = Watched()
        self.candidates: set[Watch] = set()
        self.last_notified: dict[Watch, float] = {}
        self.unlinked: set[Watch] = set()  # watched, their links not read yet
        self.wake = anyio.Event()

    def watch(self, watch: Watch) -> None:
        if watch not in self.watched:
            self.unlinked.add(watch)
            self.wake.set()
        self.watched.add(watch)
        WATCHED.set(len(self.watched.counts))

    def unwatch(self, watch: Watch) -> None:
        self.watched.remove(watch)
        if watch not in self.watched:
            self.last_notified.pop(watch, None)
        WATCHED.set(len(self.watched.counts))

    @contextmanager
    def watching(self, watch: Watch) -> Iterator[Signal]:
        """While inside, the resource is watched and the signal is raised at each of its notifications."""
        signal = Signal()

        def heard(event: ServerEvent) -> None:
            if watch.heard(event):
                signal.raise_()

        self.watch(watch)
        stop = self.bus.subscribe(heard)
        try:
            yield signal
        finally:
            stop()
            self.unwatch(watch)

    async def run(self) -> None:
        """Forever: read the stream, gather candidates, confirm and notify them."""
        stream = StreamReader(self.connect)
        failures = 0
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(self._notify_forever)
            while True:
                try:
                    changes = await anyio.to_thread.run_sync(stream.read, abandon_on_cancel=True)
                except Exception as failed:  # Redis down, restarting, or not there yet: retry, then re-check everything
                    if not _redis_error(failed):
                        raise
                    stream.client = None
                    failures += 1
                    if failures == 1:
                        log.warning("change stream unreachable (%s); retrying", failed)
                    await anyio.sleep(min(MAX_BACKOFF, 0.2 * 2**failures))
                    continue
                if failures:
                    failures = 0
                    log.warning("change stream back: every watched resource is read again")
                    self._everything()  # whatever changed during the outage is found by reading
                for change in changes:
                    self._absorb(change)

    def _absorb(self, change: Change) -> None:
        found = self.watched.candidates(change)
        if found:
            self.candidates |= found
            self.wake.set()

    def _everything(self) -> None:
        self.candidates |= self.watched.watches()
        self.wake.set()

    async def _notify_forever(self) -> None:
        while True:
            await self.wake.wait()
            self.wake = anyio.Event()
            if self.unlinked:
                await self._read_links()
            await self._confirm()

    async def _read_links(self) -> None:
        for watch in sorted(self.unlinked, key=str):
            try:
                _, linked = await anyio.to_thread.run_sync(read, self.shapes, watch)
            except LakegraphError as failed:
                log.warning("links of %s not read: %s", watch.uri, failed)
                continue
            self.unlinked.discard(watch)
            if watch in self.watched:
                self.watched.linked[watch] = linked

    async def _confirm(self) -> None:
        """Read each due candidate again; notify those whose answer moved. One not due yet (notified
        less than `interval` ago) waits for its turn; one that cannot be read now stays a candidate."""
        now = time.monotonic()
        due = {watch for watch in self.candidates if now - self.last_notified.get(watch, -self.interval) >= self.interval}
        later = self.candidates - due
        self.candidates = later
        for watch in sorted(due, key=str):
            if watch not in self.watched:
                continue
            try:
                found, linked = await anyio.to_thread.run_sync(read, self.shapes, watch)
            except Exception as failed:  # the graph is down: the change is still owed
                log.warning("%s not re-read: %s", watch.uri, failed)
                self.candidates.add(watch)
                continue
            if watch not in self.watched:
                continue
            self.watched.linked[watch] = linked
            if found != self.watched.digests.get(watch):
                self.watched.digests[watch] = found
                self.last_notified[watch] = time.monotonic()
                NOTIFIED.inc()
                await self.bus.publish(GrantedUpdate(uri=watch.uri, grant=watch.grant.key))
        if self.candidates:
            wait = min(self.interval - (time.monotonic() - self.last_notified.get(watch, 0.0)) for watch in self.candidates)
            await anyio.sleep(max(wait, 0.05))
            self.wake.set()


class StreamReader:
    """Reads the change stream from the entry after the last one it read (from its end, the first
    time), reconnecting after a failure."""

    def __init__(self, connect: Callable[[], redis.Redis]) -> None:
        self.connect = connect
        self.client: redis.Redis | None = None
        self.last: str | None = None

    def read(self) -> list[Change]:
        if self.client is None:
            self.client = self.connect()
        if self.last is None:
            newest: Any = self.client.xrevrange(STREAM, count=1)
            self.last = newest[0][0].decode() if newest else "0-0"
        found: Any = self.client.xread({STREAM: self.last}, count=1000, block=READ_BLOCK_MS)
        changes = []
        for _, rows in found or ():
            for entry_id, fields in rows:
                self.last = entry_id.decode()
                changes.append(Change.decode(fields))
        return changes


def _redis_error(failed: Exception) -> bool:
    import redis

    return isinstance(failed, redis.RedisError | LakegraphError | OSError)


def stream_client(settings: Any) -> Callable[[], redis.Redis]:
    """The broker's Redis, looked up on each (re)connect: the embedded one may start later."""
    from worker.runtime import redis_server

    return lambda: redis_server.broker_client(settings, timeout=READ_BLOCK_MS / 1000 + 5)
