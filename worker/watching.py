"""What every watched source shares: a job (a task name and its arguments), the coalescer that turns
the events of one save into one job, and which events say a change is complete. Each source's
handler lives with its source (documents, the audit-log folder, the glossary file); the process
that watches them all is `worker.watch`."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

WATCHING = "watching"  # what `lakegraph watch` prints once its observers run: edits from then on are seen


@dataclass(frozen=True)
class Job:
    task: str
    args: tuple[str, ...]


class Coalescer:
    """One pending job per path. An event that says a change is complete (see SETTLED_EVENTS)
    makes its job due at once; any other event (a write under way) makes it due `window` seconds
    after the latest event on that path, so the events of one save become one job."""

    def __init__(self, window: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.window = window
        self.clock = clock
        self._pending: dict[Job, float] = {}
        self._lock = threading.Lock()

    def add(self, job: Job, settled: bool = False, delay: float | None = None) -> None:
        with self._lock:
            wait = delay if delay is not None else 0.0 if settled else self.window
            self._pending[job] = self.clock() + wait

    def due(self, everything: bool = False) -> list[Job]:
        now = float("inf") if everything else self.clock()
        with self._lock:
            ready = [job for job, deadline in self._pending.items() if deadline <= now]
            for job in ready:
                del self._pending[job]
        return sorted(ready, key=lambda job: (job.args, job.task))

    def __len__(self) -> int:
        return len(self._pending)


# inotify also reports files being opened and closed unchanged: reads, never changes.
READ_ONLY_EVENTS = ("opened", "closed_no_write")
# A file closed after writing, renamed into place or deleted is in its final state: no need to
# wait for more events (an editor's save by rename, or one written and closed, is seen at once).
SETTLED_EVENTS = ("closed", "moved", "deleted")


def event_path(raw: str | bytes) -> Path:
    """A path as watchdog reports it (bytes on some platforms)."""
    return Path(raw.decode() if isinstance(raw, bytes) else raw)
