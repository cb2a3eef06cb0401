"""run_sql's runner: the sqlglot check, then the query on DuckDB, BigQuery, PostgreSQL or MySQL (shapes/run_sql.py says how)."""

from __future__ import annotations

import concurrent.futures
import threading
from datetime import date, datetime, time, timedelta
from decimal import Decimal
from ipaddress import IPv4Address, IPv4Interface, IPv4Network, IPv6Address, IPv6Interface, IPv6Network
from time import perf_counter
from typing import TYPE_CHECKING, Any
from uuid import UUID

import duckdb
import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError

from shapes.access.duckdb_file import DuckDbFile
from shapes.run_sql import MAX_SQL, SqlResult
from shapes.spec.exceptions import ShapeError
from worker.exceptions import first_line
from worker.shared.sql_failures import PARSER_FAILURES

if TYPE_CHECKING:
    from worker.settings import Settings
    from worker.shared.grants import Grant

DUCKDB_SCHEMA = "main"  # where DuckDB looks for an unqualified table
MYSQL_TIMED_OUT = (1969, 3024)  # MariaDB's max_statement_time, MySQL's max_execution_time


def check_query(sql: str, dialect: str) -> exp.Query:
    """Refuse anything but one read-only query statement; the statement parsed."""
    if not sql.strip():
        raise ShapeError("empty SQL")
    if len(sql) > MAX_SQL:
        raise ShapeError(f"SQL too long (at most {MAX_SQL} characters)")
    try:
        statements = [statement for statement in sqlglot.parse(sql, read=dialect) if statement is not None and not isinstance(statement, exp.Semicolon)]
    except ParseError as err:
        first = err.errors[0] if err.errors else {}
        raise ShapeError(f"SQL does not parse ({dialect}): {first.get('description', str(err).splitlines()[0])}") from None
    except PARSER_FAILURES as err:  # a tokenizer error, or sqlglot failing inside on hostile input
        raise ShapeError(f"SQL does not parse ({dialect}): {first_line(err)}") from None
    if len(statements) != 1:
        raise ShapeError(f"refused: one statement at a time, got {len(statements)}")
    statement = statements[0]
    if not isinstance(statement, exp.Query):
        raise ShapeError(f"refused: read-only queries only (SELECT), not {statement.key.upper()}")
    writes = (exp.Insert, exp.Update, exp.Delete, exp.Merge, exp.Create, exp.Drop, exp.Alter, exp.Command, exp.Into)
    found = next((node for node in statement.walk() if isinstance(node, writes)), None)
    if found is not None:
        raise ShapeError(f"refused: read-only queries only ({found.key.upper()} inside the query)")
    return statement


def _plain(value: Any) -> Any:
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, datetime | date | time):
        return value.isoformat()
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, UUID | timedelta | IPv4Address | IPv6Address | IPv4Network | IPv6Network | IPv4Interface | IPv6Interface):
        return str(value)  # PostgreSQL's uuid, interval, inet and cidr
    return value


class SqlRunner:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.budget = settings.shapes
        self.duckdb_file = DuckDbFile(settings.duckdb_file, settings.shapes.sql_duckdb_linger)

    def within(self, sql: str, grant: Grant, tables: frozenset[str] | None) -> SqlResult:
        """The query's rows, once it reads only tables the grant names, `tables` being the ids of
        those the graph holds (`Shapes.granted_tables`; None: every table). Every served call comes here."""
        statement = check_query(sql, self.dialect)
        if tables is not None:
            from shapes.access.sql_grant import check_within

            check_within(statement, self.dialect, *self._unqualified(), grant, tables)
        return self._rows(sql)

    @property
    def dialect(self) -> str:
        return self.settings.warehouse.engine  # each engine's name is its sqlglot dialect

    def _unqualified(self) -> tuple[str, str]:
        """The database and schema an unqualified table name is read from."""
        conf = self.settings.warehouse
        if conf.engine == "bigquery":
            return conf.bigquery_project, ""
        if conf.engine == "postgres":
            from worker.shared.postgres_client import DEFAULT_SCHEMA, database_name

            return database_name(conf.url.get_secret_value()), DEFAULT_SCHEMA
        if conf.engine == "mysql":
            from worker.shared.mysql_client import database_name

            name = database_name(conf.url.get_secret_value())
            return name, name  # lakegraph's connection reads from the URL's database
        return self.settings.duckdb_file.stem, DUCKDB_SCHEMA

    def __call__(self, sql: str) -> SqlResult:
        """The query's rows, once it is one read-only statement."""
        check_query(sql, self.dialect)
        return self._rows(sql)

    def _rows(self, sql: str) -> SqlResult:
        """The rows of a query already checked, timed."""
        began = perf_counter()
        run = {"bigquery": self._bigquery, "postgres": self._postgres, "mysql": self._mysql}.get(self.settings.warehouse.engine, self._duckdb)
        result = run(sql)
        return SqlResult(**{**result.__dict__, "milliseconds": round((perf_counter() - began) * 1000, 1)})

    def _duckdb(self, sql: str) -> SqlResult:
        with self.duckdb_file.cursor() as con:
            timer = threading.Timer(self.budget.sql_timeout, con.interrupt)
            timer.start()
            try:
                cursor = con.execute(sql)
                rows = cursor.fetchmany(self.budget.sql_max_rows + 1)
                columns = [column[0] for column in cursor.description or []]
            except duckdb.InterruptException:
                raise ShapeError(f"time limit reached: the query ran past {self.budget.sql_timeout:g} s and was interrupted") from None
            except duckdb.Error as err:
                raise ShapeError(str(err).splitlines()[0]) from None
            finally:
                timer.cancel()
        truncated = len(rows) > self.budget.sql_max_rows
        return SqlResult(sql, "duckdb", columns, [[_plain(value) for value in row] for row in rows[: self.budget.sql_max_rows]], truncated)

    def _bigquery(self, sql: str) -> SqlResult:
        from google.api_core.exceptions import GoogleAPIError
        from google.cloud import bigquery

        from worker.shared.google_clients import bigquery_client

        client = bigquery_client(self.settings)
        cap = self.budget.sql_max_bytes_billed
        try:
            dry = client.query(sql, job_config=bigquery.QueryJobConfig(dry_run=True, use_query_cache=False))
            if dry.statement_type and dry.statement_type != "SELECT":
                raise ShapeError(f"refused: read-only queries only, BigQuery calls this {dry.statement_type}")
            scanned = dry.total_bytes_processed or 0
            if scanned > cap:
                raise ShapeError(f"refused: the query would process {scanned:,} bytes, over the {cap:,}-byte budget")
            job = client.query(sql, job_config=bigquery.QueryJobConfig(maximum_bytes_billed=cap), timeout=self.budget.sql_timeout)
            try:
                iterator = job.result(timeout=self.budget.sql_timeout, max_results=self.budget.sql_max_rows + 1)
                rows = list(iterator)
            except concurrent.futures.TimeoutError:
                client.cancel_job(job.job_id, location=job.location)
                raise ShapeError(f"time limit reached: job {job.job_id} ran past {self.budget.sql_timeout:g} s and was cancelled") from None
        except GoogleAPIError as err:
            raise ShapeError(f"BigQuery refused the query: {getattr(err, 'message', str(err)).splitlines()[0]}") from None
        columns = [column.name for column in iterator.schema or []]
        truncated = len(rows) > self.budget.sql_max_rows
        body = [[_plain(value) for value in row.values()] for row in rows[: self.budget.sql_max_rows]]
        return SqlResult(sql, "bigquery", columns, body, truncated, bytes_processed=scanned, job_id=job.job_id)

    def _postgres(self, sql: str) -> SqlResult:
        """In a read-only transaction (a write PostgreSQL itself refuses), cut at the time limit by the server."""
        import psycopg

        from worker.shared.postgres_client import connect

        timeout = f"-c statement_timeout={int(self.budget.sql_timeout * 1000)}"
        with connect(self.settings.warehouse.url.get_secret_value(), options=timeout) as con:
            con.read_only = True
            con.autocommit = False
            try:
                with con.transaction(), con.cursor() as cursor:
                    cursor.execute(sql)
                    rows = cursor.fetchmany(self.budget.sql_max_rows + 1)
                    columns = [column.name for column in cursor.description or []]
            except psycopg.errors.QueryCanceled:
                raise ShapeError(f"time limit reached: the query ran past {self.budget.sql_timeout:g} s and was cancelled") from None
            except psycopg.Error as err:
                raise ShapeError(f"PostgreSQL refused the query: {str(err).strip().splitlines()[0]}") from None
        truncated = len(rows) > self.budget.sql_max_rows
        return SqlResult(sql, "postgres", columns, [[_plain(value) for value in row] for row in rows[: self.budget.sql_max_rows]], truncated)

    def _mysql(self, sql: str) -> SqlResult:
        """In a read-only transaction (a write the server itself refuses), cut at the time limit by
        the server: MariaDB's max_statement_time, MySQL's max_execution_time."""
        import pymysql

        from worker.shared.mysql_client import connect

        timeout = self.budget.sql_timeout
        with connect(self.settings.warehouse.url.get_secret_value(), read_timeout=timeout + 10) as con, con.cursor() as cursor:
            try:
                mariadb = "MariaDB" in con.get_server_info()
                cursor.execute(f"SET SESSION max_statement_time = {timeout:g}" if mariadb else f"SET SESSION max_execution_time = {int(timeout * 1000)}")
                cursor.execute("START TRANSACTION READ ONLY")
                cursor.execute(sql)
                rows = cursor.fetchmany(self.budget.sql_max_rows + 1)
                columns = [column[0] for column in cursor.description or []]
                cursor.execute("ROLLBACK")
            except pymysql.err.OperationalError as err:
                if err.args and err.args[0] in MYSQL_TIMED_OUT:
                    raise ShapeError(f"time limit reached: the query ran past {timeout:g} s and was stopped") from None
                raise ShapeError(f"MySQL refused the query: {err.args[-1]}") from None
            except pymysql.Error as err:
                raise ShapeError(f"MySQL refused the query: {err.args[-1] if err.args else err}") from None
        truncated = len(rows) > self.budget.sql_max_rows
        return SqlResult(sql, "mysql", columns, [[_plain(value) for value in row] for row in rows[: self.budget.sql_max_rows]], truncated)
