"""Which engines' exports the audit-log folder takes, and how each names its query history's
columns (worker/warehouse/exports.py reads them). Kept apart from reading, so the watcher can tell
an export without importing DuckDB."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

SUFFIXES = (".csv", ".json", ".ndjson", ".jsonl", ".parquet")


@dataclass(frozen=True)
class ExportedEngine:
    """One engine's export conventions: its SQL dialect and its query history's columns."""

    name: str
    dialect: str
    query_id: str
    query_text: str
    user: str
    status: str
    succeeded: frozenset[str]
    failed: frozenset[str]  # other statuses: not finished yet, left for a later export
    query_type: str
    # Statement types that read or write tables; the others (SHOW, USE, GRANT, ...) teach no join.
    data_statements: frozenset[str]
    # The columns naming the session's database and schema a query ran in, where the history has them.
    session: tuple[str, str] | None = None


ENGINES = {
    engine.name: engine
    for engine in (
        ExportedEngine(
            name="snowflake",
            dialect="snowflake",
            query_id="query_id",
            query_text="query_text",
            user="user_name",
            status="execution_status",
            succeeded=frozenset({"SUCCESS"}),
            failed=frozenset({"FAIL", "FAILED_WITH_ERROR", "FAILED_WITH_INCIDENT", "INCIDENT"}),
            query_type="query_type",
            data_statements=frozenset(
                {"SELECT", "INSERT", "UPDATE", "DELETE", "MERGE", "CREATE_TABLE_AS_SELECT", "CREATE_VIEW", "UNLOAD", "MULTI_TABLE_INSERT"}
            ),
            session=("database_name", "schema_name"),
        ),
        ExportedEngine(
            name="databricks",
            dialect="databricks",
            query_id="statement_id",
            query_text="statement_text",
            user="executed_by",
            status="execution_status",
            succeeded=frozenset({"FINISHED"}),
            failed=frozenset({"FAILED", "CANCELED"}),
            query_type="statement_type",
            data_statements=frozenset({"SELECT", "INSERT", "UPDATE", "DELETE", "MERGE", "CREATE", "CREATE_TABLE_AS_SELECT", "REPLACE", "COPY"}),
        ),
    )
}


def engine_of(path: Path, folder: Path) -> ExportedEngine | None:
    """The engine whose subfolder of the audit-log folder holds `path`, if any."""
    inside = Path(os.path.abspath(path))
    if not inside.is_relative_to(os.path.abspath(folder)):
        return None
    parts = inside.relative_to(os.path.abspath(folder)).parts
    return ENGINES.get(parts[0]) if len(parts) > 1 else None


def is_export(path: Path) -> bool:
    """A file an export reader takes (by its suffix), hidden files aside."""
    return path.suffix.lower() in SUFFIXES and not path.name.startswith(".")
