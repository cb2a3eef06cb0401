"""The audit-log folder: exported LogEntries as .json (one entry or a list) or .ndjson/.jsonl.

Re-reading a file is harmless (every job id counts once), so the watcher simply asks for the
file again whenever it changes; a line or entry that is not a LogEntry is reported, not fatal.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from worker.warehouse.audit_log import AuditLogError, Event, parse_entry

SUFFIXES = (".json", ".ndjson", ".jsonl")


@dataclass
class FileEvents:
    events: list[Event] = field(default_factory=list)
    poison: list[tuple[str, str]] = field(default_factory=list)  # (where in the file, reason)


def read(path: Path) -> FileEvents:
    found = FileEvents()
    text = path.read_text(encoding="utf-8", errors="replace")
    if path.suffix == ".json":
        try:
            data = json.loads(text)
        except ValueError as err:
            found.poison.append(("file", f"not JSON: {err}"))
            return found
        entries = list(enumerate(data if isinstance(data, list) else [data], start=1))
    else:
        entries = []
        for number, line in enumerate(text.splitlines(), start=1):
            if line.strip():
                try:
                    entries.append((number, json.loads(line)))
                except ValueError as err:
                    found.poison.append((f"line {number}", f"not JSON: {err}"))
    for where, entry in entries:
        try:
            found.events.append(parse_entry(entry))
        except AuditLogError as err:
            found.poison.append((f"entry {where}", str(err)))
    return found
