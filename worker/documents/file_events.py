"""A document library's file events as tasks: a changed file syncs that document, a folder created,
deleted or moved syncs the folder (see `worker.watching`)."""

from __future__ import annotations

from watchdog.events import FileSystemEvent, FileSystemEventHandler

from worker.documents.library import FolderLibrary
from worker.task_names import SYNC_DOCUMENT, SYNC_FOLDER
from worker.watching import READ_ONLY_EVENTS, SETTLED_EVENTS, Coalescer, Job, event_path


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
            path = event_path(raw)
            if event.is_directory:
                relfolder = self.library.folder_relpath(path)
                if relfolder is not None and event.event_type in ("created", "deleted", "moved"):
                    self.coalescer.add(Job(SYNC_FOLDER, (self.library.name, relfolder)))
            else:
                relpath = self.library.relpath(path)
                if relpath is not None:
                    self.coalescer.add(Job(SYNC_DOCUMENT, (self.library.name, relpath)), settled=event.event_type in SETTLED_EVENTS)
