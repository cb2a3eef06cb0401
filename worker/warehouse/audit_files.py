"""The audit-log folder: exported LogEntries as .json (one entry or a list) or .ndjson/.jsonl, and
in its `snowflake/` and `databricks/` subfolders those engines' exports (worker/warehouse/export_files.py).

Re-reading a file is harmless (every job id counts once), so the watcher simply asks for the
file again whenever it changes; a line or entry that is not a LogEntry is reported, not fatal.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from worker import problems
from worker.task_names import INGEST_AUDIT_FILE
from worker.warehouse import export_files
from worker.warehouse.audit_log import (
    AuditLogError,
    Event,
    QueryEvent,
    TableEvent,
    parse_entry,
)
from worker.warehouse.export_engines import engine_of
from worker.warehouse.query_graph import QueryGraph
from worker.warehouse.sync import SOURCE, WarehouseSync


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


def ingest(path: Path, queries: QueryGraph, warehouse: WarehouseSync) -> dict:
    """A file of the audit-log folder: exported LogEntries, or in an engine's subfolder that
    engine's exports (worker/warehouse/exports.py); its bad entries or rows recorded."""
    engine = engine_of(path, warehouse.settings.audit_log_path)
    if engine is not None:
        report, poison = export_files.ingest(path, engine, warehouse)
        skipped(warehouse, path, poison)
        return {**report, "poison": len(poison)}
    found = read(path)
    skipped(warehouse, path, found.poison)
    batch = [event for event in found.events if isinstance(event, QueryEvent)]
    report = asdict(queries.absorb(batch)) if batch else {}
    project = warehouse.settings.warehouse.bigquery_project
    tables = [event for event in found.events if isinstance(event, TableEvent) and (not project or event.project == project)]
    for event in tables:
        warehouse.sync_table(event.dataset, event.table)
    return {**report, "tables": len(tables), "poison": len(found.poison), "entries": len(found.events)}


def skipped(warehouse: WarehouseSync, path: Path, poison: list[tuple[str, str]]) -> None:
    """What of a file was skipped, recorded as the file's one problem (cleared when none is)."""
    key = f"file:{path}"
    problems.clear(warehouse.driver, warehouse.database, SOURCE, key, ("skipped",))
    if poison:
        reason = "; ".join(f"{place}: {why}" for place, why in poison[:20])
        problems.record(warehouse.driver, warehouse.database, SOURCE, key, "skipped", reason, INGEST_AUDIT_FILE, [str(path)])
