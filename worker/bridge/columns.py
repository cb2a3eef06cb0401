"""Which columns hold identifiers worth bridging, read from the metadata graph.

A string column of a table qualifies when it is a declared key, or joins a key column (a declared
foreign key, or a join learned from the query log: `work_orders.fault_code` joined to
`fault_codes.code` in real queries), when a glossary term with `identifier = true` tags it, or
when settings name it. Views are never scanned: reading one runs its whole query.
"""

from __future__ import annotations

from dataclasses import dataclass

from neo4j import Driver

from worker.graph.schema import Label, Rel
from worker.settings import BridgeSettings

STRING_TYPES = ("VARCHAR", "STRING", "TEXT", "CHAR")
IDENTIFIER_COLUMNS = f"""
MATCH (s:{Label.SCHEMA})-[:{Rel.HAS_TABLE}]->(t:{Label.TABLE})-[:{Rel.HAS_COLUMN}]->(c:{Label.COLUMN})
WHERE coalesce(t.kind, 'TABLE') = 'TABLE' AND NOT coalesce(c.nested, false)
  AND any(prefix IN $string_types WHERE toUpper(c.type) STARTS WITH prefix)
  AND (
    any(chosen IN $chosen WHERE c.id = chosen OR c.id ENDS WITH '.' + chosen)
    OR ($keys AND (c.is_primary_key OR c.is_foreign_key
                   OR EXISTS {{ (c)-[:{Rel.REFERENCES}|{Rel.JOINS_WITH}]-(key:{Label.COLUMN}) WHERE key.is_primary_key }}))
    OR EXISTS {{ (c)-[:{Rel.TAGGED_WITH}]->(:{Label.BUSINESS_TERM} {{identifier: true}}) }}
  )
RETURN c.id AS id, t.database AS database, s.name AS schema, t.name AS table, c.name AS column
ORDER BY id
"""


@dataclass(frozen=True)
class IdentifierColumn:
    id: str  # the Column node's id: database.schema.table.column
    database: str  # the DuckDB file's stem, or the BigQuery project
    schema: str
    table: str
    column: str


def identifier_columns(driver: Driver, database: str, settings: BridgeSettings) -> list[IdentifierColumn]:
    rows = driver.execute_query(IDENTIFIER_COLUMNS, string_types=list(STRING_TYPES), chosen=settings.columns, keys=settings.keys, database_=database).records
    return [IdentifierColumn(row["id"], row["database"], row["schema"], row["table"], row["column"]) for row in rows]
