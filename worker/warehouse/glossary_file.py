"""The glossary file's events as tasks: any change to the file syncs the glossary."""

from __future__ import annotations

from pathlib import Path

from watchdog.events import FileSystemEvent, FileSystemEventHandler

from worker.task_names import SYNC_GLOSSARY
from worker.watching import READ_ONLY_EVENTS, SETTLED_EVENTS, Coalescer, Job, event_path


class GlossaryHandler(FileSystemEventHandler):
    """The glossary file, watched through its folder (editors replace files rather than write them)."""

    def __init__(self, path: Path, coalescer: Coalescer) -> None:
        self.path = path
        self.coalescer = coalescer

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.event_type in READ_ONLY_EVENTS:  # the sync reading the file must not trigger another sync
            return
        touched = [event.src_path] + ([event.dest_path] if event.event_type == "moved" else [])
        if any(event_path(raw) == self.path for raw in touched):
            self.coalescer.add(Job(SYNC_GLOSSARY, ()), settled=event.event_type in SETTLED_EVENTS)
