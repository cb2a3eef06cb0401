"""Which files of the audit-log folder are audit logs. Kept apart from reading them, so the watcher
can tell without importing the warehouse and graph code."""

from __future__ import annotations

from pathlib import Path

SUFFIXES = (".json", ".ndjson", ".jsonl")


def is_audit_log(path: Path) -> bool:
    return path.suffix in SUFFIXES and not path.name.startswith(".")


def folder_files(folder: Path) -> list[Path]:
    """The audit-log files in a folder, in name order (hidden files skipped)."""
    if not folder.is_dir():
        return []
    return [path for path in sorted(folder.rglob("*")) if is_audit_log(path) and path.is_file()]
