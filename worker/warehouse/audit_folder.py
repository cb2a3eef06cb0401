"""Which files of the audit-log folder are audit logs, and the folder's file events as tasks. Kept
apart from reading them, so the watcher can tell without importing the warehouse and graph code."""

from __future__ import annotations

from pathlib import Path

from watchdog.events import FileSystemEvent, FileSystemEventHandler

from worker.task_names import INGEST_AUDIT_FILE
from worker.warehouse.export_engines import engine_of, is_export
from worker.watching import SETTLED_EVENTS, Coalescer, Job, event_path

SUFFIXES = (".json", ".ndjson", ".jsonl")


def is_audit_log(path: Path, folder: Path) -> bool:
    """A file of LogEntries, or an export in an engine's subfolder (`snowflake/`, `databricks/`)."""
    if engine_of(path, folder) is not None:
        return is_export(path)
    return path.suffix in SUFFIXES and not path.name.startswith(".")


def folder_files(folder: Path) -> list[Path]:
    """The audit-log folder's files in name order, hidden files skipped (a query history read before
    its engine's schema export waits for its tables, and is credited when they are written)."""
    if not folder.is_dir():
        return []
    return [path for path in sorted(folder.rglob("*")) if is_audit_log(path, folder) and path.is_file()]


class AuditFolderHandler(FileSystemEventHandler):
    """Exported audit-log files: each new or changed file is ingested (again: job ids count once)."""

    def __init__(self, coalescer: Coalescer, folder: Path) -> None:
        self.coalescer = coalescer
        self.folder = folder

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.is_directory or event.event_type not in ("created", "modified", "closed", "moved"):
            return
        raw = event.dest_path if event.event_type == "moved" else event.src_path
        path = event_path(raw)
        if is_audit_log(path, self.folder):
            self.coalescer.add(Job(INGEST_AUDIT_FILE, (str(path),)), settled=event.event_type in SETTLED_EVENTS)


def existing_files(folder: Path) -> list[Job]:
    """Files already in the folder when watching starts (ingesting them again is harmless)."""
    return [Job(INGEST_AUDIT_FILE, (str(path),)) for path in folder_files(folder)]
