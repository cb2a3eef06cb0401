"""MySQL or MariaDB as the warehouse: its catalogue from information_schema (tables, views, columns
in table order with their comments, primary keys, foreign keys column by column in key order), and
its query log, performance_schema's statement digests.

MySQL has no level above its databases, so lakegraph's database is the one the URL names and its
schemas are the server's databases: `mysql://…/shop` holds `shop.shop.orders` and, for a database
`crm` beside it, `shop.crm.accounts`. A digest row counts a normalized statement's runs in one
default database (SCHEMA_NAME) since FIRST_SEEN; the statistics live in memory, so a restart starts
them again, as new rows.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime
from typing import Any

from worker.exceptions import EngineUnavailable
from worker.shared.mysql_client import connect, database_name
from worker.warehouse.schema_snapshot import ColumnInfo, ForeignKey, Snapshot, TableInfo
from worker.warehouse.statements_poller import Statement

SYSTEM_SCHEMAS = ("information_schema", "mysql", "performance_schema", "sys")
SCHEMAS = "SELECT SCHEMA_NAME AS name FROM information_schema.SCHEMATA WHERE SCHEMA_NAME NOT IN %(system)s ORDER BY 1"
TABLES = """
SELECT t.TABLE_NAME AS name, t.TABLE_TYPE AS kind, t.TABLE_COMMENT AS comment, v.VIEW_DEFINITION AS view_sql
FROM information_schema.TABLES t
LEFT JOIN information_schema.VIEWS v ON v.TABLE_SCHEMA = t.TABLE_SCHEMA AND v.TABLE_NAME = t.TABLE_NAME
WHERE t.TABLE_SCHEMA = %(schema)s AND (%(table)s IS NULL OR t.TABLE_NAME = %(table)s)
ORDER BY 1
"""
COLUMNS = """
SELECT TABLE_NAME AS table_name, COLUMN_NAME AS name, COLUMN_TYPE AS type, IS_NULLABLE = 'YES' AS nullable,
       COLUMN_COMMENT AS comment, COLUMN_KEY = 'PRI' AS is_key
FROM information_schema.COLUMNS
WHERE TABLE_SCHEMA = %(schema)s AND (%(table)s IS NULL OR TABLE_NAME = %(table)s)
ORDER BY TABLE_NAME, ORDINAL_POSITION
"""
FOREIGN_KEYS = """
SELECT CONSTRAINT_NAME AS name, TABLE_NAME AS table_name, COLUMN_NAME AS column_name,
       REFERENCED_TABLE_SCHEMA AS ref_schema, REFERENCED_TABLE_NAME AS ref_table, REFERENCED_COLUMN_NAME AS ref_column
FROM information_schema.KEY_COLUMN_USAGE
WHERE TABLE_SCHEMA = %(schema)s AND REFERENCED_TABLE_NAME IS NOT NULL AND (%(table)s IS NULL OR TABLE_NAME = %(table)s)
ORDER BY TABLE_NAME, CONSTRAINT_NAME, ORDINAL_POSITION
"""
# Digests of statements run with a default database (or naming theirs), the system's own left out.
STATEMENTS = """
SELECT SCHEMA_NAME AS schema_name, DIGEST AS digest, DIGEST_TEXT AS text, COUNT_STAR AS calls, FIRST_SEEN AS first_seen
FROM performance_schema.events_statements_summary_by_digest
WHERE DIGEST IS NOT NULL AND DIGEST_TEXT IS NOT NULL
  AND NOT (DIGEST_TEXT LIKE %(information)s OR DIGEST_TEXT LIKE %(performance)s)
"""


class MySQLConnector:
    """The server's databases as schemas of the database the URL names; `schemas`: those to read
    (empty: every one but the system's)."""

    def __init__(self, url: str, schemas: list[str]) -> None:
        self.url = url
        self.database = database_name(url)
        self.selected = schemas
        self.lists_all_schemas = not schemas

    def _rows(self, sql: str, **params: object) -> list[dict[str, Any]]:
        import pymysql

        with connect(self.url) as con, con.cursor(pymysql.cursors.DictCursor) as cursor:
            try:
                cursor.execute(sql, params)
                return list(cursor.fetchall())
            except pymysql.Error as err:
                raise EngineUnavailable(f"MySQL refused a catalogue read: {err.args[-1] if err.args else err}") from None

    def schemas(self) -> list[str]:
        if self.selected:
            return list(self.selected)
        return [row["name"] for row in self._rows(SCHEMAS, system=SYSTEM_SCHEMAS)]

    def snapshot(self, schema: str, table: str | None = None) -> Snapshot:
        scope = {"schema": schema, "table": table}
        tables, columns, keys = self._rows(TABLES, **scope), self._rows(COLUMNS, **scope), self._rows(FOREIGN_KEYS, **scope)
        by_table: dict[str, list[ColumnInfo]] = defaultdict(list)
        for row in columns:
            found = by_table[row["table_name"]]
            found.append(ColumnInfo(row["name"], row["type"], len(found) + 1, bool(row["nullable"]), row["comment"] or None, bool(row["is_key"])))
        infos = tuple(
            TableInfo(
                self.database,
                schema,
                row["name"],
                "VIEW" if row["kind"] == "VIEW" else "TABLE",
                None if row["kind"] == "VIEW" else row["comment"] or None,  # a view's comment is always the word VIEW
                row["view_sql"],
                tuple(by_table[row["name"]]),
            )
            for row in tables
        )
        grouped: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
        for row in keys:
            grouped[(row["table_name"], row["name"])].append(row)
        foreign = tuple(
            ForeignKey(
                name,
                f"{self.database}.{schema}.{table_name}",
                tuple(row["column_name"] for row in rows),
                f"{self.database}.{rows[0]['ref_schema']}.{rows[0]['ref_table']}",
                tuple(row["ref_column"] for row in rows),
            )
            for (table_name, name), rows in grouped.items()
        )
        return Snapshot(self.database, schema, infos, foreign, table)


def read_statements(url: str) -> tuple[str, list[Statement]]:
    """The digests of statements run on the server, each after a USE of its default database."""
    import pymysql

    with connect(url) as con, con.cursor(pymysql.cursors.DictCursor) as cursor:
        try:
            cursor.execute(STATEMENTS, {"information": "%information_schema%", "performance": "%performance_schema%"})
            rows = list(cursor.fetchall())
        except pymysql.Error as err:
            hint = " (performance_schema = ON in the server's configuration, a restart)" if "performance_schema" in str(err) else ""
            raise EngineUnavailable(f"MySQL refused the statement digest read: {err.args[-1] if err.args else err}{hint}") from None
    return "", [
        Statement(
            f"{row['schema_name'] or ''}:{row['digest']}:{_seen(row['first_seen'])}",
            int(row["calls"]),
            f"USE {_quoted(row['schema_name'])};\n{row['text']}" if row["schema_name"] else row["text"],
        )
        for row in rows
        if (row["schema_name"] or "") not in SYSTEM_SCHEMAS
    ]


def _seen(value: datetime | str) -> str:
    return value.isoformat() if isinstance(value, datetime) else str(value)


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"
