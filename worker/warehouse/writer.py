"""Make the metadata graph match a snapshot: Database → Schema → Table → Column, declared keys.

Neocarta's labels and relationship types, dotted ids. A snapshot of a whole schema also removes
tables that are gone; a snapshot of one table (an audit-log event) touches only that table. Nodes
are rewritten only when their content hash changed; dropped columns go with their edges.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from neo4j import Driver, ManagedTransaction

from worker.graph.content import content_hash
from worker.graph.schema import NEOCARTA_GRAPH_LABEL, NEOCARTA_VERSION, Label, Rel
from worker.graph.stamps import stamp
from worker.warehouse.schema_snapshot import Snapshot

MERGE_SCHEMA = f"""
MERGE (d:{Label.DATABASE} {{id: $database}})
ON CREATE SET d.name = $database, d.updated_at = datetime()
SET d.engine = $engine
MERGE (s:{Label.SCHEMA} {{id: $schema_id}})
ON CREATE SET s.name = $schema, s.updated_at = datetime()
MERGE (d)-[:{Rel.HAS_SCHEMA}]->(s)
"""
STORED = f"""
MATCH (:{Label.SCHEMA} {{id: $schema_id}})-[:{Rel.HAS_TABLE}]->(t:{Label.TABLE})
WHERE $table IS NULL OR t.name = $table
OPTIONAL MATCH (t)-[:{Rel.HAS_COLUMN}]->(c:{Label.COLUMN})
RETURN t.id AS id, t.content_hash AS hash, collect([c.id, c.content_hash]) AS columns
"""
UPSERT_TABLES = f"""
UNWIND $rows AS r
MATCH (s:{Label.SCHEMA} {{id: $schema_id}})
MERGE (t:{Label.TABLE} {{id: r.id}})
SET t += r.props, t.updated_at = datetime()
MERGE (s)-[:{Rel.HAS_TABLE}]->(t)
"""
UPSERT_COLUMNS = f"""
UNWIND $rows AS r
MATCH (t:{Label.TABLE} {{id: r.table}})
MERGE (c:{Label.COLUMN} {{id: r.id}})
SET c += r.props, c.updated_at = datetime()
REMOVE c.data_type, c.primary_key  // names used before Neocarta's (type, is_primary_key)
MERGE (t)-[:{Rel.HAS_COLUMN}]->(c)
"""
DELETE_COLUMNS = f"UNWIND $ids AS id MATCH (c:{Label.COLUMN} {{id: id}}) DETACH DELETE c"
DELETE_TABLES = f"""
UNWIND $ids AS id
MATCH (t:{Label.TABLE} {{id: id}})
OPTIONAL MATCH (t)-[:{Rel.HAS_COLUMN}]->(c:{Label.COLUMN})
DETACH DELETE t, c
"""
# Neocarta's singleton metadata node: which conventions wrote this graph, and when it last changed.
MARK_NEOCARTA_GRAPH = f"""
MERGE (n:`{NEOCARTA_GRAPH_LABEL}`)
ON CREATE SET n.initial_version = $version, n.latest_version = $version, n.create_date = datetime(), n.last_updated = datetime()
WITH n WHERE $changed
SET n.latest_version = $version, n.last_updated = datetime()
"""
GONE_SCHEMAS = f"""
MATCH (:{Label.DATABASE} {{id: $database}})-[:{Rel.HAS_SCHEMA}]->(s:{Label.SCHEMA})
WHERE NOT s.name IN $present
OPTIONAL MATCH (s)-[:{Rel.HAS_TABLE}]->(t:{Label.TABLE})
OPTIONAL MATCH (t)-[:{Rel.HAS_COLUMN}]->(c:{Label.COLUMN})
RETURN s.name AS name, s.id AS id, count(DISTINCT t) AS tables, count(c) AS columns ORDER BY id
"""
DELETE_SCHEMAS = f"""
UNWIND $ids AS id
MATCH (s:{Label.SCHEMA} {{id: id}})
OPTIONAL MATCH (s)-[:{Rel.HAS_TABLE}]->(t:{Label.TABLE})
OPTIONAL MATCH (t)-[:{Rel.HAS_COLUMN}]->(c:{Label.COLUMN})
DETACH DELETE s, t, c
"""
DROP_KEYS = f"""
UNWIND $tables AS id
MATCH (:{Label.TABLE} {{id: id}})-[:{Rel.HAS_COLUMN}]->(a:{Label.COLUMN})-[r:{Rel.REFERENCES}]->(b:{Label.COLUMN})
WITH r, {{source: a.id, target: b.id, constraint: r.constraint, ordinal: r.ordinal}} AS key
DELETE r
RETURN key
"""
CREATE_KEYS = f"""
UNWIND $rows AS r
MATCH (a:{Label.COLUMN} {{id: r.source}})
MATCH (b:{Label.COLUMN} {{id: r.target}})
MERGE (a)-[k:{Rel.REFERENCES} {{constraint: r.constraint}}]->(b)
SET k.ordinal = r.ordinal
"""


def _key_order(key: dict) -> tuple:
    return key["source"], key["target"], key["constraint"], key["ordinal"]


@dataclass
class MetadataReport:
    tables_written: int = 0
    tables_deleted: int = 0
    columns_written: int = 0
    columns_deleted: int = 0
    keys: int = 0


class MetadataWriter:
    def __init__(self, driver: Driver, database: str) -> None:
        self.driver = driver
        self.database = database

    def apply(self, snapshot: Snapshot) -> MetadataReport:
        with self.driver.session(database=self.database) as session:
            return session.execute_write(self._apply, snapshot)

    def prune_schemas(self, database: str, present: list[str]) -> dict[str, MetadataReport]:
        """Remove the schemas of `database` (and only of it) that are no longer in the warehouse."""
        with self.driver.session(database=self.database) as session:
            return session.execute_write(self._prune_schemas, database, present)

    def _prune_schemas(self, tx: ManagedTransaction, database: str, present: list[str]) -> dict[str, MetadataReport]:
        gone = {
            row["name"]: (row["id"], MetadataReport(tables_deleted=row["tables"], columns_deleted=row["columns"]))
            for row in tx.run(GONE_SCHEMAS, database=database, present=present)
        }
        if gone:
            tx.run(DELETE_SCHEMAS, ids=[schema_id for schema_id, _ in gone.values()]).consume()
            stamp(tx, "warehouse")
        return {name: report for name, (_, report) in gone.items()}

    def _apply(self, tx: ManagedTransaction, snapshot: Snapshot) -> MetadataReport:
        report = MetadataReport()
        schema_id = f"{snapshot.database}.{snapshot.schema}"
        tx.run(MERGE_SCHEMA, database=snapshot.database, schema_id=schema_id, schema=snapshot.schema, engine=snapshot.engine).consume()
        stored = {
            row["id"]: (row["hash"], {column: digest for column, digest in row["columns"] if column})
            for row in tx.run(STORED, schema_id=schema_id, table=snapshot.table)
        }
        table_rows, column_rows, gone_columns = [], [], []
        foreign = {f"{key.table}.{column}" for key in snapshot.foreign_keys for column in key.columns}
        for table in snapshot.tables:
            props = {
                "name": table.name,
                "kind": table.kind,
                "description": table.description,
                "view_sql": table.view_sql,
                "schema": snapshot.schema,
                "database": snapshot.database,
            }
            digest = content_hash(props)
            old_hash, old_columns = stored.get(table.id, (None, {}))
            if old_hash != digest:
                table_rows.append({"id": table.id, "props": {**props, "content_hash": digest}})
            current = set()
            for column in table.columns:
                column_id = f"{table.id}.{column.name}"
                current.add(column_id)
                column_props = {**asdict(column), "table": table.id, "is_foreign_key": column_id in foreign}
                column_digest = content_hash(column_props)
                if old_columns.get(column_id) != column_digest:
                    column_rows.append({"id": column_id, "table": table.id, "props": {**column_props, "content_hash": column_digest}})
            gone_columns.extend(sorted(set(old_columns) - current))
        gone_tables = sorted(set(stored) - {table.id for table in snapshot.tables})
        # a refresh of one table usually changes little: statements with nothing to do are not sent
        if gone_tables:
            tx.run(DELETE_TABLES, ids=gone_tables).consume()
        if gone_columns:
            tx.run(DELETE_COLUMNS, ids=gone_columns).consume()
        if table_rows:
            tx.run(UPSERT_TABLES, rows=table_rows, schema_id=schema_id).consume()
        if column_rows:
            tx.run(UPSERT_COLUMNS, rows=column_rows).consume()
        dropped = [row["key"] for row in tx.run(DROP_KEYS, tables=[table.id for table in snapshot.tables])]
        key_rows = [
            {"source": f"{key.table}.{column}", "target": f"{key.ref_table}.{ref}", "constraint": key.name, "ordinal": index}
            for key in snapshot.foreign_keys
            for index, (column, ref) in enumerate(zip(key.columns, key.ref_columns, strict=True))
        ]
        if key_rows:
            tx.run(CREATE_KEYS, rows=key_rows).consume()
        report.tables_written, report.tables_deleted = len(table_rows), len(gone_tables)
        report.columns_written, report.columns_deleted = len(column_rows), len(gone_columns)
        keys_changed = sorted(map(_key_order, dropped)) != sorted(map(_key_order, key_rows))
        changed = bool(report.tables_written or report.tables_deleted or report.columns_written or report.columns_deleted or keys_changed)
        if changed:
            stamp(tx, "warehouse")
        tx.run(MARK_NEOCARTA_GRAPH, version=NEOCARTA_VERSION, changed=changed).consume()
        report.keys = len(key_rows)
        return report
