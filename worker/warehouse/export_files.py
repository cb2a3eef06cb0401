"""An engine's export file into the graph: a query history absorbed in the engine's dialect against
its tables alone; a schema export (with every other one of its folder) written as whole schemas,
searchable, then the queries that waited for those tables credited."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

from worker.shared.changes import Change
from worker.warehouse.export_engines import ExportedEngine, is_export
from worker.warehouse.exports import (
    ExportError,
    SchemaRows,
    columns_of,
    kind_of,
    query_events,
    read_rows,
    snapshots,
)
from worker.warehouse.query_graph import QueryGraph
from worker.warehouse.sync import SOURCE, WarehouseSync

Poison = list[tuple[str, str]]  # (where in the file, reason)


def ingest(path: Path, engine: ExportedEngine, warehouse: WarehouseSync) -> tuple[dict, Poison]:
    """The file's report, and what of it was skipped and why."""
    try:
        kind = kind_of(columns_of(path), engine)
    except ExportError as err:
        return {"engine": engine.name, "kind": None}, [("file", str(err))]
    queries = QueryGraph(warehouse.driver, warehouse.database, engine.dialect, warehouse.announce, engine=engine.name)
    if kind == "queries":
        found = query_events(read_rows(path), engine)
        report = asdict(queries.absorb(found.events)) if found.events else {}
        counts = {"statements": len(found.events), "unfinished": found.unfinished, "not_data": found.not_data}
        return {"engine": engine.name, "kind": kind, **counts, **report}, found.poison
    rows, poison = schema_rows(warehouse.settings.audit_log_path / engine.name, engine)
    schemas = snapshots(rows, engine)
    written = {f"{snapshot.database}.{snapshot.schema}": asdict(warehouse.writer.apply(snapshot)) for snapshot in schemas}
    for snapshot in schemas:  # a key into a schema written after its own: its columns exist now
        if snapshot.keys_outward:
            written[f"{snapshot.database}.{snapshot.schema}"]["keys"] = warehouse.writer.apply(snapshot).keys
    warehouse.announce(Change(SOURCE))
    warehouse.search.refresh(sorted(written))
    relearned = asdict(queries.relearn())
    return {"engine": engine.name, "kind": kind, "schemas": written, "query_log": relearned}, [("file", why) for where, why in poison if where == path]


def schema_rows(folder: Path, engine: ExportedEngine) -> tuple[SchemaRows, list[tuple[Path, str]]]:
    """Every schema export in the engine's folder, read together: a table's comment may come in the
    tables export and its columns in another. A file no reader can read is skipped by name."""
    rows, poison = SchemaRows(), []  # (file, reason)
    for path in sorted(folder.rglob("*")):
        if not is_export(path) or not path.is_file():
            continue
        try:
            kind = kind_of(columns_of(path), engine)
            if kind != "queries":
                rows.add(kind, read_rows(path))
        except ExportError as err:
            poison.append((path, str(err)))
    return rows, poison
