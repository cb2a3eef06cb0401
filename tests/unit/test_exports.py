"""Reading Snowflake and Databricks exports: files told by their columns, rows into events and schemas."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest

from worker.warehouse.export_engines import ENGINES, engine_of
from worker.warehouse.exports import ExportError, SchemaRows, columns_of, kind_of, query_events, read_rows, snapshots, timestamp

SNOWFLAKE, DATABRICKS = ENGINES["snowflake"], ENGINES["databricks"]


@pytest.mark.parametrize(
    ("written", "utc"),
    [
        ("2026-11-30 09:30:00.123 -0800", "2026-11-30T17:30:00.123000+00:00"),  # Snowflake's CSV unload
        ("2026-11-30T17:30:00Z", "2026-11-30T17:30:00+00:00"),
        ("2026-11-30 17:30:00", "2026-11-30T17:30:00+00:00"),  # no offset: UTC
        ("2026-12-01 02:30:00 +0900", "2026-11-30T17:30:00+00:00"),
    ],
)
def test_export_times_are_utc(written: str, utc: str) -> None:
    assert timestamp(written) == utc


def test_a_time_that_is_none_is_refused() -> None:
    with pytest.raises(ValueError, match="not a time"):
        timestamp("yesterday")


@pytest.mark.parametrize("suffix", [".csv", ".parquet", ".json", ".ndjson"])
def test_every_format_reads_the_same_rows(tmp_path: Path, suffix: str) -> None:
    rows = [
        {
            "QUERY_ID": "q1",
            "QUERY_TEXT": 'SELECT 1\nFROM t -- two lines, a comma, "quotes"',
            "EXECUTION_STATUS": "SUCCESS",
            "START_TIME": "2026-11-30 09:30:00 -0800",
        }
    ]
    staging = tmp_path / "rows.json"
    staging.write_text(json.dumps(rows))
    path = tmp_path / f"history{suffix}"
    formats = {".csv": "(FORMAT csv, HEADER)", ".parquet": "(FORMAT parquet)", ".json": "(FORMAT json, ARRAY true)", ".ndjson": "(FORMAT json)"}
    with duckdb.connect() as con:
        con.execute(f"COPY (SELECT * FROM read_json('{staging}', format = 'array')) TO '{path}' {formats[suffix]}")
    assert kind_of(columns_of(path), SNOWFLAKE) == "queries"
    [event] = query_events(read_rows(path), SNOWFLAKE).events
    assert (event.job_id, event.sql, event.at, event.failed) == ("snowflake:q1", rows[0]["QUERY_TEXT"], "2026-11-30T17:30:00+00:00", False)


def test_statuses_and_statement_types_decide_what_counts() -> None:
    base = {"statement_id": "s", "statement_text": "SELECT 1", "start_time": "2026-11-30T17:30:00Z", "statement_type": "SELECT"}
    rows = [
        {**base, "statement_id": "ok", "execution_status": "FINISHED"},
        {**base, "statement_id": "bad", "execution_status": "FAILED"},
        {**base, "statement_id": "later", "execution_status": "RUNNING"},
        {**base, "statement_id": "show", "execution_status": "FINISHED", "statement_type": "SHOW"},
        {**base, "statement_id": "", "execution_status": "FINISHED"},
        {**base, "statement_id": "when", "execution_status": "FINISHED", "start_time": "soon"},
    ]
    found = query_events(rows, DATABRICKS)
    assert [(event.job_id, event.failed) for event in found.events] == [("databricks:ok", False), ("databricks:bad", True)]
    assert (found.unfinished, found.not_data) == (1, 1)
    assert [where for where, _ in found.poison] == ["row 5", "row 6"]


def test_a_schema_export_makes_whole_schemas_and_leaves_dropped_objects_out() -> None:
    path = {"table_catalog": "DB", "table_schema": "SALES"}
    rows = SchemaRows(
        columns=[
            {
                **path,
                "table_name": "ORDERS",
                "column_name": "CUSTOMER_ID",
                "ordinal_position": "2",
                "data_type": "NUMBER",
                "is_nullable": "NO",
                "comment": "who",
            },
            {**path, "table_name": "ORDERS", "column_name": "ID", "ordinal_position": "1", "data_type": "NUMBER", "is_nullable": "NO"},
            {**path, "table_name": "OLD", "column_name": "X", "ordinal_position": "1", "data_type": "TEXT", "deleted": "2026-01-01"},
        ],
        tables=[{**path, "table_name": "ORDERS", "table_type": "BASE TABLE", "comment": "one per order"}, {**path, "table_name": "V", "table_type": "VIEW"}],
    )
    [snapshot] = snapshots(rows, SNOWFLAKE)
    assert (snapshot.database, snapshot.schema, snapshot.engine) == ("DB", "SALES", "snowflake")
    orders, view = snapshot.tables
    assert (orders.id, orders.kind, orders.description, view.kind) == ("DB.SALES.ORDERS", "TABLE", "one per order", "VIEW")
    assert [(column.name, column.position, column.nullable, column.description) for column in orders.columns] == [
        ("ID", 1, False, None),
        ("CUSTOMER_ID", 2, False, "who"),
    ]


def test_files_are_told_by_their_folder_and_their_columns(tmp_path: Path) -> None:
    assert engine_of(tmp_path / "snowflake" / "deep" / "x.csv", tmp_path) is SNOWFLAKE
    assert engine_of(tmp_path / "snowflake.csv", tmp_path) is None  # a file, not a subfolder
    assert engine_of(tmp_path / "oracle" / "x.csv", tmp_path) is None
    with pytest.raises(ExportError, match="none of databricks's exports"):
        kind_of(["who", "what"], DATABRICKS)
    assert kind_of(["table_catalog", "table_schema", "table_name", "table_type"], DATABRICKS) == "tables"


def test_snowflakes_imported_keys_become_declared_keys_in_key_order() -> None:
    """`SHOW IMPORTED KEYS` saved with RESULT_SCAN: a row per column of a composite key."""
    side = {
        "fk_database_name": "DB",
        "fk_schema_name": "S",
        "fk_table_name": "LINES",
        "pk_database_name": "DB",
        "pk_schema_name": "S",
        "pk_table_name": "ORDERS",
        "fk_name": "LINES_ORDERS",
    }
    rows = SchemaRows(
        columns=[
            {"table_catalog": "DB", "table_schema": "S", "table_name": table, "column_name": column}
            for table, column in (("ORDERS", "ID"), ("ORDERS", "REGION"), ("LINES", "ORDER_ID"), ("LINES", "ORDER_REGION"))
        ]
    )
    rows.add(
        "imported_keys",
        [
            {**side, "fk_column_name": "ORDER_REGION", "pk_column_name": "REGION", "key_sequence": "2"},
            {**side, "fk_column_name": "ORDER_ID", "pk_column_name": "ID", "key_sequence": "1"},
        ],
    )
    [snapshot] = snapshots(rows, SNOWFLAKE)
    [key] = snapshot.foreign_keys
    assert (key.name, key.table, key.columns, key.ref_table, key.ref_columns) == (
        "LINES_ORDERS",
        "DB.S.LINES",
        ("ORDER_ID", "ORDER_REGION"),
        "DB.S.ORDERS",
        ("ID", "REGION"),
    )


def test_information_schema_keys_pair_each_column_with_its_place_in_the_referenced_key() -> None:
    """Databricks' key_column_usage, referential_constraints and table_constraints."""
    table = lambda name: {"table_catalog": "main", "table_schema": "shop", "table_name": name}
    usage = [
        {**table("orders"), "constraint_name": "orders_pk", "column_name": "region", "ordinal_position": 2},
        {**table("orders"), "constraint_name": "orders_pk", "column_name": "id", "ordinal_position": 1},
        {**table("lines"), "constraint_name": "lines_orders", "column_name": "order_region", "ordinal_position": 1, "position_in_unique_constraint": 2},
        {**table("lines"), "constraint_name": "lines_orders", "column_name": "order_id", "ordinal_position": 2, "position_in_unique_constraint": 1},
        {**table("lines"), "constraint_name": "lines_missing", "column_name": "order_id", "ordinal_position": 1, "position_in_unique_constraint": 1},
    ]
    rows = SchemaRows(
        columns=[
            {**table(name), "column_name": column}
            for name, column in (("orders", "id"), ("orders", "region"), ("lines", "order_id"), ("lines", "order_region"))
        ]
    )
    assert kind_of(usage[0], DATABRICKS) == "key_usage"
    rows.add("key_usage", usage)
    rows.add(
        "references",
        [
            {
                "constraint_catalog": "main",
                "constraint_schema": "shop",
                "constraint_name": name,
                "unique_constraint_catalog": "main",
                "unique_constraint_schema": "shop",
                "unique_constraint_name": unique,
            }
            for name, unique in (("lines_orders", "orders_pk"), ("lines_missing", "gone_pk"))
        ],
    )
    rows.add("constraints", [{**table("orders"), "constraint_name": "orders_pk", "constraint_type": "PRIMARY KEY"}])
    [snapshot] = snapshots(rows, DATABRICKS)
    [key] = snapshot.foreign_keys  # lines_missing names a key the exports do not give: left out
    assert (key.table, key.columns, key.ref_table, key.ref_columns) == ("main.shop.lines", ("order_region", "order_id"), "main.shop.orders", ("region", "id"))
    primary = {(table.name, column.name) for table in snapshot.tables for column in table.columns if column.is_primary_key}
    assert primary == {("orders", "id"), ("orders", "region")}


def test_a_snowflake_query_is_read_in_the_session_it_ran_in() -> None:
    row = {"query_id": "q", "query_text": "SELECT * FROM orders", "execution_status": "SUCCESS", "start_time": "2026-11-30T17:30:00Z"}
    [bare, in_schema, in_database] = query_events(
        [row, {**row, "database_name": "SHOP", "schema_name": 'my"schema'}, {**row, "database_name": "SHOP", "schema_name": None}], SNOWFLAKE
    ).events
    assert bare.sql == "SELECT * FROM orders"
    assert in_schema.sql == 'USE SCHEMA "SHOP"."my""schema";\nSELECT * FROM orders'
    assert in_database.sql == 'USE DATABASE "SHOP";\nSELECT * FROM orders'
