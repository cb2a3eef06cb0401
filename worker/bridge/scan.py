"""Distinct values of an identifier column, with how many rows carry each, within a budget.

DuckDB, PostgreSQL and MySQL read at most `bridge.max_rows` rows of the column (counts then cover those rows, and the
scan says it was cut). BigQuery bills a column's whole size whatever LIMIT says, so the scan is
dry-run first and a column over `bridge.max_bytes` is refused (the caller records it); the real
job runs with that cap as `maximum_bytes_billed`. Both keep the `max_values` values carrying the
most rows, and only values the `value_pattern` accepts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import duckdb

from worker.bridge.columns import IdentifierColumn
from worker.bridge.matcher import bridgeable
from worker.exceptions import EngineUnavailable, LakegraphError
from worker.settings import Settings
from worker.shared.duckdb_read import open_read_only

DUCKDB_VALUES = """
SELECT value, count(*) AS n FROM (SELECT CAST({column} AS VARCHAR) AS value FROM {table} LIMIT $max_rows)
WHERE value IS NOT NULL GROUP BY value ORDER BY n DESC, value LIMIT $max_values
"""
DUCKDB_ROWS_READ = "SELECT count(*) FROM (SELECT 1 FROM {table} LIMIT $max_rows)"
POSTGRES_VALUES = """
SELECT value, count(*) AS n FROM (SELECT {column}::text AS value FROM {table} LIMIT %(max_rows)s) AS scanned
WHERE value IS NOT NULL GROUP BY value ORDER BY n DESC, value LIMIT %(max_values)s
"""
# How many rows a server's scan read (PostgreSQL's and MySQL's drivers take the same parameter style).
SERVER_ROWS_READ = "SELECT count(*) FROM (SELECT 1 FROM {table} LIMIT %(max_rows)s) AS scanned"
MYSQL_VALUES = """
SELECT value, count(*) AS n FROM (SELECT CAST({column} AS CHAR) AS value FROM {table} LIMIT %(max_rows)s) AS scanned
WHERE value IS NOT NULL GROUP BY value ORDER BY n DESC, value LIMIT %(max_values)s
"""
BIGQUERY_VALUES = """
SELECT CAST({column} AS STRING) AS value, COUNT(*) AS n FROM {table}
WHERE {column} IS NOT NULL GROUP BY value ORDER BY n DESC, value LIMIT {max_values}
"""


@dataclass(frozen=True)
class ColumnValues:
    column: IdentifierColumn
    rows: dict[str, int] = field(default_factory=dict)  # value -> rows carrying it
    cut: bool = False  # the row budget stopped the scan: counts cover the rows read


class OverBudget(LakegraphError):
    """A column whose scan would cost more than the bridge's budget allows."""


def _quoted(name: str, quote: str) -> str:
    return quote + name.replace(quote, quote * 2) + quote


class ValueScanner:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.budget = settings.bridge
        self.pattern = re.compile(settings.bridge.value_pattern)

    def scan(self, column: IdentifierColumn) -> ColumnValues:
        if self.settings.warehouse.engine == "duckdb":
            rows, cut = self._duckdb(column)
        elif self.settings.warehouse.engine == "postgres":
            rows, cut = self._postgres(column)
        elif self.settings.warehouse.engine == "mysql":
            rows, cut = self._mysql(column)
        else:
            rows, cut = self._bigquery(column), False
        kept = {value: n for value, n in rows if self.pattern.match(value) and bridgeable(value)}
        return ColumnValues(column, kept, cut)

    def _duckdb(self, column: IdentifierColumn) -> tuple[list[tuple[str, int]], bool]:
        path = self.settings.duckdb_file
        table = _quoted(column.schema, '"') + "." + _quoted(column.table, '"')
        params = {"max_rows": self.budget.max_rows, "max_values": self.budget.max_values}
        try:
            with open_read_only(path) as con:
                found = con.execute(DUCKDB_VALUES.format(column=_quoted(column.column, '"'), table=table), params).fetchall()
                read = con.execute(DUCKDB_ROWS_READ.format(table=table), {"max_rows": self.budget.max_rows}).fetchone()
        except duckdb.IOException as err:
            raise EngineUnavailable(f"cannot open {path}: {err}") from None
        except duckdb.Error as err:
            raise LakegraphError(f"cannot read the values of {column.id}: {str(err).splitlines()[0]}") from None
        return [(str(value), int(n)) for value, n in found], bool(read and read[0] >= self.budget.max_rows)

    def _postgres(self, column: IdentifierColumn) -> tuple[list[tuple[str, int]], bool]:
        import psycopg

        from worker.shared.postgres_client import MARKER, connect

        table = _quoted(column.schema, '"') + "." + _quoted(column.table, '"')
        params = {"max_rows": self.budget.max_rows, "max_values": self.budget.max_values}
        with connect(self.settings.warehouse.url.get_secret_value()) as con:
            try:
                found = con.execute(MARKER + POSTGRES_VALUES.format(column=_quoted(column.column, '"'), table=table), params).fetchall()
                read = con.execute(MARKER + SERVER_ROWS_READ.format(table=table), params).fetchone()
            except psycopg.Error as err:
                raise LakegraphError(f"cannot read the values of {column.id}: {str(err).strip().splitlines()[0]}") from None
        return [(str(value), int(n)) for value, n in found], bool(read and read[0] >= self.budget.max_rows)

    def _mysql(self, column: IdentifierColumn) -> tuple[list[tuple[str, int]], bool]:
        import pymysql

        from worker.shared.mysql_client import connect

        table = _quoted(column.schema, "`") + "." + _quoted(column.table, "`")
        params = {"max_rows": self.budget.max_rows, "max_values": self.budget.max_values}
        with connect(self.settings.warehouse.url.get_secret_value()) as con, con.cursor() as cursor:
            try:
                cursor.execute(MYSQL_VALUES.format(column=_quoted(column.column, "`"), table=table), params)
                found = cursor.fetchall()
                cursor.execute(SERVER_ROWS_READ.format(table=table), params)
                read = cursor.fetchone()
            except pymysql.Error as err:
                raise LakegraphError(f"cannot read the values of {column.id}: {err.args[-1] if err.args else err}") from None
        return [(str(value), int(n)) for value, n in found], bool(read and read[0] >= self.budget.max_rows)

    def _bigquery(self, column: IdentifierColumn) -> list[tuple[str, int]]:
        from google.api_core.exceptions import GoogleAPIError
        from google.cloud import bigquery

        from worker.shared.google_clients import bigquery_client

        client = bigquery_client(self.settings)
        table = _quoted(f"{column.database}.{column.schema}.{column.table}", "`")
        sql = BIGQUERY_VALUES.format(column=_quoted(column.column, "`"), table=table, max_values=self.budget.max_values)
        cap = self.budget.max_bytes
        try:
            dry = client.query(sql, job_config=bigquery.QueryJobConfig(dry_run=True, use_query_cache=False))
            if (dry.total_bytes_processed or 0) > cap:
                raise OverBudget(f"{column.id}: a scan would process {dry.total_bytes_processed:,} bytes, over bridge.max_bytes ({cap:,})")
            rows = client.query(sql, job_config=bigquery.QueryJobConfig(maximum_bytes_billed=cap)).result()
            return [(str(row["value"]), int(row["n"])) for row in rows]
        except GoogleAPIError as err:
            raise EngineUnavailable(f"BigQuery refused the value scan of {column.id}: {str(err).splitlines()[0][:200]}") from None
