"""The watcher process (`lakegraph watch`, `python -m worker.watch` under `lakegraph up`): file
events in, task names out. It imports only the watcher, the settings and a Celery client; the
graph, warehouse and shapes code stays in the worker, so this process stays small."""

from __future__ import annotations

import signal
from collections.abc import Callable

from worker.celery_app import create_app
from worker.documents.watcher import WATCHING, Job, Watchers
from worker.settings import Settings, load_settings
from worker.task_names import RECONCILE_DOCUMENTS, SYNC_GLOSSARY


def run(settings: Settings, say: Callable[[str], None]) -> None:
    """Watch the document libraries and the audit-log folder until SIGINT/SIGTERM."""
    app = create_app(settings)

    def send(job: Job) -> None:
        app.send_task(job.task, args=list(job.args))

    watchers = Watchers(settings, send)
    watchers.start()
    app.send_task(RECONCILE_DOCUMENTS)  # repair whatever changed while nobody watched
    for job in watchers.existing_audit_files():
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
