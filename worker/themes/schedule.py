"""When themes run: link changes mark them dirty; a run starts after a quiet window, or after a
maximum wait under a steady stream of edits; never two at once.

State lives in Redis (shared by every worker process): when the graph first became dirty, the
last change, whether a check is already scheduled, and a run lock with an expiry (a crashed run
cannot block themes forever). At most one check task is pending at a time, however many edits
arrive.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Literal, cast

import redis

from worker.exceptions import EngineUnavailable, LakegraphError
from worker.runtime import redis_server
from worker.settings import Settings

PREFIX = "lakegraph:themes:"
DIRTY_SINCE = PREFIX + "dirty_since"
LAST_CHANGE = PREFIX + "last_change"
CHECK_PENDING = PREFIX + "check_pending"
RUNNING = PREFIX + "running"
FAILURES = PREFIX + "failures"  # runs failed in a row
RETRY_AT = PREFIX + "retry_at"  # no run before this time after a failure
RUN_LOCK_SECONDS = 900
MAX_BACKOFF = 900.0


@dataclass(frozen=True)
class Decision:
    action: Literal["idle", "wait", "run"]
    seconds: float = 0.0


class ThemeScheduler:
    def __init__(self, client: redis.Redis, quiet: float, max_wait: float, clock: Callable[[], float] = time.time) -> None:
        self.client = client
        self.quiet = quiet
        self.max_wait = max_wait
        self.clock = clock

    def mark_dirty(self) -> bool:
        """Record a link change; True when the caller should schedule the (only) check."""
        now = self.clock()
        pipe = self.client.pipeline()
        pipe.set(DIRTY_SINCE, now, nx=True)
        pipe.set(LAST_CHANGE, now)
        pipe.set(CHECK_PENDING, now, nx=True, ex=int(self.max_wait * 4) + 60)
        return bool(pipe.execute()[2])

    def request_run(self) -> None:
        """A run asked for by someone (`POST /v1/themes/refresh`): dirty and settled at once, so
        the next check runs it unless a failure's backoff says wait or a run holds the lock (that
        run then serves the request)."""
        now = self.clock()
        pipe = self.client.pipeline()
        pipe.set(DIRTY_SINCE, now - self.max_wait)
        pipe.set(LAST_CHANGE, now - self.quiet)
        pipe.execute()

    def dirty(self) -> bool:
        return bool(self.client.exists(DIRTY_SINCE))

    def decide(self) -> Decision:
        since, last, retry_at = cast(list, self.client.mget(DIRTY_SINCE, LAST_CHANGE, RETRY_AT))
        if since is None:
            return Decision("idle")
        now = self.clock()
        if retry_at is not None and float(retry_at) > now:
            return Decision("wait", float(retry_at) - now)  # backing off after a failure, whatever the edits
        quiet_left = float(last or since) + self.quiet - now
        wait_left = float(since) + self.max_wait - now
        if quiet_left <= 0 or wait_left <= 0:
            return Decision("run")
        return Decision("wait", min(quiet_left, wait_left))

    def begin_run(self) -> bool:
        """Take the run lock and consume the dirty marks (edits during the run mark them again)."""
        if not self.client.set(RUNNING, self.clock(), nx=True, ex=RUN_LOCK_SECONDS):
            return False
        self.client.delete(DIRTY_SINCE, LAST_CHANGE)
        return True

    def end_run(self, failed: bool) -> None:
        """Release the lock. A failed run leaves the themes dirty so a later check retries them, after
        the quiet window doubled for each failure in a row (at most MAX_BACKOFF); a run that
        succeeds ends the backoff."""
        now = self.clock()
        if failed:
            failures = cast(int, self.client.incr(FAILURES))
            self.client.set(RETRY_AT, now + min(MAX_BACKOFF, self.quiet * 2**failures))
            self.client.set(DIRTY_SINCE, now, nx=True)
            self.client.set(LAST_CHANGE, now)
        else:
            self.client.delete(FAILURES, RETRY_AT)
        self.client.delete(RUNNING)

    def release_check(self) -> bool:
        """The pending check is done; True when another must be scheduled (dirty again meanwhile)."""
        self.client.delete(CHECK_PENDING)
        return self.dirty() and bool(self.client.set(CHECK_PENDING, self.clock(), nx=True, ex=int(self.max_wait * 4) + 60))


@contextmanager
def exclusive_run(settings: Settings, wait: float = 120.0) -> Iterator[None]:
    """Hold the run lock around a run started outside the worker (`themes --refresh`). Without a
    reachable Redis no worker can be running themes, so no lock is needed."""
    try:
        client = redis_server.broker_client(settings, timeout=2)
        client.ping()
    except (EngineUnavailable, redis.RedisError, OSError):
        yield
        return
    scheduler = ThemeScheduler(client, settings.themes.quiet_seconds, settings.themes.max_wait_seconds)
    deadline = time.monotonic() + wait
    while not scheduler.begin_run():
        if time.monotonic() > deadline:
            raise LakegraphError(f"a themes run has held the lock for over {wait:.0f} s; try again later")
        time.sleep(0.5)
    failed = True
    try:
        yield
        failed = False
    finally:
        scheduler.end_run(failed)
