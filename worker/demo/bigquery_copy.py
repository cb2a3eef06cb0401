"""Copy a DuckDB warehouse into BigQuery (the emulator, for `lakegraph demo --google`): each schema a
dataset, each table with its columns, descriptions and declared keys (NOT ENFORCED, as BigQuery
has them), then its rows. The schema is read through lakegraph's own DuckDB connector, so the
BigQuery side shows exactly what the local demo's graph holds."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import sqlglot.expressions as exp

from worker.shared.duckdb_read import open_read_only
from worker.warehouse.connectors import DuckDBConnector
from worker.warehouse.schema_snapshot import ForeignKey, TableInfo

if TYPE_CHECKING:
    import duckdb
    from google.cloud import bigquery

DIALECT = "bigquery"
ROWS_PER_INSERT = 500


def bigquery_type(duckdb_type: str) -> str:
    return exp.DataType.build(duckdb_type, dialect="duckdb").sql(DIALECT)


def create_table(table: TableInfo, keys: list[ForeignKey], dataset: str) -> str:
    parts = [f"`{column.name}` {bigquery_type(column.type)}{'' if column.nullable else ' NOT NULL'}" for column in table.columns]
    primary = [column.name for column in sorted(table.columns, key=lambda column: column.position) if column.is_primary_key]
    if primary:
        parts.append(f"PRIMARY KEY ({', '.join(primary)}) NOT ENFORCED")
    for key in keys:
        target = key.ref_table.rsplit(".", 1)[1]
        parts.append(f"FOREIGN KEY ({', '.join(key.columns)}) REFERENCES `{dataset}.{target}`({', '.join(key.ref_columns)}) NOT ENFORCED")
    options = f" OPTIONS(description={exp.convert(table.description).sql(DIALECT)})" if table.description else ""
    return f"CREATE TABLE `{dataset}.{table.name}` ({', '.join(parts)}){options}"


def referenced_first(tables: tuple[TableInfo, ...], keys: tuple[ForeignKey, ...]) -> list[TableInfo]:
    """Tables in an order where each comes after the tables its keys reference (BigQuery checks
    that a referenced table exists); a cycle or a self-reference keeps the remaining order."""
    ordered: list[TableInfo] = []
    placed: set[str] = set()
    waiting = list(tables)
    while waiting:
        ready = [t for t in waiting if all(k.ref_table in placed or k.ref_table == t.id for k in keys if k.table == t.id)] or waiting[:1]
        for table in ready:
            ordered.append(table)
            placed.add(table.id)
            waiting.remove(table)
    return ordered


def insert_statements(con: duckdb.DuckDBPyConnection, table: TableInfo, dataset: str) -> Iterator[tuple[str, int]]:
    """INSERTs of the table's rows, ROWS_PER_INSERT at a time, each with its row count."""
    names = [column.name for column in table.columns if not column.nested]
    selected = ", ".join(f'"{name}"' for name in names)
    cursor = con.execute(f'SELECT {selected} FROM "{table.schema}"."{table.name}"')
    while rows := cursor.fetchmany(ROWS_PER_INSERT):
        values = ", ".join("(" + ", ".join(exp.convert(value).sql(DIALECT) for value in row) + ")" for row in rows)
        yield f"INSERT INTO `{dataset}.{table.name}` ({', '.join(names)}) VALUES {values}", len(rows)


def copy_warehouse(duckdb_path: Path, client: bigquery.Client) -> dict[str, int]:
    """Make each schema of the DuckDB file a dataset of the client's project, replacing what was
    there; returns the rows copied per table."""
    source = DuckDBConnector(duckdb_path)
    copied: dict[str, int] = {}
    with open_read_only(duckdb_path) as con:
        for schema in source.schemas():
            snapshot = source.snapshot(schema)
            client.delete_dataset(schema, delete_contents=True, not_found_ok=True)
            client.create_dataset(schema)
            for table in referenced_first(snapshot.tables, snapshot.foreign_keys):
                if table.kind != "TABLE":
                    continue
                client.query(create_table(table, [k for k in snapshot.foreign_keys if k.table == table.id], schema)).result()
                copied[table.id] = 0
                for statement, rows in insert_statements(con, table, schema):
                    client.query(statement).result()
                    copied[table.id] += rows
    return copied
