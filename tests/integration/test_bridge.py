"""The bridge on the test lakehouse: identifier columns' values, the sections that mention them,
kept live from both sides — an edit rewrites its mentions, a warehouse change is bridged at the
next refresh — and always what coverage's whole-token rule says, refresh after refresh."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest
from google.api_core.client_options import ClientOptions
from google.auth.credentials import AnonymousCredentials
from google.cloud import bigquery
from neo4j import Driver

from shapes.serving.service import Shapes
from tests import lakehouse
from tests.conftest import BIGQUERY_PROJECT, Neo4jService
from tests.graph_dump import wipe
from worker.bridge.refresh import BridgeRefresh
from worker.components import Components
from worker.documents.sync import DocumentSync
from worker.graph.connection import target
from worker.graph.setup import apply_schema
from worker.problems import listing
from worker.warehouse.sync import WarehouseSync

pytestmark = pytest.mark.timeout(300)
BRIDGE_EDGES = """
MATCH (a)-[r:HAS_VALUE|MENTIONS]->(v:Value)
RETURN coalesce(a.id, a.uri) AS source, type(r) AS type, v.id AS value, r.rows AS rows, r.count AS count, v.pending AS pending
ORDER BY source, type, value
"""
MENTIONED = "MATCH (n)-[:MENTIONS]->(v:Value) RETURN v.id AS value, collect(n.uri) AS uris"


@pytest.fixture
def house(neo4j_service: Neo4jService, driver: Driver, tmp_path: Path) -> lakehouse.Lakehouse:
    return lakehouse.build(neo4j_service.settings, driver, tmp_path)


def bridge(house: lakehouse.Lakehouse, driver: Driver, **params: object) -> dict:
    return Shapes(house.settings, driver, "neo4j").ask("bridge", max_tokens=1_000_000, **params).data()


def edges(driver: Driver) -> list[tuple]:
    return [tuple(row.values()) for row in driver.execute_query(BRIDGE_EDGES).records]


def test_values_come_from_keys_and_learned_joins(house: lakehouse.Lakehouse, driver: Driver) -> None:
    columns = {row["column"]: row for row in bridge(house, driver)["bridged"]}
    assert sorted(columns) == [
        "warehouse.service.fault_codes.code",
        "warehouse.service.parts.part_no",
        "warehouse.service.vehicles.vin",
        "warehouse.service.work_order_parts.part_no",
        "warehouse.service.work_orders.fault_code",  # no declared key: a join learned from the query log
        "warehouse.service.work_orders.vin",
    ]
    assert (columns["warehouse.service.work_orders.fault_code"]["values"], columns["warehouse.service.work_orders.fault_code"]["rows"]) == (2, 4)
    assert columns["warehouse.service.vehicles.vin"]["unmentioned"] == 3  # VINs appear in no document


def test_a_value_its_columns_and_what_mentions_it(house: lakehouse.Lakehouse, driver: Driver) -> None:
    answer = bridge(house, driver, value="12345-ab")  # found whatever its case
    assert answer["subject"] == "12345-AB"
    assert [(row["column"], row["rows"]) for row in answer["columns"]] == [
        ("warehouse.service.work_order_parts.part_no", 3),
        ("warehouse.service.parts.part_no", 2),
    ]
    assert [row["uri"] for row in answer["mentions"]] == ["shop/bulletins/tsb-7#tsb-7/cause", "shop/manuals/ignition#ignition/misfire-p0301"]
    under = bridge(house, driver, uri="shop/manuals")
    assert [row["value"] for row in under["values"]] == ["12345-AB", "P0301", "U0140"]


def test_mentions_are_exactly_what_coverage_finds(house: lakehouse.Lakehouse, driver: Driver) -> None:
    shapes = Shapes(house.settings, driver, "neo4j")
    mentioned = {row["value"]: sorted(row["uris"]) for row in driver.execute_query(MENTIONED).records}
    values = [row["value"] for row in driver.execute_query("MATCH (v:Value) RETURN v.id AS value").records]
    found = {row.term: row.uris for row in shapes.ask("coverage", terms=values, max_tokens=1_000_000).result.found}
    assert mentioned == found and len(found) == 3


def test_refreshing_again_changes_nothing(house: lakehouse.Lakehouse, driver: Driver) -> None:
    before = edges(driver)
    report = BridgeRefresh(house.settings, driver, "neo4j").refresh()
    assert (report.values_added, report.values_updated, report.values_dropped, report.mentions_for) == (0, 0, 0, 0)
    BridgeRefresh(house.settings, driver, "neo4j").refresh(rebuild=True)
    assert edges(driver) == before


def test_an_edit_rewrites_its_mentions(house: lakehouse.Lakehouse, driver: Driver) -> None:
    sync = DocumentSync(house.settings, driver, "neo4j")
    bulletin = house.library / "bulletins" / "tsb-7.md"
    bulletin.write_text("# TSB 7\n## Cause\nCoil 12345-AB revision 1 fails early; fit revision 2.\n## Also\nSeen with VIN2 and u0140.\n")
    sync.sync_path("shop", "bulletins/tsb-7.md")
    assert [row["uri"] for row in bridge(house, driver, value="VIN2")["mentions"]] == ["shop/bulletins/tsb-7#tsb-7/also"]
    assert "shop/bulletins/tsb-7#tsb-7/also" in [row["uri"] for row in bridge(house, driver, value="U0140")["mentions"]]

    bulletin.write_text("# TSB 7\n## Cause\nFit revision 2.\n")
    sync.sync_path("shop", "bulletins/tsb-7.md")
    assert bridge(house, driver, value="VIN2")["mentions"] == []
    assert [row["uri"] for row in bridge(house, driver, value="12345-AB")["mentions"]] == ["shop/manuals/ignition#ignition/misfire-p0301"]
    after_edits = edges(driver)
    BridgeRefresh(house.settings, driver, "neo4j").refresh(rebuild=True)
    assert edges(driver) == after_edits  # the edits wrote what a full rebuild writes


def test_warehouse_changes_are_bridged_at_the_next_refresh(house: lakehouse.Lakehouse, driver: Driver) -> None:
    sync = DocumentSync(house.settings, driver, "neo4j")  # one writer throughout, as a worker process keeps it
    (house.library / "manuals" / "brakes.md").write_text("# Brakes\n## Sensor\nC0035 points at the wheel speed sensor.\n")
    sync.sync_path("shop", "manuals/brakes.md")
    assert bridge(house, driver, column="work_orders.fault_code")["unmentioned"] == []
    with duckdb.connect(str(house.warehouse)) as con:
        con.execute("INSERT INTO service.fault_codes VALUES ('C0035', 'brakes', 'Wheel speed sensor'), ('B2477', 'body', 'BCM configuration')")
        con.execute("INSERT INTO service.work_orders VALUES (5, 'VIN2', 'B2477', DATE '2024-04-01', false), (6, 'VIN3', 'B2477', DATE '2024-04-02', false)")
        con.execute("DELETE FROM service.work_orders WHERE fault_code = 'U0140'")
    report = BridgeRefresh(house.settings, driver, "neo4j").refresh()
    assert report.values_added == 3 and report.mentions_for == 2  # C0035 and B2477 are new Values; B2477 also joins work_orders

    answer = bridge(house, driver, column="work_orders.fault_code")
    assert answer["domain"] == ["warehouse.service.fault_codes.code"]
    assert [(row["value"], row["rows"]) for row in answer["unmentioned"]] == [("B2477", 2)]  # seen in the field, documented nowhere
    assert [row["value"] for row in answer["unseen"]] == ["C0035", "U0140"]  # documented, never in a work order (any more)
    assert [row["uri"] for row in bridge(house, driver, value="C0035")["mentions"]] == ["shop/manuals/brakes#brakes/sensor"]
    (house.library / "manuals" / "body.md").write_text("# Body\n## BCM\nB2477 after a battery change.\n")
    sync.sync_path("shop", "manuals/body.md")  # the writer sees the values changed and matches B2477 now
    assert [row["uri"] for row in bridge(house, driver, value="B2477")["mentions"]] == ["shop/manuals/body#body/bcm"]

    with duckdb.connect(str(house.warehouse)) as con:
        con.execute("DELETE FROM service.fault_codes WHERE code = 'C0035'")
    BridgeRefresh(house.settings, driver, "neo4j").refresh()
    assert "C0035" not in [row["value"] for row in driver.execute_query("MATCH (v:Value) RETURN v.id AS value").records]


def test_a_table_event_refreshes_that_tables_values(house: lakehouse.Lakehouse, driver: Driver) -> None:
    with duckdb.connect(str(house.warehouse)) as con:
        con.execute("INSERT INTO service.work_orders VALUES (7, 'VIN1', 'P0420', DATE '2024-05-01', false)")
    components = Components(house.settings, driver, target(house.settings))
    components.warehouse.sync_table("service", "work_orders")  # what an audit-log table event runs
    assert [(row["column"], row["rows"]) for row in bridge(house, driver, value="P0420")["columns"]] == [("warehouse.service.work_orders.fault_code", 1)]
    assert components.warehouse.queries is components.query_graph  # a table event relearns through the audit tasks' query graph: one per process


def test_a_pass_cut_short_is_finished_by_the_next_refresh(house: lakehouse.Lakehouse, driver: Driver) -> None:
    """A crash between writing a column's values and their mention pass loses nothing."""
    complete = edges(driver)
    cut = driver.execute_query("MATCH ()-[m:MENTIONS]->(v:Value) DELETE m SET v.pending = true RETURN count(DISTINCT v) AS n").records[0]["n"]
    assert cut == 3 and all(row[1] == "HAS_VALUE" for row in edges(driver))
    report = BridgeRefresh(house.settings, driver, "neo4j").refresh()
    assert report.mentions_for == cut and edges(driver) == complete


def test_the_row_budget_cuts_a_scan_and_says_so(house: lakehouse.Lakehouse, driver: Driver) -> None:
    settings = house.settings.with_section("bridge", max_rows=2)
    BridgeRefresh(settings, driver, "neo4j").refresh()
    rows = driver.execute_query(
        "MATCH (:Column {id: 'warehouse.service.work_orders.fault_code'})-[h:HAS_VALUE]->(v) RETURN sum(h.rows) AS rows, collect(DISTINCT h.cut) AS cut"
    ).records[0]
    assert (rows["rows"], rows["cut"]) == (2, [True])


def test_a_column_that_cannot_be_read_is_recorded_and_keeps_its_values(house: lakehouse.Lakehouse, driver: Driver) -> None:
    before = edges(driver)
    settings = house.settings.with_section("bridge", columns=["service.fault_codes.description"])
    with duckdb.connect(str(house.warehouse)) as con:
        con.execute("ALTER TABLE service.fault_codes RENAME COLUMN description TO summary")  # the graph still says description
    report = BridgeRefresh(settings, driver, "neo4j").refresh()
    assert list(report.skipped) == ["warehouse.service.fault_codes.description"]
    assert [problem.key for problem in listing(driver, "neo4j", source="values")] == ["values:warehouse.service.fault_codes.description"]
    assert edges(driver) == before


def test_values_are_scanned_on_bigquery(neo4j_service: Neo4jService, driver: Driver, bigquery_endpoint: str) -> None:
    """The real client against the emulator: a dry run first, then the capped job; values the
    pattern refuses (a bare number, a word) never become Values."""
    client = bigquery.Client(project=BIGQUERY_PROJECT, credentials=AnonymousCredentials(), client_options=ClientOptions(api_endpoint=bigquery_endpoint))
    client.create_dataset("fleet", exists_ok=True)
    client.query("CREATE OR REPLACE TABLE fleet.repairs (id INT64, fault STRING, note STRING)").result()
    client.query("INSERT INTO fleet.repairs VALUES (1, 'P0301', 'x'), (2, 'P0301', 'y'), (3, 'U0140', 'z'), (4, '1234', 'w'), (5, 'misfire', 'v')").result()
    wipe(driver)
    settings = neo4j_service.settings.with_section(
        "warehouse", engine="bigquery", bigquery_project=BIGQUERY_PROJECT, bigquery_endpoint=bigquery_endpoint, bigquery_datasets=["fleet"]
    ).with_section("bridge", columns=["fleet.repairs.fault"])
    apply_schema(settings, driver, "neo4j")
    WarehouseSync(settings, driver, "neo4j").sync_all()
    report = BridgeRefresh(settings, driver, "neo4j").refresh()
    assert (report.columns, report.values_added, report.skipped) == (1, 2, {})
    assert edges(driver) == [
        (f"{BIGQUERY_PROJECT}.fleet.repairs.fault", "HAS_VALUE", "P0301", 2, None, None),
        (f"{BIGQUERY_PROJECT}.fleet.repairs.fault", "HAS_VALUE", "U0140", 1, None, None),
    ]
