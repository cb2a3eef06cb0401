"""The watcher process (`lakegraph watch`, `python -m worker.watch` under `lakegraph up`): every
library root, the audit-log folder and the glossary file watched, file events in, task names out.

A change seen complete (a file closed after writing, renamed into place, deleted) is dispatched at
once; other events on one path (a write under way, often several) are coalesced until the path
has been quiet for a short window; editor temp and swap files and hidden folders are ignored. The
task only names the path — it reads the file's state when it runs — so a missed, duplicated or
reordered event is harmless, and the reconcile (sent at start-up and on beat's schedule) repairs
anything missed entirely. A dispatch that fails (Redis down) is kept and retried, never dropped.

It imports only the sources' event handlers, the settings and a Celery client; the graph,
warehouse and shapes code stays in the worker, so this process stays small."""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Callable
from pathlib import Path

from watchdog.observers import Observer

from worker.celery_app import create_app
from worker.documents.file_events import LibraryHandler
from worker.documents.libraries import libraries
from worker.documents.library import FolderLibrary
from worker.settings import Settings, load_settings
from worker.task_names import RECONCILE_DOCUMENTS, SYNC_GLOSSARY
from worker.warehouse.audit_folder import AuditFolderHandler, existing_files
from worker.warehouse.glossary_file import GlossaryHandler
from worker.watching import WATCHING, Coalescer, Job

log = logging.getLogger(__name__)

TICK = 0.02
RETRY_DELAY = 1.0


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
        self.observer.schedule(AuditFolderHandler(self.coalescer, self.audit_folder), str(self.audit_folder), recursive=True)
        if self.glossary is not None:
            self.glossary.parent.mkdir(parents=True, exist_ok=True)
            self.observer.schedule(GlossaryHandler(self.glossary, self.coalescer), str(self.glossary.parent), recursive=False)
        self.observer.start()

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


def run(settings: Settings, say: Callable[[str], None]) -> None:
    """Watch the document libraries and the audit-log folder until SIGINT/SIGTERM."""
    app = create_app(settings)

    def send(job: Job) -> None:
        app.send_task(job.task, args=list(job.args))

    watchers = Watchers(settings, send)
    watchers.start()
    app.send_task(RECONCILE_DOCUMENTS)  # repair whatever changed while nobody watched
    for job in existing_files(watchers.audit_folder):
        send(job)
    if watchers.glossary is not None:
        app.send_task(SYNC_GLOSSARY)
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: watchers.stopping.set())
    names = [f"{library.name} ({library.root})" for library in watchers.libraries]
    say(f"{WATCHING} {', '.join([*names, f'audit logs ({watchers.audit_folder})'])}")
    watchers.run()
    watchers.stop()
    say(f"stopped after sending {watchers.sent} task(s)")


if __name__ == "__main__":
    run(load_settings(), lambda line: print(line, flush=True))
