"""Joins learned from SQL: every column-to-column equality, resolved to its base tables' columns.

sqlglot parses the query in the warehouse's dialect and qualifies every column against the
schema (aliases, unaliased and backticked names, `USING`, comma joins); then each equality in a
join condition or WHERE clause is traced through CTEs, derived tables and UNION branches back to
base-table columns. Names are compared the dialect's way (worker/shared/identifiers.py: MySQL's
`T1`.`CustomerID` is the column customerid, Snowflake's unquoted orders is ORDERS and its
"mixedCase" only that) and said as the catalogue spells them, so a pair names the graph's
columns. A pair is undirected (`left < right`); a table joined to itself through two aliases is
kept and flagged. SQL that does not parse yields an error, never an exception.

What is not a join, although it is an equality of two names:
- `t.a = t.b` on one table instance compares two fields of one row: a filter;
- with a schema, a double-quoted name that is no column of any table in scope is a string literal
  (SQLite and MySQL accept `"JetBlue Airways"` as one);
- with a schema, a column its table does not have is never a join endpoint: it is counted as
  unresolved, with its query, so schema drift or a typo is visible instead of a wrong join.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import partial
from itertools import product

import sqlglot
from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.errors import SqlglotError
from sqlglot.optimizer.qualify import qualify
from sqlglot.optimizer.scope import Scope, traverse_scope
from sqlglot.schema import MappingSchema

from worker.exceptions import LakegraphError, first_line
from worker.shared.identifiers import SessionDefaults, catalogue_key, fold_column_names
from worker.shared.sql_failures import PARSER_FAILURES

_COMMENTS = re.compile(r"--[^\n]*|/\*.*?\*/|#[^\n]*", re.DOTALL)
_STRINGS = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"")
_NUMBERS = re.compile(r"(?<![\w`.])-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?(?![\w`])")
_SPACE = re.compile(r"\s+")
MAX_TRACE_DEPTH = 32


def known_dialect(name: str) -> str:
    """The setting `warehouse.sql_dialect` when sqlglot knows it; refused, with sqlglot's suggestion, before any query is read."""
    try:
        Dialect.get_or_raise(name)
    except ValueError as error:
        raise LakegraphError(f"warehouse.sql_dialect: {error}") from None
    return name


@dataclass(frozen=True, order=True)
class ColumnRef:
    table: str  # qualified as in the schema: dataset.table, or project.dataset.table
    column: str

    def __str__(self) -> str:
        return f"{self.table}.{self.column}"


@dataclass(frozen=True, order=True)
class JoinPair:
    left: ColumnRef
    right: ColumnRef

    @property
    def self_join(self) -> bool:
        return self.left.table == self.right.table

    @classmethod
    def of(cls, one: ColumnRef, other: ColumnRef) -> JoinPair:
        return cls(*sorted((one, other)))


@dataclass(frozen=True)
class Extraction:
    pairs: frozenset[JoinPair] = field(default_factory=frozenset)
    tables: frozenset[str] = field(default_factory=frozenset)
    error: str | None = None
    unresolved: frozenset[str] = field(default_factory=frozenset)  # table.column (or ?.column) the schema lacks


def fingerprint(sql: str) -> str:
    """A query's shape: comments, literals and spacing removed, so executions that differ only in
    values share one fingerprint (and one parse)."""
    shape = _COMMENTS.sub(" ", sql)
    shape = _STRINGS.sub("?", shape)
    shape = _NUMBERS.sub("?", shape)
    shape = _SPACE.sub(" ", shape).strip().rstrip(";").strip()
    return hashlib.sha256(shape.encode()).hexdigest()[:20]


@dataclass(frozen=True)
class DialectSchema:
    """The schema as one dialect compares names: sqlglot's schema over the names' normalized keys
    (worker/shared/identifiers.py), and each key's spelling in the catalogue."""

    mapping: MappingSchema
    tables: dict[tuple[str, ...], tuple[str, ...]]  # a table's normalized path -> its catalogue path
    columns: dict[tuple[str, ...], dict[str, str]]  # a table's normalized path -> normalized column -> catalogue name
    unique: dict[tuple[str, ...], tuple[str, ...] | None]  # a path's tail (`orders`, `main.orders`) -> the one path it ends, or None

    def path(self, parts: tuple[str, ...]) -> tuple[str, ...]:
        """The table a name means: its whole path, the one table whose path ends with it (an
        unqualified name read in the default schema of a catalogue that has it once), or for a
        wildcard (BigQuery's `ga_sessions_*`) its newest member, which stands for the family as in
        table search (worker/warehouse/table_search.py) and whose schema BigQuery reads it with."""
        if parts in self.tables:
            return parts
        if parts and parts[-1].endswith("*"):
            return self._newest(parts) or parts
        return self.unique.get(parts) or parts

    def _newest(self, wildcard: tuple[str, ...]) -> tuple[str, ...] | None:
        *leading, name = wildcard
        members = [key for key in self.tables if len(key) == len(wildcard) and list(key[:-1]) == leading and key[-1].startswith(name[:-1])]
        return max(members, default=None)

    @classmethod
    def of(cls, mapping: dict, depth: int, dialect: str) -> DialectSchema:
        keyed: dict = {}
        tables: dict[tuple[str, ...], tuple[str, ...]] = {}
        columns: dict[tuple[str, ...], dict[str, str]] = {}
        for path, table_columns in sorted(_tables(mapping, depth)):
            key = tuple(catalogue_key(part, dialect, is_table=True) for part in path)
            if key in tables:
                continue  # two catalogue names the dialect cannot tell apart: the first (sorted) is the one
            tables[key] = path
            spelled = columns[key] = {}
            for column in sorted(table_columns):
                spelled.setdefault(catalogue_key(column, dialect, is_table=False), column)
            level = keyed
            for part in key[:-1]:
                level = level.setdefault(part, {})
            level[key[-1]] = {name: table_columns[column] for name, column in spelled.items()}
        unique: dict[tuple[str, ...], tuple[str, ...] | None] = {}
        for key in tables:
            for start in range(1, len(key)):
                unique[key[start:]] = key if key[start:] not in unique else None
        return cls(MappingSchema(keyed, dialect=dialect, normalize=False), tables, columns, unique)


class SchemaIndex:
    """The schema's tables and columns as the catalogue spells them, plus how deep its table names go
    (table, db.table, catalog.db.table); compared in each dialect by that dialect's rules."""

    def __init__(self, mapping: dict, default_catalog: str | None = None) -> None:
        self.mapping = mapping
        self.depth = _depth(mapping)
        self.default_catalog = default_catalog  # BigQuery: the project that `dataset.table` means
        self._resolved: dict[str, DialectSchema] = {}

    def resolved(self, dialect: str) -> DialectSchema | None:
        """The schema as `dialect` compares names; built once per dialect."""
        if not self.mapping:
            return None
        if dialect not in self._resolved:
            self._resolved[dialect] = DialectSchema.of(self.mapping, self.depth, dialect)
        return self._resolved[dialect]

    def catalog_key(self, dialect: str) -> str | None:
        """The default catalog as a qualified query's tables carry it (normalized the dialect's way)."""
        return catalogue_key(self.default_catalog, dialect, is_table=True) if self.default_catalog else None

    def columns(self, table: exp.Table, dialect: str) -> set[str] | None:
        """The (normalized) columns of a table the schema knows; None for a table it does not know."""
        resolved = self.resolved(dialect)
        if resolved is None:
            return None
        known = resolved.columns.get(self._path(table, dialect))
        return None if known is None else set(known)

    def __getstate__(self) -> dict:  # process pools get the mapping; each builds its own sqlglot schema
        return {**self.__dict__, "_resolved": {}}

    def name(self, table: exp.Table, dialect: str) -> str:
        """The table's id as the catalogue spells it (as the query does for a table it does not know)."""
        path = self._path(table, dialect)
        resolved = self.resolved(dialect)
        return ".".join(resolved.tables.get(path, path) if resolved else path)

    def member(self, table: exp.Table, dialect: str) -> tuple[str, ...] | None:
        """The normalized path of the table a wildcard table stands for, when the schema has one."""
        resolved = self.resolved(dialect)
        path = self._path(table, dialect)
        return path if resolved is not None and path in resolved.tables else None

    def column(self, table: exp.Table, column: str, dialect: str) -> str:
        """A (normalized) column of the table as the catalogue spells it."""
        resolved = self.resolved(dialect)
        return resolved.columns.get(self._path(table, dialect), {}).get(column, column) if resolved else column

    def _path(self, table: exp.Table, dialect: str) -> tuple[str, ...]:
        catalog = table.catalog or (self.catalog_key(dialect) if table.db else None)
        parts = [catalog, table.db, table.name][-self.depth :] if self.depth else [table.db, table.name]
        path = tuple(part for part in parts if part)
        resolved = self.resolved(dialect)
        return resolved.path(path) if resolved else path


def _tables(mapping: dict, depth: int, path: tuple[str, ...] = ()) -> Iterable[tuple[tuple[str, ...], dict]]:
    """Each table's path in a nested mapping `depth` levels deep, with its columns."""
    for name, inner in mapping.items():
        if len(path) + 1 == depth:
            yield (*path, name), inner
        else:
            yield from _tables(inner, depth, (*path, name))


def _depth(mapping: dict) -> int:
    """1 for {table: {column: type}}, 2 with a db level, 3 with a catalog level; 0 when empty."""
    depth, level = 0, mapping
    while isinstance(level, dict) and level:
        first = next(iter(level.values()))
        if not isinstance(first, dict):
            return depth
        depth, level = depth + 1, first
    return depth


def extract(sql: str, dialect: str, schema: SchemaIndex) -> Extraction:
    try:
        parsed = _parsed(sql, dialect)
    except PARSER_FAILURES as err:
        return Extraction(error=first_line(err, 300))
    pairs: set[JoinPair] = set()
    tables: set[str] = set()
    unresolved: set[str] = set()
    session = SessionDefaults()
    for index, statement in enumerate(parsed):
        if statement is None or isinstance(statement, exp.Semicolon | exp.Declare):
            continue  # an empty statement, a comment after the last one, a script's variable
        if isinstance(statement, exp.Use):
            session = session.after(statement, dialect)
            continue
        if not isinstance(statement, exp.Query | exp.DML | exp.DDL):  # a Command or a bare expression
            return Extraction(error=f"not a SQL statement sqlglot understands: {statement.sql(dialect)[:120]}")
        try:
            scopes = _qualified_scopes(statement, partial(_statement_at, sql, dialect, index), dialect, schema, session)
        except PARSER_FAILURES as err:
            return Extraction(error=first_line(err, 300), tables=_named_tables(_statement_at(sql, dialect, index), schema, dialect))
        for scope in scopes:
            tables.update(schema.name(source, dialect) for source in scope.sources.values() if isinstance(source, exp.Table))
            pairs.update(_scope_pairs(scope, Resolution(schema, dialect, unresolved)))
    return Extraction(frozenset(pairs), frozenset(tables), unresolved=frozenset(unresolved))


def _named_tables(statement: exp.Expr | None, schema: SchemaIndex, dialect: str) -> frozenset[str]:
    """The tables a statement names outside its CTEs: what a query that could not be qualified
    reads, so that one arriving before its tables (qualifying may need their columns) waits for them."""
    if statement is None:
        return frozenset()
    ctes = {cte.alias_or_name for cte in statement.find_all(exp.CTE)}
    return frozenset(schema.name(table, dialect) for table in statement.find_all(exp.Table) if table.db or table.name not in ctes)


def _parsed(sql: str, dialect: str) -> list[exp.Expr | None]:
    """The query's statements, their column names folded where the dialect compares them in any case."""
    return [None if statement is None else fold_column_names(statement, dialect) for statement in sqlglot.parse(sql, read=dialect)]


def _statement_at(sql: str, dialect: str, index: int) -> exp.Expr | None:
    """The query's `index`th statement, parsed afresh (qualifying changes the tree it is given)."""
    return _parsed(sql, dialect)[index]


def _qualified_scopes(statement: exp.Expr, reparse: Callable[[], exp.Expr | None], dialect: str, schema: SchemaIndex, session: SessionDefaults) -> list[Scope]:
    """Scopes of the qualified statement, its unqualified tables in the session's catalogue and schema
    (a `USE` before it) or the schema's default catalogue. A query naming a column the schema lacks
    (drift, a column not loaded yet) is parsed and qualified again without the schema: its qualified
    columns still count."""

    def qualified(expression: exp.Expr, mapping: MappingSchema | None) -> exp.Expr:
        if mapping is not None:
            _wildcards_as_members(expression, schema, dialect)
        return qualify(
            expression,
            dialect=dialect,
            catalog=session.catalog or schema.catalog_key(dialect),
            db=session.schema,
            schema=mapping,
            validate_qualify_columns=False,
            quote_identifiers=False,
            identify=False,
        )

    try:
        resolved = schema.resolved(dialect)
        return traverse_scope(qualified(statement, resolved.mapping if resolved else None))
    except SqlglotError:
        again = reparse()
        if not schema.mapping or again is None:
            raise
        return traverse_scope(qualified(again, None))


def _wildcards_as_members(statement: exp.Expr, schema: SchemaIndex, dialect: str) -> None:
    """Each wildcard table (`ga_sessions_*`) read as its newest member, so its columns resolve."""
    for table in list(statement.find_all(exp.Table)):
        if not table.name.endswith("*"):
            continue
        member = schema.member(table, dialect)
        if member is not None:
            for part, name in zip(("catalog", "db", "this")[-len(member) :], member, strict=True):
                table.set(part, exp.to_identifier(name, quoted=True))


@dataclass(frozen=True)
class Resolution:
    """What resolving a column needs: the schema, the dialect, and where unknown columns are counted."""

    schema: SchemaIndex
    dialect: str
    unresolved: set[str]


def _scope_pairs(scope: Scope, resolution: Resolution) -> Iterable[JoinPair]:
    select = scope.expression
    if not isinstance(select, exp.Select):
        return
    for equality in select.find_all(exp.EQ):
        if equality.find_ancestor(exp.Select) is not select:
            continue  # it belongs to a nested query's own scope
        clause = equality.find_ancestor(exp.Join, exp.Where, exp.Select, exp.Having)
        if not isinstance(clause, exp.Join | exp.Where):
            continue
        left, right = equality.this, equality.expression
        if not (isinstance(left, exp.Column) and isinstance(right, exp.Column)):
            continue
        if _literal(scope, left, resolution) or _literal(scope, right, resolution):
            continue
        ones, others = _bases(scope, left, resolution, 0), _bases(scope, right, resolution, 0)  # counting columns their tables lack
        instance = _instance(scope, left)
        if instance is not None and instance == _instance(scope, right):
            continue  # two fields of one row of one table instance: a filter, not a join
        for one, other in product(ones, others):
            yield JoinPair.of(one, other)


def _instance(scope: Scope, column: exp.Column) -> str | None:
    """The table instance (alias) a column reads: its qualifier, or the scope's only source."""
    return column.table or (next(iter(scope.sources)) if len(scope.sources) == 1 else None)


def _literal(scope: Scope, column: exp.Column, resolution: Resolution) -> bool:
    """A double-quoted name that no table in scope has: a string in dialects that allow `"text"`."""
    if column.table or not column.this.quoted or not resolution.schema.mapping:
        return False
    tables = [source for source in scope.sources.values() if isinstance(source, exp.Table)]
    return all(column.name not in (resolution.schema.columns(table, resolution.dialect) or ()) for table in tables)


def _bases(scope: Scope, column: exp.Column, resolution: Resolution, depth: int) -> set[ColumnRef]:
    """The base-table columns a column stands for, through CTEs, derived tables and UNIONs."""
    if depth > MAX_TRACE_DEPTH:
        return set()
    source = _named_source(scope, column.table) if column.table else _only_source(scope)
    if isinstance(source, exp.Table):
        name = resolution.schema.name(source, resolution.dialect)
        known = resolution.schema.columns(source, resolution.dialect)
        if known is not None and column.name not in known:
            resolution.unresolved.add(f"{name}.{column.name}")
            return set()
        return {ColumnRef(name, resolution.schema.column(source, column.name, resolution.dialect))}
    if isinstance(source, Scope):
        return _through(source, column.name, resolution, depth + 1)
    if not column.table and resolution.schema.mapping:  # with a schema, qualify leaves only unknown names bare
        resolution.unresolved.add(f"?.{column.name}")
    return set()


def _named_source(scope: Scope | None, name: str) -> exp.Table | Scope | None:
    """The source an alias names: in this scope, else an enclosing one (a correlated subquery)."""
    while scope is not None:
        if name in scope.sources:
            return scope.sources[name]
        scope = scope.parent
    return None


def _only_source(scope: Scope) -> exp.Table | Scope | None:
    return next(iter(scope.sources.values())) if len(scope.sources) == 1 else None


def _through(scope: Scope, name: str, resolution: Resolution, depth: int) -> set[ColumnRef]:
    if scope.set_operation_scopes:  # UNION / INTERSECT / EXCEPT: every branch
        return set().union(*(_through(branch, name, resolution, depth + 1) for branch in scope.set_operation_scopes))
    select = scope.expression
    if not isinstance(select, exp.Select):
        return set()
    for projection in select.expressions:
        if projection.alias_or_name != name:
            continue
        inner = projection.this if isinstance(projection, exp.Alias) else projection
        while isinstance(inner, exp.Paren | exp.Cast):
            inner = inner.this
        if isinstance(inner, exp.Column):
            return _bases(scope, inner, resolution, depth + 1)
        return set()
    return set()
