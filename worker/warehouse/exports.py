"""Snowflake and Databricks from their exports: query history and information schema as files.

A warehouse lakegraph cannot read live still leaves its traces: Snowflake's
`ACCOUNT_USAGE.QUERY_HISTORY` and `INFORMATION_SCHEMA.COLUMNS` / `TABLES`, Databricks'
`system.query.history` and `information_schema.columns` / `tables`, exported as CSV (with a
header), JSON (an array or one object per line) or Parquet into the audit-log folder's
`snowflake/` or `databricks/` subfolder. Each file is told by its columns (the views' documented
names, in any case): a query history becomes query events parsed in the engine's dialect, against
that engine's tables only; a schema export makes the graph match the schemas it lists (every
schema export of the folder read together, so tables and their comments may come in separate
files). Rows that are not what their file says are counted and reported, never fatal; re-reading
a file is harmless (each query id counts once).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import duckdb
from sqlglot import exp

from worker.exceptions import first_line
from worker.warehouse.audit_log import QueryEvent
from worker.warehouse.export_engines import ExportedEngine
from worker.warehouse.export_keys import KeyRows, foreign_keys, primary_keys
from worker.warehouse.schema_snapshot import ColumnInfo, ForeignKey, Snapshot, TableInfo

Kind = Literal["queries", "columns", "tables", "imported_keys", "key_usage", "references", "constraints"]


WHEN = ("end_time", "start_time")  # a query counts at its end, else its start
TABLE_PATH = ("table_catalog", "table_schema", "table_name")
VIEW_TYPES = frozenset({"VIEW", "MATERIALIZED VIEW", "MATERIALIZED_VIEW", "STREAMING_TABLE"})


class ExportError(ValueError):
    """A file in an engine's folder that no export reader can read, or whose columns say no kind."""


def read_rows(path: Path) -> list[dict[str, Any]]:
    """The file's rows, keyed by lower-cased column names; DuckDB reads all three formats."""
    with _relation(path) as relation:
        names = [column.lower() for column in relation.columns]
        try:
            return [dict(zip(names, row, strict=True)) for row in relation.fetchall()]
        except duckdb.Error as err:
            raise ExportError(f"not a readable {path.suffix[1:]} export: {first_line(err)}") from None


def columns_of(path: Path) -> list[str]:
    """The file's column names, lower-cased, without reading its rows."""
    with _relation(path) as relation:
        return [column.lower() for column in relation.columns]


@contextmanager
def _relation(path: Path) -> Iterator[duckdb.DuckDBPyRelation]:
    """The file as a DuckDB relation, open while the block runs."""
    suffix = path.suffix.lower()
    with duckdb.connect() as con:
        try:
            if suffix == ".csv":
                relation = con.read_csv(str(path), header=True, all_varchar=True)
            elif suffix == ".parquet":
                relation = con.read_parquet(str(path))
            else:
                relation = con.read_json(str(path), format="auto")
        except duckdb.Error as err:
            raise ExportError(f"not a readable {suffix[1:]} export: {first_line(err)}") from None
        yield relation


def kind_of(columns: Iterable[str], engine: ExportedEngine) -> Kind:
    names = set(columns)
    if {engine.query_id, engine.query_text} <= names:
        return "queries"
    if {"fk_table_name", "fk_column_name", "pk_table_name", "pk_column_name"} <= names:
        return "imported_keys"
    if {"constraint_name", "unique_constraint_name"} <= names:
        return "references"
    if {*TABLE_PATH, "constraint_name", "column_name"} <= names:
        return "key_usage"
    if {*TABLE_PATH, "constraint_name", "constraint_type"} <= names:
        return "constraints"
    if {*TABLE_PATH, "column_name"} <= names:
        return "columns"
    if {*TABLE_PATH, "table_type"} <= names:
        return "tables"
    raise ExportError(
        f"columns {', '.join(sorted(names)[:12])} are none of {engine.name}'s exports: a query history "
        f"({engine.query_id}, {engine.query_text}), information_schema's columns, tables, key_column_usage, "
        "referential_constraints or table_constraints, or SHOW IMPORTED KEYS"
    )


@dataclass
class QueryRows:
    events: list[QueryEvent] = field(default_factory=list)
    unfinished: int = 0
    not_data: int = 0  # SHOW, USE, GRANT...: no table read or written
    poison: list[tuple[str, str]] = field(default_factory=list)


def query_events(rows: list[dict[str, Any]], engine: ExportedEngine) -> QueryRows:
    found = QueryRows()
    for number, row in enumerate(rows, start=1):
        query_id, text = row.get(engine.query_id), row.get(engine.query_text)
        if not query_id or not isinstance(text, str) or not text.strip():
            found.poison.append((f"row {number}", f"no {engine.query_id} or no {engine.query_text}"))
            continue
        status = str(row.get(engine.status) or next(iter(engine.succeeded))).upper()
        if status not in engine.succeeded | engine.failed:
            found.unfinished += 1
            continue
        statement = str(row.get(engine.query_type) or "").upper()
        if statement and statement not in engine.data_statements:
            found.not_data += 1
            continue
        try:
            at = timestamp(next((row[name] for name in WHEN if row.get(name)), None))
        except ValueError as err:
            found.poison.append((f"row {number}", str(err)))
            continue
        sql = in_session(text, row, engine)
        found.events.append(QueryEvent(f"{engine.name}:{query_id}", sql, str(row.get(engine.user) or ""), at, status in engine.failed, ()))
    return found


def in_session(text: str, row: dict[str, Any], engine: ExportedEngine) -> str:
    """The query preceded by the `USE` its session had made (Snowflake's DATABASE_NAME and
    SCHEMA_NAME), so its unqualified tables are read where it ran them — and the same text run
    in two schemas is two queries."""
    if engine.session is None:
        return text
    database, schema = (row.get(column) for column in engine.session)
    if not database:
        return text
    target = exp.table_(str(schema), db=str(database), quoted=True) if schema else exp.table_(str(database), quoted=True)
    use = exp.Use(kind=exp.var("SCHEMA" if schema else "DATABASE"), this=target)
    return f"{use.sql(engine.dialect)};\n{text}"


def timestamp(value: object) -> str:
    """An export's time as RFC 3339 in UTC (Snowflake writes `2024-05-01 09:30:00.123 -0700`; a
    time without an offset is taken as UTC)."""
    if value is None:
        raise ValueError("no start_time or end_time")
    if isinstance(value, datetime):
        moment = value
    else:
        text = str(value).strip().replace(" +", "+").replace(" -", "-")
        if len(text) > 5 and text[-5] in "+-" and text[-4:].isdigit():
            text = f"{text[:-2]}:{text[-2:]}"  # -0700 -> -07:00
        try:
            moment = datetime.fromisoformat(text)
        except ValueError:
            raise ValueError(f"not a time: {str(value)[:40]!r}") from None
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).astimezone(UTC).isoformat()


@dataclass
class SchemaRows:
    columns: list[dict[str, Any]] = field(default_factory=list)
    tables: list[dict[str, Any]] = field(default_factory=list)
    keys: KeyRows = field(default_factory=KeyRows)

    def add(self, kind: Kind, rows: list[dict[str, Any]]) -> None:
        """A schema export's rows, by its kind (a query history is not one)."""
        found = {"columns": self.columns, "tables": self.tables, "imported_keys": self.keys.imported, "key_usage": self.keys.usage}
        found |= {"references": self.keys.references, "constraints": self.keys.constraints}
        found[kind].extend(rows)


def snapshots(found: SchemaRows, engine: ExportedEngine) -> list[Snapshot]:
    """Every schema the exports list, each whole: its tables with their columns, kinds, comments and
    declared keys (a row of a dropped object, `deleted` set in Snowflake's ACCOUNT_USAGE views, is
    left out)."""
    primary = primary_keys(found.keys)
    tables: dict[tuple[str, str, str], dict[str, Any]] = {}
    columns: dict[tuple[str, str, str], list[ColumnInfo]] = defaultdict(list)
    for row in found.tables:
        if not row.get("deleted") and all(row.get(part) for part in TABLE_PATH):
            tables[_path(row)] = row
    for row in found.columns:
        if row.get("deleted") or not all(row.get(part) for part in (*TABLE_PATH, "column_name")):
            continue
        position = str(row.get("ordinal_position") or "")
        columns[_path(row)].append(
            ColumnInfo(
                name=str(row["column_name"]),
                type=str(row.get("data_type") or row.get("full_data_type") or ""),
                position=int(position) if position.isdigit() else len(columns[_path(row)]) + 1,
                nullable=str(row.get("is_nullable") or "YES").upper() in ("YES", "TRUE"),
                description=row.get("comment") or None,
                is_primary_key=(*_path(row), str(row["column_name"])) in primary,
            )
        )
    schemas: dict[tuple[str, str], list[TableInfo]] = defaultdict(list)
    for path in sorted(set(tables) | set(columns)):
        row = tables.get(path, {})
        kind = "VIEW" if str(row.get("table_type") or "").upper() in VIEW_TYPES else "TABLE"
        ordered = tuple(sorted(columns.get(path, []), key=lambda column: column.position))
        schemas[path[:2]].append(TableInfo(path[0], path[1], path[2], kind, row.get("comment") or None, columns=ordered))
    keys: dict[tuple[str, str], list[ForeignKey]] = defaultdict(list)
    for key in foreign_keys(found.keys):
        database, schema, _ = key.table.split(".", 2)
        keys[database, schema].append(key)
    return [
        Snapshot(database, schema, tuple(found_tables), tuple(keys.get((database, schema), ())), engine=engine.name)
        for (database, schema), found_tables in sorted(schemas.items())
    ]


def _path(row: dict[str, Any]) -> tuple[str, str, str]:
    return str(row["table_catalog"]), str(row["table_schema"]), str(row["table_name"])
