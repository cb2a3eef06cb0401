"""A per-file time limit on parsing: past it, the parse stops with `ParseTimeout` wherever it is.

The parsers are pure Python, so one watchdog thread per process stops an overdue parse by
raising `ParseTimeout` in the parsing thread (CPython's PyThreadState_SetAsyncExc). Unlike
SIGALRM, that reaches any thread — a Celery task, a load's pool worker, a test's thread — and
several parses at once. A parse inside one long C call (a regular expression, zlib) stops as
soon as that call returns. Code can swallow the exception — a bare `except:` in a library, or a
garbage-collector callback or `__del__` that happens to be running when it lands (Python reports
and drops it there). So the stop is raised again every REFIRE_SECONDS until the block ends, and
a block whose deadline passed ends in `ParseTimeout` however it ended: never a late result.
"""

from __future__ import annotations

import ctypes
import heapq
import itertools
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

_set_async_exc = ctypes.pythonapi.PyThreadState_SetAsyncExc
_set_async_exc.argtypes = (ctypes.c_ulong, ctypes.py_object)
_NOTHING = ctypes.py_object()  # NULL: clears a thread's pending asynchronous exception


class ParseTimeout(BaseException):
    """A parse ran past its time limit. A BaseException, like KeyboardInterrupt, so that no
    `except Exception` inside a parsing library swallows it."""


REFIRE_SECONDS = 0.05  # a swallowed stop is raised again this soon, until the block ends


class _Watchdog:
    """Deadlines of the parses running in this process; fires each one that passes, and again
    every REFIRE_SECONDS until its block ends (code may swallow the first)."""

    def __init__(self) -> None:
        self.lock = threading.Condition()
        self.armed: dict[int, int] = {}  # token -> thread ident, while its block runs
        self.fired: set[int] = set()  # tokens whose deadline passed
        self.deadlines: list[tuple[float, int]] = []  # (monotonic deadline, token), a heap
        self.tokens = itertools.count()
        threading.Thread(target=self._run, name="lakegraph-parse-limit", daemon=True).start()

    def arm(self, seconds: float) -> int:
        with self.lock:
            token = next(self.tokens)
            self.armed[token] = threading.get_ident()
            heapq.heappush(self.deadlines, (time.monotonic() + seconds, token))
            self.lock.notify()
            return token

    def _run(self) -> None:
        with self.lock:
            while True:
                while self.deadlines and self.deadlines[0][1] not in self.armed:
                    heapq.heappop(self.deadlines)  # its block ended (and reads, then drops, its own fired mark)
                if not self.deadlines:
                    self.lock.wait()
                    continue
                deadline, token = self.deadlines[0]
                wait = deadline - time.monotonic()
                if wait > 0:
                    self.lock.wait(wait)
                    continue
                heapq.heapreplace(self.deadlines, (time.monotonic() + REFIRE_SECONDS, token))
                ident = self.armed.get(token)
                if ident is not None:  # checked and fired in one stretch of holding the GIL
                    self.fired.add(token)
                    _set_async_exc(ident, ParseTimeout)


_watchdog: tuple[int, _Watchdog] | None = None  # (pid, watchdog): a forked child starts its own
_starting = threading.Lock()


def _current() -> _Watchdog:
    global _watchdog
    with _starting:
        if _watchdog is None or _watchdog[0] != os.getpid():
            _watchdog = (os.getpid(), _Watchdog())
        return _watchdog[1]


@contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Raise ParseTimeout in this thread if the block runs longer than `seconds`."""
    watchdog = _current()
    token = watchdog.arm(seconds)
    try:
        yield
    finally:
        # First, before any call that could take a pending exception: from here on the watchdog
        # leaves this thread alone (a dict's pop is one step under the GIL).
        watchdog.armed.pop(token, None)
        fired = token in watchdog.fired
        watchdog.fired.discard(token)
        if fired:
            # Drop the exception if it is still pending, so it cannot surface after the block.
            _set_async_exc(threading.get_ident(), _NOTHING)
    if fired:  # the block ended after its deadline, having swallowed every stop
        raise ParseTimeout
