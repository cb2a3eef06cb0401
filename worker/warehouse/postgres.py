"""PostgreSQL as the warehouse: its catalogue read through pg_catalog (tables, views, columns in
table order, comments, primary and foreign keys column by column in key order), and its query log,
pg_stat_statements (one row per role and normalized statement, counted since the statistics' last
reset; a clean restart keeps them).

pg_catalog rather than information_schema: the latter shows only what the role owns or has a
privilege on, and has no comments.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import UTC

from worker.exceptions import EngineUnavailable
from worker.shared.postgres_client import MARKER, connect, database_name
from worker.warehouse.schema_snapshot import ColumnInfo, ForeignKey, Snapshot, TableInfo
from worker.warehouse.statements_poller import Statement

SCHEMAS = (
    MARKER
    + """
SELECT nspname FROM pg_namespace
WHERE nspname NOT IN ('information_schema', 'pg_catalog', 'pg_toast') AND nspname NOT LIKE 'pg\\_%%'
ORDER BY 1
"""
)
# A relation of the database's own, not one an extension brought (pg_stat_statements' views, say).
OWN = "NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid AND d.deptype = 'e')"
# Ordinary, partitioned and foreign tables, views and materialized views; partitions are read as their parent.
TABLES = (
    MARKER
    + f"""
SELECT c.relname AS name, c.relkind IN ('v', 'm') AS is_view, obj_description(c.oid, 'pg_class') AS comment,
       CASE WHEN c.relkind IN ('v', 'm') THEN pg_get_viewdef(c.oid) END AS view_sql
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = %(schema)s AND c.relkind IN ('r', 'p', 'f', 'v', 'm') AND NOT c.relispartition AND {OWN}
  AND (%(table)s::text IS NULL OR c.relname = %(table)s)
ORDER BY 1
"""
)
COLUMNS = (
    MARKER
    + f"""
SELECT c.relname AS table_name, a.attname AS name, format_type(a.atttypid, a.atttypmod) AS type,
       NOT a.attnotnull AS nullable, col_description(c.oid, a.attnum) AS comment
FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = %(schema)s AND c.relkind IN ('r', 'p', 'f', 'v', 'm') AND NOT c.relispartition AND {OWN}
  AND a.attnum > 0 AND NOT a.attisdropped AND (%(table)s::text IS NULL OR c.relname = %(table)s)
ORDER BY c.relname, a.attnum
"""
)
# Primary and foreign keys, each key's columns (and the columns it references) in key order.
KEYS = (
    MARKER
    + """
SELECT k.conname AS name, k.contype AS kind, c.relname AS table_name,
       ARRAY(SELECT a.attname FROM unnest(k.conkey) WITH ORDINALITY AS u(num, i)
             JOIN pg_attribute a ON a.attrelid = k.conrelid AND a.attnum = u.num ORDER BY u.i) AS columns,
       rn.nspname AS ref_schema, rc.relname AS ref_table,
       ARRAY(SELECT a.attname FROM unnest(k.confkey) WITH ORDINALITY AS u(num, i)
             JOIN pg_attribute a ON a.attrelid = k.confrelid AND a.attnum = u.num ORDER BY u.i) AS ref_columns
FROM pg_constraint k JOIN pg_class c ON c.oid = k.conrelid JOIN pg_namespace n ON n.oid = c.relnamespace
LEFT JOIN pg_class rc ON rc.oid = k.confrelid LEFT JOIN pg_namespace rn ON rn.oid = rc.relnamespace
WHERE n.nspname = %(schema)s AND k.contype IN ('p', 'f') AND (%(table)s::text IS NULL OR c.relname = %(table)s)
ORDER BY c.relname, k.conname
"""
)


class PostgresConnector:
    """The database `url` names; `schemas`: the schemas to read (empty: every one but the system's)."""

    def __init__(self, url: str, schemas: list[str]) -> None:
        self.url = url
        self.database = database_name(url)
        self.selected = schemas
        self.lists_all_schemas = not schemas

    def _rows(self, sql: str, **params: object) -> list[dict]:
        import psycopg
        from psycopg.rows import dict_row

        with connect(self.url) as con:
            try:
                return con.cursor(row_factory=dict_row).execute(sql, params).fetchall()
            except psycopg.Error as err:
                raise EngineUnavailable(f"PostgreSQL refused a catalogue read: {str(err).strip().splitlines()[0][:200]}") from None

    def schemas(self) -> list[str]:
        if self.selected:
            return list(self.selected)
        return [row["nspname"] for row in self._rows(SCHEMAS)]

    def snapshot(self, schema: str, table: str | None = None) -> Snapshot:
        scope = {"schema": schema, "table": table}
        tables, columns, keys = self._rows(TABLES, **scope), self._rows(COLUMNS, **scope), self._rows(KEYS, **scope)
        primary = {(row["table_name"], column) for row in keys if row["kind"] == "p" for column in row["columns"]}
        by_table: dict[str, list[ColumnInfo]] = defaultdict(list)
        for row in columns:
            found = by_table[row["table_name"]]
            found.append(ColumnInfo(row["name"], row["type"], len(found) + 1, row["nullable"], row["comment"], (row["table_name"], row["name"]) in primary))
        infos = tuple(
            TableInfo(self.database, schema, row["name"], "VIEW" if row["is_view"] else "TABLE", row["comment"], row["view_sql"], tuple(by_table[row["name"]]))
            for row in tables
        )
        foreign = tuple(
            ForeignKey(
                row["name"],
                f"{self.database}.{schema}.{row['table_name']}",
                tuple(row["columns"]),
                f"{self.database}.{row['ref_schema']}.{row['ref_table']}",
                tuple(row["ref_columns"]),
            )
            for row in keys
            if row["kind"] == "f"
        )
        return Snapshot(self.database, schema, infos, foreign, table)


STATEMENTS = (
    MARKER
    + """
SELECT s.userid::text || ':' || s.queryid::text AS key, s.calls, s.query, coalesce(r.rolname, '') AS role,
       (SELECT stats_reset FROM pg_stat_statements_info) AS epoch
FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid LEFT JOIN pg_roles r ON r.oid = s.userid
WHERE s.toplevel AND d.datname = current_database() AND s.queryid IS NOT NULL
"""
)


def read_statements(url: str) -> tuple[str, list[Statement]]:
    """pg_stat_statements' top-level rows of the URL's database, lakegraph's own left out."""
    import psycopg
    from psycopg.rows import dict_row

    with connect(url) as con:
        try:
            rows = con.cursor(row_factory=dict_row).execute(STATEMENTS).fetchall()
        except psycopg.errors.UndefinedTable:
            raise EngineUnavailable(
                f"pg_stat_statements is not installed in {database_name(url)}: add it to shared_preload_libraries and run CREATE EXTENSION pg_stat_statements"
            ) from None
        except psycopg.Error as err:
            raise EngineUnavailable(f"PostgreSQL refused the pg_stat_statements read: {str(err).strip().splitlines()[0][:200]}") from None
    epoch = rows[0]["epoch"].astimezone(UTC).isoformat() if rows and rows[0]["epoch"] else ""
    return epoch, [Statement(row["key"], row["calls"], row["query"], row["role"]) for row in rows if not row["query"].startswith(MARKER)]
