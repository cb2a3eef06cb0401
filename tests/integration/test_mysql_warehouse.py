"""MySQL's kind as the warehouse, against a real MariaDB server: its catalogue into the graph,
analysts' queries learned from performance_schema's statement digests (each run counted once,
across a restart and a truncated summary; backticked mixed-case names resolved as MySQL compares
them), run_sql and the bridge's value scan on it."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pymysql
import pytest
from neo4j import Driver

from shapes.access.sql_runner import SqlRunner
from shapes.spec.exceptions import ShapeError
from tests.conftest import Neo4jService, runtime_settings
from tests.integration.shop_catalogue import COLUMN_COMMENT, TABLE_COMMENT, assert_shop_catalogue
from tests.services.mysql import MariaDBServer
from worker.bridge.columns import IdentifierColumn
from worker.bridge.scan import ValueScanner
from worker.components import Components
from worker.doctor import _mysql
from worker.shared.grants import Grant
from worker.warehouse.history import history_poller
from worker.warehouse.statements_poller import StatementsPoller

pytestmark = pytest.mark.timeout(300)

SHOP = [
    "CREATE DATABASE shop",
    "CREATE DATABASE crm",
    "USE shop",  # the sequence engine's seq_1_to_N tables are read in a database
    f"CREATE TABLE shop.customers (id INT PRIMARY KEY, email VARCHAR(80) NOT NULL, region VARCHAR(8) COMMENT '{COLUMN_COMMENT}') COMMENT '{TABLE_COMMENT}'",
    "CREATE TABLE shop.orders (id INT PRIMARY KEY, customer_id INT, total DECIMAL(10, 2), code VARCHAR(12), FOREIGN KEY (customer_id) REFERENCES shop.customers (id))",
    "CREATE TABLE shop.order_lines (order_id INT, line INT, sku VARCHAR(12), PRIMARY KEY (order_id, line))",
    "CREATE TABLE shop.shipments (id INT PRIMARY KEY, order_id INT, line INT, CONSTRAINT shipped FOREIGN KEY (order_id, line) REFERENCES shop.order_lines (order_id, line))",
    "CREATE VIEW shop.big_orders AS SELECT * FROM shop.orders WHERE total > 100",
    "CREATE TABLE crm.accounts (id INT PRIMARY KEY, customer_id INT, OwnerName VARCHAR(40), FOREIGN KEY (customer_id) REFERENCES shop.customers (id))",
    "INSERT INTO shop.customers SELECT seq, CONCAT('c', seq, '@example.com'), IF(seq % 2 = 0, 'EMEA', 'AMER') FROM seq_1_to_20",
    "INSERT INTO shop.orders SELECT seq, 1 + seq % 20, seq * 7, CONCAT('ORD-', 1000 + seq % 30) FROM seq_1_to_60",
    "CREATE USER analyst@'%', analyst@localhost",
    "GRANT SELECT ON shop.* TO analyst@'%', analyst@localhost",
    "GRANT SELECT ON crm.* TO analyst@'%', analyst@localhost",
]
ANALYST_QUERY = "SELECT c.region, count(*) FROM orders o JOIN customers c ON c.id = o.customer_id WHERE o.total > 50 GROUP BY c.region"
LEARNED = """
MATCH (:Column {id: 'shop.shop.customers.id'})-[j:JOINS_WITH]-(:Column {id: 'shop.shop.orders.customer_id'})
RETURN j.executions AS n
"""


@pytest.fixture(scope="module")
def shop(mariadb_server: MariaDBServer) -> str:
    """Databases `shop` and `crm` with keys, comments and a view; the URL of lakegraph's connection."""
    with pymysql.connect(host="127.0.0.1", port=mariadb_server.port, user="root", autocommit=True) as con, con.cursor() as cursor:
        for statement in SHOP:
            cursor.execute(statement)
    return mariadb_server.url_of("shop")


@pytest.fixture
def components(shop: str, neo4j_service: Neo4jService, graph: Driver, tmp_path: Path) -> Iterator[Components]:
    settings = runtime_settings(
        tmp_path / "state",
        neo4j={"uri": neo4j_service.uri, "password": neo4j_service.password},
        warehouse={"engine": "mysql", "url": shop, "schemas": ["shop", "crm"]},
        embeddings={"provider": "none"},
    )
    with Components.open(settings) as opened:
        yield opened


def analyst(server: MariaDBServer, sql: str, times: int = 1) -> None:
    with pymysql.connect(host="127.0.0.1", port=server.port, user="analyst", database="shop", autocommit=True) as con, con.cursor() as cursor:
        for _ in range(times):
            cursor.execute(sql)


def learned(driver: Driver, query: str = LEARNED) -> int:
    records = driver.execute_query(query).records
    return records[0]["n"] if records else 0


def test_the_catalogue_becomes_the_graph(components: Components, graph: Driver) -> None:
    report, _ = components.load_warehouse()
    assert report.database == "shop" and set(report.schemas) == {"shop", "crm"}
    assert_shop_catalogue(graph, "shop")


def test_each_query_run_is_learned_once_across_restart_and_truncation(components: Components, graph: Driver, mariadb_server: MariaDBServer) -> None:
    components.load_warehouse()
    poller = history_poller(components.settings, graph, components.database, components.query_graph)
    assert isinstance(poller, StatementsPoller)
    poller.poll()  # what ran before this test is now behind the watermark
    before = learned(graph)

    analyst(mariadb_server, ANALYST_QUERY, times=3)
    report = poller.poll()
    assert learned(graph) == before + 3 and report.runs >= 3
    poller.poll()
    assert learned(graph) == before + 3  # polled again: nothing twice

    mariadb_server.restart()  # the digests start again, empty: nothing is counted twice
    poller.poll()
    assert learned(graph) == before + 3
    analyst(mariadb_server, ANALYST_QUERY.replace("> 50", "> 70"))  # the same digest
    poller.poll()
    assert learned(graph) == before + 4

    time.sleep(1)  # MariaDB's FIRST_SEEN is in whole seconds: a row begun again must begin in another
    with pymysql.connect(host="127.0.0.1", port=mariadb_server.port, user="root", autocommit=True) as con, con.cursor() as cursor:
        cursor.execute("TRUNCATE TABLE performance_schema.events_statements_summary_by_digest")
    analyst(mariadb_server, ANALYST_QUERY, times=2)
    poller.poll()
    assert learned(graph) == before + 6  # counted again from zero, none lost

    # MySQL compares column names and aliases in any case, quoted or not (table names as the disk does); and a table of another database.
    analyst(mariadb_server, "SELECT `A`.`OWNERNAME` FROM crm.accounts AS `A` JOIN `customers` AS `C` ON `A`.`Customer_ID` = `C`.`ID`")
    poller.poll()
    other = "MATCH (:Column {id: 'shop.crm.accounts.customer_id'})-[j:JOINS_WITH]-(:Column {id: 'shop.shop.customers.id'}) RETURN j.executions AS n"
    assert learned(graph, other) == 1


def test_a_table_changed_on_the_server_is_read_again_within_one_poll(components: Components, graph: Driver, mariadb_server: MariaDBServer) -> None:
    components.load_warehouse()
    poller = history_poller(components.settings, graph, components.database, components.query_graph, on_table=components.warehouse.sync_table)
    assert isinstance(poller, StatementsPoller)
    poller.poll()
    with pymysql.connect(host="127.0.0.1", port=mariadb_server.port, user="root", database="crm", autocommit=True) as con, con.cursor() as cursor:
        cursor.execute("CREATE TABLE notes (id INT PRIMARY KEY, account_id INT, body TEXT COMMENT 'What the account manager wrote')")
    report = poller.poll()
    assert "crm.notes" in report.tables_changed
    rows = graph.execute_query("MATCH (:Table {id: 'shop.crm.notes'})-[:HAS_COLUMN]->(c) RETURN c.name AS name, c.description AS description").records
    assert {row["name"]: row["description"] for row in rows} == {"id": None, "account_id": None, "body": "What the account manager wrote"}


def test_run_sql_and_the_value_scan_read_mysql(components: Components, shop: str) -> None:
    settings = components.settings
    runner = SqlRunner(settings)
    result = runner("SELECT region, count(*) AS n FROM customers GROUP BY region ORDER BY region")
    assert result.engine == "mysql" and result.rows == [["AMER", 10], ["EMEA", 10]]
    with pytest.raises(ShapeError, match="read-only"):
        runner("DELETE FROM orders")
    grant = Grant(("shop",), (), ("shop.shop.customers",))
    tables = frozenset({"shop.shop.customers", "shop.shop.orders"})
    assert runner.within("SELECT count(*) FROM customers", grant, tables).rows == [[20]]
    with pytest.raises(ShapeError, match="orders"):
        runner.within("SELECT count(*) FROM shop.orders", grant, tables)
    slow = SqlRunner(settings.with_section("shapes", sql_timeout=0.5))
    with pytest.raises(ShapeError, match="time limit"):
        slow("SELECT SLEEP(5) FROM customers")

    values = ValueScanner(settings).scan(IdentifierColumn("shop.shop.orders.code", "shop", "shop", "orders", "code"))
    assert len(values.rows) == 30 and values.rows["ORD-1001"] == 2 and not values.cut
    assert "statement digests kept, cut at 1,024 bytes" in _mysql(shop).detail
