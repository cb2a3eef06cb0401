"""How each SQL dialect compares names: the one place that says when `CustomerID` in a query is the
catalogue's `customerid`.

A name in SQL text is normalized the dialect's way (sqlglot's normalization strategy: Snowflake
and Oracle upper-case unquoted names, PostgreSQL lower-cases them, quoted names stay exact;
SQLite, DuckDB, Spark and BigQuery's columns compare in any case, quoted or not). A catalogue
name is an exact name, so it is normalized as a quoted identifier of the same dialect: a query's
name and a catalogue's meet when their normalized forms are equal, which is how the engine
resolves them.

One correction to sqlglot: it treats the MySQL family's identifiers as case-sensitive throughout
(its table names follow the file system: exact on Linux), but MySQL compares column names, and
column aliases, in any case, quoted or not (`` `T1`.`CustomerID` `` is the column `customerid`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.optimizer.normalize_identifiers import normalize_identifiers

# The MySQL family: its columns compare in any case although sqlglot keeps its identifiers exact,
# and its "database" is the schema level (`USE shop` names a schema, not a catalogue).
MYSQL_FAMILY = frozenset({"mysql", "doris", "starrocks", "singlestore"})


def catalogue_key(name: str, dialect: str, is_table: bool) -> str:
    """A catalogue's exact name as the dialect compares it: normalized as a quoted identifier."""
    if not is_table and dialect in MYSQL_FAMILY:
        return name.lower()
    if name.isascii():  # the common case, a catalogue's every name: one string method
        return _QUOTED_FOLDS[_quoted_fold(dialect, is_table)](name)
    return _normalized_quoted(name, dialect, is_table)


_QUOTED_FOLDS: dict[str, Callable[[str], str]] = {"Aa": str, "aa": str.lower, "AA": str.upper}


@cache
def _quoted_fold(dialect: str, is_table: bool) -> str:
    """What the dialect does to a quoted ASCII name, found by normalizing one: kept, lowered or raised."""
    return _normalized_quoted("Aa", dialect, is_table)


def _normalized_quoted(name: str, dialect: str, is_table: bool) -> str:
    identifier = exp.to_identifier(name, quoted=True)
    identifier.meta["is_table"] = is_table
    return Dialect.get_or_raise(dialect).normalize_identifier(identifier).name


def fold_column_names(expression: exp.Expr, dialect: str) -> exp.Expr:
    """Lower-case the names in column position (columns, their aliases, USING lists and a derived
    table's column list) of a dialect that compares columns in any case; table names and table
    aliases keep the dialect's own rule. Changes `expression` in place and returns it."""
    if dialect not in MYSQL_FAMILY:
        return expression
    for identifier in expression.find_all(exp.Identifier):
        if _names_a_column(identifier):
            identifier.set("this", identifier.name.lower())
    return expression


def _names_a_column(identifier: exp.Identifier) -> bool:
    parent, key = identifier.parent, identifier.arg_key
    if isinstance(parent, exp.Column | exp.Alias):
        return key == ("this" if isinstance(parent, exp.Column) else "alias")
    if isinstance(parent, exp.TableAlias):
        return key == "columns"
    return key == "using" and isinstance(parent, exp.Join)


@dataclass(frozen=True)
class SessionDefaults:
    """Where a script's unqualified table names point after its `USE`: a catalogue (a Snowflake
    database, a Databricks catalog) and a schema (a MySQL database), normalized the dialect's way."""

    catalog: str | None = None
    schema: str | None = None

    def after(self, use: exp.Use, dialect: str) -> SessionDefaults:
        kind = use.args.get("kind")
        kind_name = kind.name.upper() if kind is not None else ""
        if not isinstance(use.this, exp.Table) or kind_name not in ("", "DATABASE", "CATALOG", "SCHEMA"):
            return self  # USE WAREHOUSE, USE ROLE: no table moves
        parts = [part.name for part in normalize_identifiers(use.this.copy(), dialect=dialect).parts]
        if kind_name == "SCHEMA" or len(parts) == 2:
            return SessionDefaults(parts[-2] if len(parts) == 2 else self.catalog, parts[-1])
        if not kind_name and dialect in MYSQL_FAMILY:
            return SessionDefaults(self.catalog, parts[-1])
        return SessionDefaults(parts[-1], None)
