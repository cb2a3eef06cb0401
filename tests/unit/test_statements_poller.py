"""What the PostgreSQL query-log poller learns from: data statements, never lakegraph's own reads
or utility commands; and a connection URL must name its database."""

from __future__ import annotations

import pytest

from worker.exceptions import LakegraphError
from worker.shared.postgres_client import database_name
from worker.warehouse.statements_poller import DATA_STATEMENT, SCHEMA_CHANGE, Watermark, changed_tables


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT 1",
        "  with t AS (SELECT 1) SELECT * FROM t",
        "/* dashboard 7 */ SELECT a.x FROM a JOIN b ON a.id = b.a_id",
        "-- nightly\nINSERT INTO totals SELECT * FROM orders",
        "CREATE TABLE top_customers AS SELECT * FROM customers",
        "create or replace temp view v AS SELECT 1",
        "CREATE MATERIALIZED VIEW m AS SELECT 1",
        "UPDATE orders SET total = 0 FROM customers c WHERE c.id = orders.customer_id",
    ],
)
def test_data_statements_are_learned_from(sql: str) -> None:
    assert DATA_STATEMENT.match(sql)


@pytest.mark.parametrize(
    "sql",
    [
        "SET search_path = crm",
        "SHOW work_mem",
        "BEGIN",
        "VACUUM orders",
        "CREATE ROLE analyst LOGIN",
        "CREATE EXTENSION pg_stat_statements",
        "GRANT SELECT ON a TO b",
    ],
)
def test_utility_statements_are_not(sql: str) -> None:
    assert not DATA_STATEMENT.match(sql)


def test_a_watermark_survives_its_storage() -> None:
    mark = Watermark("2026-12-07T10:00:00+00:00", {"10:-6374": 3, "16384:42": 1})
    assert Watermark.parse(mark.dump()) == mark
    assert Watermark.parse(None) == Watermark()


def test_a_url_names_its_database() -> None:
    assert database_name("postgresql://lakegraph:secret@db.internal:5432/shop?sslmode=require") == "shop"
    assert database_name("host=db dbname=sales user=x") == "sales"
    with pytest.raises(LakegraphError, match="names no database"):
        database_name("postgresql://lakegraph@db:5432")
    with pytest.raises(LakegraphError, match="does not parse"):
        database_name("postgresql://[::1")


def test_a_mysql_url_names_its_server_and_database() -> None:
    from worker.shared.mysql_client import Server, server

    assert server("mysql://lake%40graph:p%2Fw@db.internal:3307/shop") == Server("db.internal", 3307, "lake@graph", "p/w", "shop")
    assert server("mariadb://root@127.0.0.1/crm").port == 3306
    with pytest.raises(LakegraphError, match="names no database"):
        server("mysql://root@db")


def test_a_server_engine_needs_a_url_of_its_kind() -> None:
    from worker.settings import MASK, load_settings

    with pytest.raises(LakegraphError, match="engine mysql needs a URL mysql:// or mariadb://"):
        load_settings(warehouse={"engine": "mysql", "url": "postgresql://x@db/shop"})
    assert load_settings(warehouse={"engine": "mysql", "url": "mysql://x:secret@db/shop"}).masked()["warehouse"]["url"] == f"mysql://x:{MASK}@db/shop"


@pytest.mark.parametrize(
    ("read", "url", "says"),
    [
        ("postgres", "postgresql://lakegraph@127.0.0.1:1/shop", "PostgreSQL unreachable"),
        ("mysql", "mysql://lakegraph@127.0.0.1:1/shop", "MySQL unreachable"),
    ],
)
def test_a_server_that_is_down_is_a_transient_error_naming_it(read: str, url: str, says: str) -> None:
    """The poll task retries it with backoff (EngineUnavailable is transient), then parks it as a problem."""
    from worker.exceptions import EngineUnavailable
    from worker.tasks.context import TRANSIENT_ERRORS
    from worker.warehouse import mysql, postgres

    reader = {"postgres": postgres.read_statements, "mysql": mysql.read_statements}[read]
    with pytest.raises(EngineUnavailable, match=says) as caught:
        reader(url)
    assert isinstance(caught.value, TRANSIENT_ERRORS)


@pytest.mark.parametrize(
    ("sql", "dialect", "tables"),
    [
        ("CREATE TABLE returns (id integer PRIMARY KEY, order_id integer REFERENCES orders (id))", "postgres", {("public", "returns"), ("public", "orders")}),
        ("ALTER TABLE crm.accounts ADD COLUMN tier text", "postgres", {("crm", "accounts")}),
        ("DROP TABLE IF EXISTS old_orders, crm.legacy", "postgres", {("public", "old_orders"), ("crm", "legacy")}),
        ("COMMENT ON COLUMN crm.accounts.tier IS 'Gold, silver'", "postgres", {("crm", "accounts")}),
        ("COMMENT ON TABLE customers IS 'People'", "postgres", {("public", "customers")}),
        ("USE `shop`;\nALTER TABLE `orders` ADD COLUMN `tier` TEXT", "mysql", {("shop", "orders")}),
        ("CREATE TABLE `crm` . `notes` ( ID INTEGER )", "mysql", {("crm", "notes")}),
        ("RENAME TABLE `orders` TO `purchases`", "mysql", set()),  # not parsed: left to the reconcile
    ],
)
def test_a_ddl_statement_names_the_tables_to_read_again(sql: str, dialect: str, tables: set[tuple[str, str]]) -> None:
    default = "public" if dialect == "postgres" else None
    assert SCHEMA_CHANGE.match(sql) or not tables
    assert changed_tables(sql, dialect, default) == tables


def test_data_statements_change_no_table_definition() -> None:
    assert not SCHEMA_CHANGE.match("SELECT * FROM orders") and not SCHEMA_CHANGE.match("INSERT INTO t SELECT 1")
