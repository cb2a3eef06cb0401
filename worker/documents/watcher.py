"""Watch every library root (and the audit-log folder) and turn file events into tasks.

A change seen complete (a file closed after writing, renamed into place, deleted) is dispatched at
once; other events on one path (a write under way, often several) are coalesced until the path
has been quiet for a short window;
editor temp and swap files and hidden folders are ignored. The task only names the path — it
reads the file's state when it runs — so a missed, duplicated or reordered event is harmless,
and the reconcile (sent at start-up and on beat's schedule) repairs anything missed entirely.
A dispatch that fails (Redis down) is kept and retried, never dropped.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer

from worker.documents.libraries import libraries
from worker.documents.library import FolderLibrary
from worker.settings import Settings
from worker.task_names import INGEST_AUDIT_FILE, SYNC_DOCUMENT, SYNC_FOLDER, SYNC_GLOSSARY
from worker.warehouse.audit_folder import folder_files, is_audit_log

log = logging.getLogger(__name__)

TICK = 0.02
RETRY_DELAY = 1.0

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


class LibraryHandler(FileSystemEventHandler):
    def __init__(self, library: FolderLibrary, coalescer: Coalescer) -> None:
        self.library = library
        self.coalescer = coalescer

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.event_type in READ_ONLY_EVENTS:
            return
        paths = [event.src_path]
        if event.event_type == "moved":
            paths.append(event.dest_path)
        for raw in paths:
            path = Path(raw.decode() if isinstance(raw, bytes) else raw)
            if event.is_directory:
                relfolder = self.library.folder_relpath(path)
                if relfolder is not None and event.event_type in ("created", "deleted", "moved"):
                    self.coalescer.add(Job(SYNC_FOLDER, (self.library.name, relfolder)))
            else:
                relpath = self.library.relpath(path)
                if relpath is not None:
                    self.coalescer.add(Job(SYNC_DOCUMENT, (self.library.name, relpath)), settled=event.event_type in SETTLED_EVENTS)


class AuditFolderHandler(FileSystemEventHandler):
    """Exported audit-log files: each new or changed file is ingested (again: job ids count once)."""

    def __init__(self, coalescer: Coalescer) -> None:
        self.coalescer = coalescer

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.is_directory or event.event_type not in ("created", "modified", "closed", "moved"):
            return
        raw = event.dest_path if event.event_type == "moved" else event.src_path
        path = Path(raw.decode() if isinstance(raw, bytes) else raw)
        if is_audit_log(path):
            self.coalescer.add(Job(INGEST_AUDIT_FILE, (str(path),)), settled=event.event_type in SETTLED_EVENTS)


class GlossaryHandler(FileSystemEventHandler):
    """The glossary file, watched through its folder (editors replace files rather than write them)."""

    def __init__(self, path: Path, coalescer: Coalescer) -> None:
        self.path = path
        self.coalescer = coalescer

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.event_type in READ_ONLY_EVENTS:  # the sync reading the file must not trigger another sync
            return
        touched = [event.src_path] + ([event.dest_path] if event.event_type == "moved" else [])
        if any(Path(raw.decode() if isinstance(raw, bytes) else raw) == self.path for raw in touched):
            self.coalescer.add(Job(SYNC_GLOSSARY, ()), settled=event.event_type in SETTLED_EVENTS)


class Watchers:
    """Observers on every library and the audit-log folder, and the thread that sends due jobs."""

    def __init__(self, settings: Settings, send: Callable[[Job], None]) -> None:
        # a folder is watched here; a bucket reports its changes through Pub/Sub (`lakegraph subscribe`)
        self.libraries = [library for library in libraries(settings) if isinstance(library, FolderLibrary)]
        self.audit_folder = settings.audit_log_path
        glossary = settings.warehouse.glossary_path
        self.glossary = Path(glossary).resolve() if glossary else None
        self.coalescer = Coalescer(settings.documents.coalesce_ms / 1000)
        self.send = send
        self.observer = Observer()
        self.stopping = threading.Event()
        self.sent = 0

    def start(self) -> None:
        for library in self.libraries:
            library.root.mkdir(parents=True, exist_ok=True)
            self.observer.schedule(LibraryHandler(library, self.coalescer), str(library.root), recursive=True)
        self.audit_folder.mkdir(parents=True, exist_ok=True)
        self.observer.schedule(AuditFolderHandler(self.coalescer), str(self.audit_folder), recursive=True)
        if self.glossary is not None:
            self.glossary.parent.mkdir(parents=True, exist_ok=True)
            self.observer.schedule(GlossaryHandler(self.glossary, self.coalescer), str(self.glossary.parent), recursive=False)
        self.observer.start()

    def existing_audit_files(self) -> list[Job]:
        """Files already in the audit folder at start-up (ingesting them again is harmless)."""
        return [Job(INGEST_AUDIT_FILE, (str(path),)) for path in folder_files(self.audit_folder)]

    def run(self) -> None:
        """Dispatch due jobs until stop(); a failed dispatch is retried after RETRY_DELAY."""
        while not self.stopping.wait(TICK):
            for job in self.coalescer.due():
                try:
                    self.send(job)
                    self.sent += 1
                except Exception as err:  # the broker is down: keep the job, try again shortly
                    log.warning("could not enqueue %s (%s); retrying", job, err)
                    self.coalescer.add(job, delay=RETRY_DELAY)

    def stop(self) -> None:
        """Stop watching, then send what is still pending (what cannot be sent, reconcile repairs)."""
        self.stopping.set()
        self.observer.stop()
        self.observer.join(timeout=5)
        for job in self.coalescer.due(everything=True):
            try:
                self.send(job)
                self.sent += 1
            except Exception as err:
                log.warning("could not enqueue %s at shutdown (%s); the next reconcile repairs it", job, err)
