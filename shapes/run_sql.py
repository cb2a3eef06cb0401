"""run_sql: read-only warehouse SQL within a row, time and byte budget.

Every engine first gets the statement through sqlglot in its dialect: exactly one statement, and
a query (SELECT, WITH … SELECT, set operations) — never DML, DDL, scripts or commands.
BigQuery then dry-runs it (statement type SELECT, bytes under the cap), runs it with
`maximum_bytes_billed` set, and cancels the job when the client-side time limit passes. DuckDB
reads the file read-only with external access off (shapes/access/duckdb_file.py) and interrupts the
query at the time limit. PostgreSQL and MySQL run it in a read-only
transaction, stopped by the server at the time limit (statement_timeout, max_statement_time or
max_execution_time). The engines' clients are imported only by the runner (shapes/access/sql_runner.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic import Field

from shapes.access.tabular import render_rows
from shapes.spec import Params, ShapeSpec, Words

MAX_SQL = 100_000


@dataclass(frozen=True)
class SqlResult:
    sql: str
    engine: str
    columns: list[str]
    rows: list[list[Any]] = field(default_factory=list)
    truncated: bool = False
    bytes_processed: int | None = None
    milliseconds: float = 0.0
    job_id: str | None = None  # BigQuery: the job that ran it, to cite or inspect


def render(result: SqlResult) -> str:
    table = render_rows(result.columns, result.rows, result.truncated, result.milliseconds)
    scanned = f", {result.bytes_processed:,} bytes processed" if result.bytes_processed is not None else ""
    job = f", job {result.job_id}" if result.job_id else ""
    return f"{table}\n({result.engine}{scanned}{job})"


class RunSqlParams(Params):
    sql: Words = Field(description="One read-only query (SELECT / WITH … SELECT) in the warehouse's dialect", max_length=MAX_SQL)


SPEC = ShapeSpec(
    name="run_sql",
    purpose="Read-only warehouse SQL within a row, time and (BigQuery) byte budget.",
    guide="Find the tables with table_context and the joins with join_path first.",
    params=RunSqlParams,
    output=SqlResult,
    run=lambda shapes, p, grant: shapes.sql_runner.within(p.sql, grant, shapes.granted_tables(grant)),
    capability="run-sql",
    scoped=True,
    render=render,
    rows=("rows",),
    needs="warehouse",
    arguments=("sql",),
    method="POST",
)
