"""What the live-server tests' shop catalogue becomes in the graph, whichever server holds it:
tables and a view in `main` (PostgreSQL's public, MySQL's shop database) and an `accounts` table in
crm, comments as descriptions, columns in order with the key marked, declared keys column by column."""

from __future__ import annotations

from neo4j import Driver

TABLE_COMMENT = "People who bought at least once"
COLUMN_COMMENT = "Sales region, as the CRM spells it"


def assert_shop_catalogue(graph: Driver, main: str) -> None:
    prefix = f"shop.{main}"
    tables = {row["id"]: row for row in graph.execute_query("MATCH (t:Table) RETURN t.id AS id, t.kind AS kind, t.description AS description").records}
    assert set(tables) == {f"{prefix}.{name}" for name in ("customers", "orders", "order_lines", "shipments", "big_orders")} | {"shop.crm.accounts"}
    assert tables[f"{prefix}.big_orders"]["kind"] == "VIEW" and tables[f"{prefix}.big_orders"]["description"] is None
    assert tables[f"{prefix}.customers"]["description"] == TABLE_COMMENT
    columns = graph.execute_query(
        "MATCH (:Table {id: $table})-[:HAS_COLUMN]->(c) RETURN c.name AS name, c.description AS description, c.is_primary_key AS key ORDER BY c.position",
        table=f"{prefix}.customers",
    ).records
    assert [(row["name"], row["description"], row["key"]) for row in columns] == [("id", None, True), ("email", None, False), ("region", COLUMN_COMMENT, False)]
    references = {(row["a"], row["b"]) for row in graph.execute_query("MATCH (a:Column)-[:REFERENCES]->(b:Column) RETURN a.id AS a, b.id AS b").records}
    assert references == {
        (f"{prefix}.orders.customer_id", f"{prefix}.customers.id"),
        (f"{prefix}.shipments.order_id", f"{prefix}.order_lines.order_id"),  # a composite key, column by column
        (f"{prefix}.shipments.line", f"{prefix}.order_lines.line"),
        ("shop.crm.accounts.customer_id", f"{prefix}.customers.id"),  # into another schema, however they are ordered
    }
