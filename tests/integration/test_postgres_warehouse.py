"""PostgreSQL as the warehouse, against a real server: its catalogue into the graph, analysts'
queries learned from pg_stat_statements (each run counted once, across a restart and a reset),
run_sql and the bridge's value scan on it."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from neo4j import Driver

from shapes.access.sql_runner import SqlRunner
from shapes.spec.exceptions import ShapeError
from tests.conftest import Neo4jService, runtime_settings
from tests.helpers import clean_env, run_cli
from tests.integration.shop_catalogue import COLUMN_COMMENT, TABLE_COMMENT, assert_shop_catalogue
from tests.services.postgres import PostgresServer
from worker.bridge.columns import IdentifierColumn
from worker.bridge.scan import ValueScanner
from worker.components import Components
from worker.doctor import _postgres
from worker.settings import Settings
from worker.shared.grants import Grant
from worker.warehouse.history import history_poller
from worker.warehouse.statements_poller import StatementsPoller

pytestmark = pytest.mark.timeout(300)

SHOP = f"""
CREATE TABLE customers (id integer PRIMARY KEY, email text NOT NULL, region text);
COMMENT ON TABLE customers IS '{TABLE_COMMENT}';
COMMENT ON COLUMN customers.region IS '{COLUMN_COMMENT}';
CREATE TABLE orders (id integer PRIMARY KEY, customer_id integer REFERENCES customers (id), placed date, total numeric(10, 2));
CREATE TABLE order_lines (order_id integer, line integer, sku text, PRIMARY KEY (order_id, line));
CREATE TABLE shipments (id uuid PRIMARY KEY, order_id integer, line integer, FOREIGN KEY (order_id, line) REFERENCES order_lines (order_id, line));
CREATE SEQUENCE tickets;
CREATE VIEW big_orders AS SELECT * FROM orders WHERE total > 100;
CREATE SCHEMA crm;
CREATE TABLE crm.accounts (id integer PRIMARY KEY, customer_id integer REFERENCES public.customers (id), "OwnerName" text);
INSERT INTO customers SELECT i, 'c' || i || '@example.com', CASE WHEN i % 2 = 0 THEN 'EMEA' ELSE 'AMER' END FROM generate_series(1, 20) AS i;
INSERT INTO orders SELECT i, 1 + i % 20, DATE '2026-01-01' + i, i * 7 FROM generate_series(1, 60) AS i;
ALTER TABLE orders ADD COLUMN code text GENERATED ALWAYS AS ('ORD-' || (1000 + id % 30)) STORED;
INSERT INTO order_lines VALUES (1, 1, 'SKU-1');
INSERT INTO shipments VALUES ('5b0a5f36-6a8b-4e34-9a8c-0d9d3c1f7e11', 1, 1);
CREATE ROLE analyst LOGIN;
GRANT USAGE ON SCHEMA crm TO analyst;
GRANT SELECT ON ALL TABLES IN SCHEMA public, crm TO analyst;
"""
ANALYST_QUERY = "SELECT c.region, count(*) FROM orders o JOIN customers c ON c.id = o.customer_id WHERE o.total > 50 GROUP BY c.region"
LEARNED = """
MATCH (:Column {id: 'shop.public.customers.id'})-[j:JOINS_WITH]-(:Column {id: 'shop.public.orders.customer_id'})
RETURN j.executions AS n, j.users AS users
"""


@pytest.fixture(scope="module")
def shop(postgres_server: PostgresServer) -> str:
    """A database `shop` with two schemas, keys, comments and a view; its URL for lakegraph's role."""
    with psycopg.connect(postgres_server.url, autocommit=True) as con:
        con.execute("DROP DATABASE IF EXISTS shop")
        con.execute("CREATE DATABASE shop")
    with psycopg.connect(postgres_server.url_of("shop"), autocommit=True) as con:
        con.execute("CREATE EXTENSION pg_stat_statements")
        con.execute(SHOP)
    return postgres_server.url_of("shop")


@pytest.fixture
def components(shop: str, neo4j_service: Neo4jService, graph: Driver, tmp_path: Path) -> Iterator[Components]:
    settings = runtime_settings(
        tmp_path / "state",
        neo4j={"uri": neo4j_service.uri, "password": neo4j_service.password},
        warehouse={"engine": "postgres", "url": shop},
        embeddings={"provider": "none"},
    )
    with Components.open(settings) as opened:
        yield opened


def analyst(postgres_server: PostgresServer, sql: str, times: int = 1) -> None:
    with psycopg.connect(postgres_server.url_of("shop", "analyst"), autocommit=True) as con:
        for _ in range(times):
            con.execute(sql)


def learned(driver: Driver) -> tuple[int, list[str]]:
    records = driver.execute_query(LEARNED).records
    return (records[0]["n"], records[0]["users"]) if records else (0, [])


def test_the_catalogue_becomes_the_graph(components: Components, graph: Driver) -> None:
    report, _ = components.load_warehouse()
    assert report.database == "shop" and set(report.schemas) == {"public", "crm"}
    assert_shop_catalogue(graph, "public")


def test_each_query_run_is_learned_once_across_restart_and_reset(components: Components, graph: Driver, postgres_server: PostgresServer) -> None:
    components.load_warehouse()
    poller = history_poller(components.settings, graph, components.database, components.query_graph)
    assert isinstance(poller, StatementsPoller)
    poller.poll()  # whatever ran before this test (the fixture's DDL, other tests' queries) is now behind the watermark
    before, _ = learned(graph)

    analyst(postgres_server, ANALYST_QUERY, times=3)
    report = poller.poll()
    assert learned(graph) == (before + 3, ["analyst"])  # three runs of one statement: one event of three
    assert report.runs >= 3 and report.absorbed is not None
    poller.poll()
    assert learned(graph)[0] == before + 3  # polled again: nothing twice

    postgres_server.restart()  # the statistics survive a clean restart, and so does the count
    poller.poll()
    assert learned(graph)[0] == before + 3
    analyst(postgres_server, ANALYST_QUERY.replace("> 50", "> 70"))  # the same statement once normalized
    poller.poll()
    assert learned(graph)[0] == before + 4

    with psycopg.connect(postgres_server.url_of("shop"), autocommit=True) as con:
        con.execute("SELECT pg_stat_statements_reset()")
    analyst(postgres_server, ANALYST_QUERY, times=2)
    report = poller.poll()
    assert report.reset and learned(graph)[0] == before + 6  # counted again from zero, none lost

    analyst(postgres_server, 'SELECT a."OwnerName" FROM crm.accounts a JOIN customers c ON a.customer_id = c.id')
    poller.poll()
    quoted = graph.execute_query(
        "MATCH (:Column {id: 'shop.crm.accounts.customer_id'})-[j:JOINS_WITH]-(:Column {id: 'shop.public.customers.id'}) RETURN j.executions AS n"
    ).records
    assert quoted and quoted[0]["n"] == 1  # another schema, a quoted mixed-case column in the same query


def test_load_warehouse_reads_the_catalogue_and_the_statements(
    shop: str, neo4j_service: Neo4jService, graph: Driver, postgres_server: PostgresServer, tmp_path: Path
) -> None:
    """What a user runs first: `lakegraph load warehouse` on the server, its log learned at once."""
    analyst(postgres_server, ANALYST_QUERY)
    env = clean_env(
        **neo4j_service.env(),
        LAKEGRAPH_STATE_DIR=str(tmp_path / "state"),
        LAKEGRAPH_WAREHOUSE__ENGINE="postgres",
        LAKEGRAPH_WAREHOUSE__URL=shop,
        LAKEGRAPH_EMBEDDINGS__PROVIDER="none",
    )
    result = run_cli("load", "warehouse", env=env)
    assert result.returncode == 0, result.stderr
    assert "shop.crm: 1 tables" in result.stdout and "shop.public: 5 tables" in result.stdout
    assert re.search(r"statement statistics: \d+ statements, \d+ with \d+ new runs, [1-9]\d* join pairs updated", result.stdout), result.stdout
    assert learned(graph)[0] >= 1


def test_a_table_changed_on_the_server_is_read_again_within_one_poll(components: Components, graph: Driver, postgres_server: PostgresServer) -> None:
    components.load_warehouse()
    poller = history_poller(components.settings, graph, components.database, components.query_graph, on_table=components.warehouse.sync_table)
    assert isinstance(poller, StatementsPoller)
    poller.poll()

    def columns(table: str) -> dict[str, str | None]:
        rows = graph.execute_query("MATCH (:Table {id: $id})-[:HAS_COLUMN]->(c) RETURN c.name AS name, c.description AS description", id=table).records
        return {row["name"]: row["description"] for row in rows}

    with psycopg.connect(postgres_server.url_of("shop"), autocommit=True) as con:
        con.execute("CREATE TABLE returns (id integer PRIMARY KEY, order_id integer REFERENCES orders (id))")
        con.execute("ALTER TABLE crm.accounts ADD COLUMN tier text")
        con.execute("COMMENT ON COLUMN crm.accounts.tier IS 'Gold, silver or bronze'")
    report = poller.poll()
    assert {"public.returns", "crm.accounts"} <= set(report.tables_changed)
    assert set(columns("shop.public.returns")) == {"id", "order_id"}
    assert columns("shop.crm.accounts")["tier"] == "Gold, silver or bronze"
    keys = graph.execute_query("MATCH (:Column {id: 'shop.public.returns.order_id'})-[:REFERENCES]->(c) RETURN c.id AS id").records
    assert [row["id"] for row in keys] == ["shop.public.orders.id"]

    with psycopg.connect(postgres_server.url_of("shop"), autocommit=True) as con:
        con.execute("DROP TABLE returns")
    poller.poll()
    assert not graph.execute_query("MATCH (t:Table {id: 'shop.public.returns'}) RETURN t").records


def test_lakegraphs_own_reads_teach_nothing(components: Components, graph: Driver, postgres_server: PostgresServer) -> None:
    components.load_warehouse()  # the catalogue read, then a first poll
    components.load_warehouse()
    texts = [row["sql"] for row in graph.execute_query("MATCH (q:Query) RETURN q.sql AS sql").records]
    assert texts and not [text for text in texts if "pg_class" in text or "FROM pg_stat_statements s" in text]


def test_run_sql_and_the_value_scan_read_postgres(components: Components, shop: str) -> None:
    settings: Settings = components.settings
    runner = SqlRunner(settings)
    result = runner("SELECT region, count(*) AS n FROM customers GROUP BY region ORDER BY region")
    assert result.engine == "postgres" and result.rows == [["AMER", 10], ["EMEA", 10]]
    assert runner("SELECT id FROM shipments").rows == [["5b0a5f36-6a8b-4e34-9a8c-0d9d3c1f7e11"]]  # a uuid, as text
    with pytest.raises(ShapeError, match="read-only"):
        runner("DELETE FROM orders")
    with pytest.raises(ShapeError, match=r"PostgreSQL refused the query: cannot execute nextval\(\) in a read-only transaction"):
        runner("SELECT nextval('tickets')")  # a write sqlglot cannot see: the server's read-only transaction refuses it
    grant = Grant(("shop",), (), ("shop.public.customers",))
    assert runner.within("SELECT count(*) FROM customers", grant, frozenset({"shop.public.customers", "shop.public.orders"})).rows == [[20]]
    with pytest.raises(ShapeError, match="orders"):
        runner.within("SELECT count(*) FROM public.orders", grant, frozenset({"shop.public.customers", "shop.public.orders"}))
    slow = SqlRunner(settings.with_section("shapes", sql_timeout=0.5))
    with pytest.raises(ShapeError, match="time limit"):
        slow("SELECT pg_sleep(5)")

    values = ValueScanner(settings).scan(IdentifierColumn("shop.public.orders.code", "shop", "public", "orders", "code"))
    assert len(values.rows) == 30 and values.rows["ORD-1001"] == 2 and not values.cut
    cut = ValueScanner(settings.with_section("bridge", max_rows=10)).scan(IdentifierColumn("shop.public.orders.code", "shop", "public", "orders", "code"))
    assert sum(cut.rows.values()) == 10 and cut.cut
    assert "pg_stat_statements readable" in _postgres(shop).detail
