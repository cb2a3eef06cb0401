"""Connectors: DuckDB (the local warehouse) and BigQuery, read through their information schemas
(PostgreSQL's and MySQL's: worker/warehouse/postgres.py, mysql.py).

The BigQuery queries select only columns that both BigQuery and the local emulator provide.
A composite foreign key is rebuilt in order: KEY_COLUMN_USAGE gives each referencing column's
`position_in_unique_constraint`, which indexes the referenced table's primary key columns.
"""

from __future__ import annotations

import json
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import duckdb
from google.cloud import bigquery

from worker.exceptions import EngineUnavailable, LakegraphError
from worker.settings import Settings
from worker.shared.duckdb_read import open_read_only
from worker.shared.google_clients import bigquery_client
from worker.warehouse.schema_snapshot import (
    ColumnInfo,
    Connector,
    ForeignKey,
    Snapshot,
    TableInfo,
)

DUCKDB_SCHEMAS = "SELECT schema_name FROM duckdb_schemas() WHERE NOT internal AND database_name = current_database() ORDER BY 1"
DUCKDB_TABLES = """
SELECT table_name, 'TABLE' AS kind, comment, NULL AS view_sql FROM duckdb_tables()
WHERE database_name = current_database() AND schema_name = $schema AND ($table IS NULL OR table_name = $table)
UNION ALL
SELECT view_name, 'VIEW', comment, sql FROM duckdb_views()
WHERE NOT internal AND database_name = current_database() AND schema_name = $schema AND ($table IS NULL OR view_name = $table)
ORDER BY 1
"""
DUCKDB_COLUMNS = """
SELECT table_name, column_name, data_type, column_index, is_nullable, comment FROM duckdb_columns()
WHERE database_name = current_database() AND schema_name = $schema AND ($table IS NULL OR table_name = $table)
ORDER BY table_name, column_index
"""
DUCKDB_CONSTRAINTS = """
SELECT table_name, constraint_type, constraint_column_names, referenced_table, referenced_column_names, constraint_name
FROM duckdb_constraints()
WHERE database_name = current_database() AND schema_name = $schema AND ($table IS NULL OR table_name = $table)
  AND constraint_type IN ('PRIMARY KEY', 'FOREIGN KEY')
"""


class DuckDBConnector:
    """The local warehouse file, opened read-only for each read so writers are never blocked long."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.database = path.stem

    @property
    def lists_all_schemas(self) -> bool:
        """The file's schemas are the whole database; a missing file says nothing (never prune on it)."""
        return self.path.exists()

    def _connect(self) -> duckdb.DuckDBPyConnection:
        if not self.path.exists():
            raise LakegraphError(f"no DuckDB warehouse at {self.path} (warehouse.duckdb_path)")
        try:
            return open_read_only(self.path)
        except duckdb.IOException as err:
            raise EngineUnavailable(f"cannot open {self.path}: {err}") from None

    def schemas(self) -> list[str]:
        if not self.path.exists():  # the local default before any warehouse exists: nothing to read yet
            return []
        with self._connect() as con:
            return [row[0] for row in con.execute(DUCKDB_SCHEMAS).fetchall() if row[0] != "information_schema"]

    def snapshot(self, schema: str, table: str | None = None) -> Snapshot:
        params = {"schema": schema, "table": table}
        with self._connect() as con:
            tables = con.execute(DUCKDB_TABLES, params).fetchall()
            columns = con.execute(DUCKDB_COLUMNS, params).fetchall()
            constraints = con.execute(DUCKDB_CONSTRAINTS, params).fetchall()
        keys = {(row[0], column) for row in constraints if row[1] == "PRIMARY KEY" for column in row[2]}
        by_table: dict[str, list[ColumnInfo]] = defaultdict(list)
        for table_name, name, data_type, position, nullable, comment in columns:
            by_table[table_name].append(ColumnInfo(name, data_type, position, bool(nullable), comment or None, (table_name, name) in keys))
        infos = tuple(
            TableInfo(self.database, schema, name, kind, comment or None, view_sql, tuple(by_table[name])) for name, kind, comment, view_sql in tables
        )
        prefix = f"{self.database}.{schema}."
        foreign = tuple(ForeignKey(row[5], prefix + row[0], tuple(row[2]), prefix + row[3], tuple(row[4])) for row in constraints if row[1] == "FOREIGN KEY")
        return Snapshot(self.database, schema, infos, foreign, table)


BQ_SCHEMATA = "SELECT schema_name FROM `{project}`.INFORMATION_SCHEMA.SCHEMATA ORDER BY schema_name"
BQ_TABLES = """
SELECT table_name, table_type FROM `{dataset}`.INFORMATION_SCHEMA.TABLES
WHERE @table IS NULL OR table_name = @table
"""
BQ_TABLE_DESCRIPTIONS = """
SELECT table_name, option_value FROM `{dataset}`.INFORMATION_SCHEMA.TABLE_OPTIONS
WHERE option_name = 'description' AND (@table IS NULL OR table_name = @table)
"""
BQ_VIEWS = """
SELECT table_name, view_definition FROM `{dataset}`.INFORMATION_SCHEMA.VIEWS
WHERE @table IS NULL OR table_name = @table
"""
BQ_COLUMNS = """
SELECT table_name, column_name, ordinal_position, is_nullable, data_type FROM `{dataset}`.INFORMATION_SCHEMA.COLUMNS
WHERE @table IS NULL OR table_name = @table
"""
BQ_FIELD_PATHS = """
SELECT table_name, column_name, field_path, data_type, description FROM `{dataset}`.INFORMATION_SCHEMA.COLUMN_FIELD_PATHS
WHERE @table IS NULL OR table_name = @table
"""
BQ_KEY_COLUMNS = """
SELECT c.constraint_name, c.constraint_type, c.table_name, k.column_name, k.ordinal_position, k.position_in_unique_constraint
FROM `{dataset}`.INFORMATION_SCHEMA.TABLE_CONSTRAINTS AS c
JOIN `{dataset}`.INFORMATION_SCHEMA.KEY_COLUMN_USAGE AS k
  ON k.constraint_name = c.constraint_name AND k.table_name = c.table_name
WHERE c.constraint_type IN ('PRIMARY KEY', 'FOREIGN KEY')
"""
BQ_REFERENCED = """
SELECT constraint_name, table_catalog, table_schema, table_name
FROM `{dataset}`.INFORMATION_SCHEMA.CONSTRAINT_COLUMN_USAGE
"""


class BigQueryConnector:
    def __init__(self, client: bigquery.Client, project: str, datasets: list[str]) -> None:
        self.client = client
        self.database = project
        self.datasets = datasets
        self.lists_all_schemas = not datasets

    def _rows(self, sql: str, dataset: str | None = None, table: str | None = None) -> list[dict]:
        config = bigquery.QueryJobConfig(query_parameters=[bigquery.ScalarQueryParameter("table", "STRING", table)])
        text = sql.format(project=self.database, dataset=f"{self.database}.{dataset}" if dataset else "")
        try:
            return [dict(row) for row in self.client.query(text, job_config=config).result()]
        except Exception as err:  # google.api_core errors: a down endpoint or a refused query
            raise EngineUnavailable(f"BigQuery query failed ({type(err).__name__}: {str(err).splitlines()[0][:200]})") from None

    def schemas(self) -> list[str]:
        if self.datasets:
            return list(self.datasets)
        return [row["schema_name"] for row in self._rows(BQ_SCHEMATA)]

    def snapshot(self, schema: str, table: str | None = None) -> Snapshot:
        # The seven reads are independent: run them at once (a table event is then one round trip).
        reads = {
            "tables": (BQ_TABLES, table),
            "descriptions": (BQ_TABLE_DESCRIPTIONS, table),
            "views": (BQ_VIEWS, table),
            "columns": (BQ_COLUMNS, table),
            "paths": (BQ_FIELD_PATHS, table),
            "keys": (BQ_KEY_COLUMNS, None),  # every table's keys: a foreign key may point at another table
            "referenced": (BQ_REFERENCED, None),
        }
        with ThreadPoolExecutor(max_workers=len(reads)) as pool:
            futures = {name: pool.submit(self._rows, sql, schema, scope) for name, (sql, scope) in reads.items()}
            found = {name: future.result() for name, future in futures.items()}
        tables, columns, paths, keys = found["tables"], found["columns"], found["paths"], found["keys"]
        descriptions = {row["table_name"]: _option_string(row["option_value"]) for row in found["descriptions"]}
        views = {row["table_name"]: row["view_definition"] for row in found["views"]}
        referenced = {row["constraint_name"]: row for row in found["referenced"]}

        primary: defaultdict[str, dict[int, str]] = defaultdict(dict)  # table -> ordinal -> column
        for row in keys:
            if row["constraint_type"] == "PRIMARY KEY":
                primary[row["table_name"]][row["ordinal_position"]] = row["column_name"]
        column_descriptions = {(row["table_name"], row["field_path"]): row["description"] for row in paths}
        by_table: dict[str, list[ColumnInfo]] = defaultdict(list)
        for row in sorted(columns, key=lambda row: (row["table_name"], row["ordinal_position"])):
            name = row["column_name"]
            by_table[row["table_name"]].append(
                ColumnInfo(
                    name,
                    row["data_type"],
                    row["ordinal_position"],
                    row["is_nullable"] == "YES",
                    column_descriptions.get((row["table_name"], name)),
                    name in primary[row["table_name"]].values(),
                )
            )
        for row in paths:
            if "." in row["field_path"]:
                position = len(by_table[row["table_name"]]) + 1
                by_table[row["table_name"]].append(
                    ColumnInfo(
                        row["field_path"],
                        row["data_type"],
                        position,
                        True,
                        row["description"],
                        False,
                        nested=True,
                    )
                )
        infos = tuple(
            TableInfo(
                self.database,
                schema,
                row["table_name"],
                "VIEW" if row["table_type"] == "VIEW" else "TABLE",
                descriptions.get(row["table_name"]),
                views.get(row["table_name"]),
                tuple(by_table[row["table_name"]]),
            )
            for row in sorted(tables, key=lambda row: row["table_name"])
        )
        return Snapshot(self.database, schema, infos, self._foreign_keys(schema, table, keys, referenced, primary), table)

    def _foreign_keys(self, schema: str, table: str | None, keys: list[dict], referenced: dict, primary: dict) -> tuple[ForeignKey, ...]:
        grouped: dict[tuple[str, str], list[dict]] = defaultdict(list)
        for row in keys:
            if row["constraint_type"] == "FOREIGN KEY" and (table is None or row["table_name"] == table):
                grouped[(row["table_name"], row["constraint_name"])].append(row)
        found = []
        for (table_name, name), rows in sorted(grouped.items()):
            target = referenced.get(name)
            if target is None:
                continue
            rows.sort(key=lambda row: row["ordinal_position"])
            target_key = primary.get(target["table_name"], {})
            ref_columns = tuple(target_key.get(row["position_in_unique_constraint"], "") for row in rows)
            found.append(
                ForeignKey(
                    name,
                    f"{self.database}.{schema}.{table_name}",
                    tuple(row["column_name"] for row in rows),
                    f"{target['table_catalog']}.{target['table_schema']}.{target['table_name']}",
                    ref_columns,
                )
            )
        return tuple(found)


def _option_string(value: str | None) -> str | None:
    """TABLE_OPTIONS holds string options as SQL string literals: "text"."""
    if value is None:
        return None
    try:
        return json.loads(value)
    except ValueError:
        return value.strip('"')


def connector(settings: Settings) -> Connector:
    conf = settings.warehouse
    if conf.engine == "duckdb":
        return DuckDBConnector(settings.duckdb_file)
    if conf.engine == "postgres":
        from worker.warehouse.postgres import PostgresConnector

        return PostgresConnector(conf.url.get_secret_value(), list(conf.schemas))
    if conf.engine == "mysql":
        from worker.warehouse.mysql import MySQLConnector

        return MySQLConnector(conf.url.get_secret_value(), list(conf.schemas))
    return BigQueryConnector(bigquery_client(settings), conf.bigquery_project, list(conf.bigquery_datasets))
