"""The warehouse metadata graph from DuckDB and from the BigQuery emulator (real client)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import duckdb
import pytest
from google.api_core.client_options import ClientOptions
from google.auth.credentials import AnonymousCredentials
from google.cloud import bigquery
from neo4j import Driver

from tests.conftest import BIGQUERY_PROJECT, Neo4jService
from tests.helpers import clean_env, run_cli
from worker.warehouse.audit_log import QueryEvent
from worker.warehouse.connectors import BigQueryConnector
from worker.warehouse.query_graph import QueryGraph
from worker.warehouse.sync import WarehouseSync
from worker.warehouse.writer import MetadataWriter

pytestmark = pytest.mark.timeout(240)
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "bigquery-audit-log"

DUCKDB_DDL = """
CREATE SCHEMA shop;
CREATE TABLE shop.customers (id INTEGER PRIMARY KEY, region VARCHAR);
COMMENT ON TABLE shop.customers IS 'people who buy';
COMMENT ON COLUMN shop.customers.id IS 'customer key';
CREATE TABLE shop.lines (order_id INTEGER, line INTEGER, sku VARCHAR, PRIMARY KEY (order_id, line));
CREATE TABLE shop.notes (order_id INTEGER, line INTEGER, customer_id INTEGER REFERENCES shop.customers (id),
                         FOREIGN KEY (order_id, line) REFERENCES shop.lines (order_id, line));
CREATE VIEW shop.eu_customers AS SELECT id FROM shop.customers WHERE region = 'EU';
"""

TABLES = "MATCH (:Database {id: $db})-[:HAS_SCHEMA]->(s:Schema)-[:HAS_TABLE]->(t:Table) RETURN s.id AS s, t.id AS t, t.kind AS kind ORDER BY t"
KEYS = """
MATCH (a:Column)-[k:REFERENCES]->(b:Column)
RETURN a.id AS source, b.id AS target, k.constraint AS name, k.ordinal AS ordinal ORDER BY name, ordinal
"""


def duckdb_sync(service: Neo4jService, driver: Driver, path: Path) -> WarehouseSync:
    settings = service.settings.with_section("warehouse", engine="duckdb", duckdb_path=path)
    return WarehouseSync(settings, driver, "neo4j")


def test_a_sync_learns_the_joins_of_queries_that_came_before_their_tables(neo4j_service: Neo4jService, graph: Driver, tmp_path: Path) -> None:
    """Audit events first, metadata after (a new deployment whose log sink was quicker): the sync
    credits the waiting runs, a second sync changes nothing, and so does the table-level path."""
    path = tmp_path / "warehouse.duckdb"
    with duckdb.connect(str(path)) as con:
        con.execute(DUCKDB_DDL)
    sql = "SELECT n.line FROM shop.notes n JOIN shop.customers c ON n.customer_id = c.id"
    runs = [QueryEvent(f"job-{n}", sql, "ana@example.com", f"2026-11-0{n}T00:00:00Z", False, ()) for n in (1, 2)]
    QueryGraph(graph, "neo4j", "duckdb").absorb(runs)
    sync = duckdb_sync(neo4j_service, graph, path)
    assert sync.sync_all()["query_log"] == {"pending": 1, "settled": 1, "runs": 2, "pairs": 1}
    joined = "MATCH (a:Column)-[j:JOINS_WITH]->(b:Column) RETURN a.id AS a, b.id AS b, j.executions AS n"
    assert [tuple(row.values()) for row in graph.execute_query(joined).records] == [("warehouse.shop.customers.id", "warehouse.shop.notes.customer_id", 2)]
    assert sync.sync_all()["query_log"]["pending"] == 0
    sync.sync_table("shop", "notes")
    assert graph.execute_query(joined).records[0]["n"] == 2


def test_duckdb_schema_tables_views_columns_and_composite_keys(neo4j_service: Neo4jService, graph: Driver, tmp_path: Path) -> None:
    path = tmp_path / "warehouse.duckdb"
    with duckdb.connect(str(path)) as con:
        con.execute(DUCKDB_DDL)
    sync = duckdb_sync(neo4j_service, graph, path)
    reports = sync.sync_all()
    assert reports["shop"]["tables_written"] == 4
    rows = [tuple(row.values()) for row in graph.execute_query(TABLES, db="warehouse").records]
    assert rows == [
        ("warehouse.shop", "warehouse.shop.customers", "TABLE"),
        ("warehouse.shop", "warehouse.shop.eu_customers", "VIEW"),
        ("warehouse.shop", "warehouse.shop.lines", "TABLE"),
        ("warehouse.shop", "warehouse.shop.notes", "TABLE"),
    ]
    customers = graph.execute_query("MATCH (t:Table {id: 'warehouse.shop.customers'}) RETURN t").records[0]["t"]
    assert customers["description"] == "people who buy"
    view = graph.execute_query("MATCH (t:Table {id: 'warehouse.shop.eu_customers'}) RETURN t.view_sql AS sql").records[0]["sql"]
    assert "WHERE" in view and "region" in view
    key = graph.execute_query("MATCH (c:Column {id: 'warehouse.shop.customers.id'}) RETURN c").records[0]["c"]
    assert (key["is_primary_key"], key["is_foreign_key"], key["description"], key["type"], key["nullable"]) == (True, False, "customer key", "INTEGER", False)
    foreign = graph.execute_query("MATCH (c:Column {id: 'warehouse.shop.notes.customer_id'}) RETURN c.is_foreign_key AS fk").records[0]["fk"]
    assert foreign is True
    assert [tuple(row.values()) for row in graph.execute_query(KEYS).records] == [
        ("warehouse.shop.notes.customer_id", "warehouse.shop.customers.id", "notes_customer_id_id_fkey", 0),
        ("warehouse.shop.notes.order_id", "warehouse.shop.lines.order_id", "notes_order_id_line_order_id_line_fkey", 0),
        ("warehouse.shop.notes.line", "warehouse.shop.lines.line", "notes_order_id_line_order_id_line_fkey", 1),
    ]


def test_duckdb_changes_update_and_drops_remove(neo4j_service: Neo4jService, graph: Driver, tmp_path: Path) -> None:
    path = tmp_path / "warehouse.duckdb"
    with duckdb.connect(str(path)) as con:
        con.execute(DUCKDB_DDL)
    sync = duckdb_sync(neo4j_service, graph, path)
    sync.sync_all()
    stamp = "MATCH (c:Column {id: 'warehouse.shop.lines.sku'}) RETURN c.updated_at AS at"
    before = graph.execute_query(stamp).records[0]["at"]
    with duckdb.connect(str(path)) as con:
        con.execute("ALTER TABLE shop.customers ADD COLUMN segment VARCHAR")
        con.execute("COMMENT ON TABLE shop.customers IS 'buyers'")
        con.execute("DROP VIEW shop.eu_customers")
    report = sync.sync_schema("shop")
    # the dropped view takes its column with it; no surviving table lost a column
    assert (report.tables_written, report.tables_deleted, report.columns_written, report.columns_deleted) == (1, 1, 1, 0)
    assert graph.execute_query("MATCH (t:Table {id: 'warehouse.shop.customers'}) RETURN t.description AS d").records[0]["d"] == "buyers"
    assert graph.execute_query("MATCH (c:Column {id: 'warehouse.shop.customers.segment'}) RETURN count(c) AS n").records[0]["n"] == 1
    assert graph.execute_query("MATCH (n) WHERE n.id STARTS WITH 'warehouse.shop.eu_customers' RETURN count(n) AS n").records[0]["n"] == 0
    assert graph.execute_query(stamp).records[0]["at"] == before  # untouched nodes are not rewritten
    assert sync.sync_schema("shop").tables_written == 0


def test_load_warehouse_command(neo4j_service: Neo4jService, graph: Driver, tmp_path: Path) -> None:
    with duckdb.connect(str(tmp_path / "warehouse.duckdb")) as con:
        con.execute(DUCKDB_DDL)
    logs = tmp_path / "audit-logs"
    logs.mkdir()
    job = json.loads((FIXTURES / "v2_jobChange_done.json").read_text())
    job["protoPayload"]["metadata"]["jobChange"]["job"]["jobConfig"]["queryConfig"]["query"] = (
        "SELECT n.line FROM shop.notes n JOIN shop.customers c ON n.customer_id = c.id"
    )
    (logs / "export.ndjson").write_text(json.dumps(job) + "\n")
    env = clean_env(LAKEGRAPH_STATE_DIR=str(tmp_path), **neo4j_service.env())
    result = run_cli("load", "warehouse", env=env)
    assert result.returncode == 0, result.stderr
    assert "warehouse.shop: 4 tables and 9 columns written, 0 tables and 0 columns removed, 3 key columns" in result.stdout
    assert f"query logs: 1 files in {logs}: 1 new query runs, 1 join pairs updated" in result.stdout
    learned = "MATCH (a:Column)-[j:JOINS_WITH]->(b:Column) RETURN a.id AS a, b.id AS b, j.declared AS declared"
    assert [tuple(row.values()) for row in graph.execute_query(learned).records] == [("warehouse.shop.customers.id", "warehouse.shop.notes.customer_id", True)]
    again = run_cli("load", "warehouse", env=env)
    assert "1 files" in again.stdout and "0 new query runs" in again.stdout  # each job counts once


@pytest.fixture
def bigquery_client(bigquery_endpoint: str) -> bigquery.Client:
    return bigquery.Client(project=BIGQUERY_PROJECT, credentials=AnonymousCredentials(), client_options=ClientOptions(api_endpoint=bigquery_endpoint))


def test_bigquery_keys_nested_fields_and_table_level_refresh(bigquery_client: bigquery.Client, graph: Driver) -> None:
    client = bigquery_client
    client.create_dataset("service", exists_ok=True)
    for statement in (
        "CREATE TABLE service.vehicles (vin STRING NOT NULL OPTIONS(description='vehicle id'), "
        "spec STRUCT<model STRING, year INT64>, PRIMARY KEY (vin) NOT ENFORCED) OPTIONS(description='the fleet')",
        "CREATE TABLE service.order_lines (order_id INT64, line INT64, part STRING, PRIMARY KEY (order_id, line) NOT ENFORCED)",
        "CREATE TABLE service.line_notes (order_id INT64, line INT64, vin STRING, "
        "FOREIGN KEY (order_id, line) REFERENCES service.order_lines(order_id, line) NOT ENFORCED, "
        "FOREIGN KEY (vin) REFERENCES service.vehicles(vin) NOT ENFORCED)",
        "CREATE VIEW service.recent AS SELECT vin FROM service.vehicles",
    ):
        client.query(statement).result()
    connector = BigQueryConnector(client, BIGQUERY_PROJECT, ["service"])
    writer = MetadataWriter(graph, "neo4j")
    writer.apply(connector.snapshot("service"))
    db = BIGQUERY_PROJECT
    assert [row["t"] for row in graph.execute_query(TABLES, db=db).records] == [
        f"{db}.service.line_notes",
        f"{db}.service.order_lines",
        f"{db}.service.recent",
        f"{db}.service.vehicles",
    ]
    assert [(*tuple(row.values())[:2], row["ordinal"]) for row in graph.execute_query(KEYS).records] == [
        (f"{db}.service.line_notes.order_id", f"{db}.service.order_lines.order_id", 0),
        (f"{db}.service.line_notes.line", f"{db}.service.order_lines.line", 1),
        (f"{db}.service.line_notes.vin", f"{db}.service.vehicles.vin", 0),
    ]
    vehicles = graph.execute_query(
        "MATCH (t:Table {id: $id})-[:HAS_COLUMN]->(c) RETURN t.description AS d, collect(c.name) AS columns", id=f"{db}.service.vehicles"
    ).records[0]
    assert vehicles["d"] == "the fleet" and sorted(vehicles["columns"]) == ["spec", "spec.model", "spec.year", "vin"]

    # An altered, an added and a dropped table, each refreshed alone as its audit-log event would ask.
    client.query("ALTER TABLE service.order_lines ADD COLUMN qty INT64").result()
    client.query("CREATE TABLE service.parts (part STRING, PRIMARY KEY (part) NOT ENFORCED)").result()
    client.query("DROP VIEW service.recent").result()
    for table in ("order_lines", "parts", "recent"):
        snapshot = connector.snapshot("service", table)
        assert [info.name for info in snapshot.tables] == ([] if table == "recent" else [table])  # the read is the table's alone
        began = time.monotonic()
        writer.apply(snapshot)
        # The graph write is lakegraph's part: milliseconds once Neo4j has planned its queries, about a
        # second when a refresh of this kind is the first (planning on a busy 2-core machine). The
        # read (seven INFORMATION_SCHEMA queries at once) is the emulator's, which answers them one at
        # a time: 1.1-3.3 s on 2-core CI machines under load, so it is not timed here.
        assert time.monotonic() - began < 3.0, table
    names = [row["t"] for row in graph.execute_query(TABLES, db=db).records]
    assert names == [f"{db}.service.line_notes", f"{db}.service.order_lines", f"{db}.service.parts", f"{db}.service.vehicles"]
    assert graph.execute_query("MATCH (c:Column {id: $id}) RETURN c.type AS t", id=f"{db}.service.order_lines.qty").records[0]["t"] == "INT64"
    assert len(graph.execute_query(KEYS).records) == 3  # refreshing one table keeps the other tables' keys into it


def test_a_dropped_schema_goes_and_another_database_is_never_touched(neo4j_service: Neo4jService, graph: Driver, tmp_path: Path) -> None:
    for name in ("alpha", "beta"):
        with duckdb.connect(str(tmp_path / f"{name}.duckdb")) as con:
            con.execute(DUCKDB_DDL)
            con.execute("CREATE SCHEMA staging; CREATE TABLE staging.raw (id INTEGER)")
    alpha, beta = (duckdb_sync(neo4j_service, graph, tmp_path / f"{name}.duckdb") for name in ("alpha", "beta"))
    alpha.sync_all()
    beta.sync_all()
    schemas = "MATCH (d:Database)-[:HAS_SCHEMA]->(s:Schema) RETURN s.id AS id ORDER BY id"
    assert [row["id"] for row in graph.execute_query(schemas).records] == [
        "alpha.shop",
        "alpha.staging",
        "beta.shop",
        "beta.staging",
    ]
    with duckdb.connect(str(tmp_path / "alpha.duckdb")) as con:
        con.execute("DROP SCHEMA staging CASCADE")
    reports = alpha.sync_all()
    assert reports["staging"]["tables_deleted"] == 1 and reports["staging"]["columns_deleted"] == 1
    assert [row["id"] for row in graph.execute_query(schemas).records] == ["alpha.shop", "beta.shop", "beta.staging"]
    assert graph.execute_query("MATCH (n) WHERE n.id STARTS WITH 'alpha.staging' RETURN count(n) AS n").records[0]["n"] == 0
    assert alpha.sync_all()["shop"]["tables_written"] == 0  # and a second run changes nothing
    (tmp_path / "alpha.duckdb").rename(tmp_path / "alpha.moved")  # a missing file proves nothing is gone
    alpha.sync_all()
    assert [row["id"] for row in graph.execute_query(schemas).records] == ["alpha.shop", "beta.shop", "beta.staging"]
