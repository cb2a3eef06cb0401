"""run_sql within a restricted grant: the query may read only tables the grant names.

Checked on the parsed query, scope by scope (sqlglot's scopes, so a CTE shadows a table only
where it is in scope): every table it reads is qualified with the warehouse's defaults, must be
a table the warehouse has (a name DuckDB would otherwise resolve to a file is refused), and must
be in the grant. Table functions and anything in FROM that is not a named table are refused, as
are functions that read files, settings or the catalogue (`read_csv`, `query_table`,
`duckdb_tables`, ...): string-built identifiers cannot reach around the check.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from sqlglot import exp
from sqlglot.errors import OptimizeError
from sqlglot.optimizer.scope import traverse_scope

from shapes.spec.exceptions import Denied

if TYPE_CHECKING:
    from worker.shared.grants import Grant

# Functions that read outside the named tables: files, other databases, settings, the catalogue.
OUTSIDE_READERS = re.compile(
    r"^(read_|glob$|query$|query_table$|duckdb_|pragma_|sqlite_|postgres_|mysql_|parquet_|iceberg_|delta_|sniff_|getenv$|current_setting$|which_secret$)",
    re.IGNORECASE,
)


def check_within(statement: exp.Query, dialect: str, catalog: str, schema: str, grant: Grant, tables: frozenset[str]) -> None:
    """Refuse the query (as `check_query` parsed it) unless every table it reads is one of `tables`
    (the ids of the tables the graph holds that the grant names, lower-case as `Grant.sees_table`
    folds them: `scope.granted_tables`)."""
    for function in statement.find_all(exp.Func):
        name = function.name if isinstance(function, exp.Anonymous) else function.sql_name()
        if OUTSIDE_READERS.match(name or ""):
            raise Denied(f"refused under your grant: {name}() reads outside the warehouse's tables")
    wanted: dict[str, str] = {}
    try:
        scopes = traverse_scope(statement)
    except OptimizeError as unclear:
        raise Denied(f"refused under your grant: the tables this query reads could not be told apart ({unclear})") from None
    seen: set[int] = set()
    for scope in scopes:
        for table in scope.tables:
            seen.add(id(table))
            if not table.db and table.name in scope.cte_sources:
                continue
            wanted[_qualified(table, catalog, schema).lower()] = table.sql(dialect=dialect)
    stray = next((table for table in statement.find_all(exp.Table) if id(table) not in seen), None)
    if stray is not None:
        raise Denied(f"refused under your grant: {stray.sql(dialect=dialect)} is not a table this check can place")
    outside = sorted(name for qualified, name in wanted.items() if not grant.sees_table(qualified))
    if outside:
        raise Denied(f"refused under your grant: {', '.join(outside)} {'is' if len(outside) == 1 else 'are'} not among your tables")
    unknown = sorted(name for qualified, name in wanted.items() if qualified not in tables)
    if unknown:
        raise Denied(f"refused under your grant: {', '.join(unknown)} {'is' if len(unknown) == 1 else 'are'} not a table of the warehouse")


def _qualified(table: exp.Table, catalog: str, schema: str) -> str:
    if not isinstance(table.this, exp.Identifier):
        raise Denied(f"refused under your grant: {table.sql()} is not a named table")
    dataset = table.db or schema
    if not dataset:
        raise Denied(f"refused under your grant: qualify {table.name} with its dataset")
    return f"{table.catalog or catalog}.{dataset}.{table.name}"
