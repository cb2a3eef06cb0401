"""The business glossary from Knowledge Catalog, through the real google-cloud-dataplex client (REST)
against a local server of the documented API (tests/services/knowledge_catalog.py): terms and
their links to tables and columns become BusinessTerms and TAGGED_WITH beside the TOML file's;
additions, edits and removals follow; a denied glossary keeps its terms, a deleted one loses
them, and every listing pages."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest
from neo4j import Driver

from tests.conftest import Neo4jService
from tests.graph_dump import wipe
from tests.services.knowledge_catalog import Catalog, CatalogServer
from worker import doctor, problems
from worker.celery_app import beat_schedule
from worker.graph import schema
from worker.task_names import SYNC_CATALOG_GLOSSARY
from worker.warehouse.sync import WarehouseSync

pytestmark = pytest.mark.timeout(180)
PROJECT = "acme"
TAGS = "MATCH (n)-[:TAGGED_WITH]->(b:BusinessTerm) RETURN collect([b.name, n.id]) AS tags"
TERMS = "MATCH (b:BusinessTerm) RETURN collect([b.name, b.source, b.identifier, b.description]) AS terms"
FILE_GLOSSARY = """
[[term]]
name = "Order"
tags = ["sales.orders"]
"""


def tags(driver: Driver) -> set[tuple[str, str]]:
    return {tuple(row) for row in driver.execute_query(TAGS).records[0]["tags"]}


def terms(driver: Driver) -> dict[str, tuple]:
    return {name: (source, identifier, description) for name, source, identifier, description in driver.execute_query(TERMS).records[0]["terms"]}


@pytest.fixture
def catalog() -> Iterator[tuple[Catalog, str]]:
    state = Catalog(PROJECT)
    with CatalogServer(state) as server:
        yield state, server.endpoint


@pytest.fixture
def sync(neo4j_service: Neo4jService, driver: Driver, catalog: tuple[Catalog, str], tmp_path: Path) -> WarehouseSync:
    wipe(driver)
    schema.apply(driver, "neo4j")
    warehouse = tmp_path / f"{PROJECT}.duckdb"  # DuckDB names its catalog after the file: ids acme.sales.*, as BigQuery's project.dataset.table
    with duckdb.connect(str(warehouse)) as con:
        con.execute("CREATE SCHEMA sales; CREATE TABLE sales.orders (id INTEGER, customer_id VARCHAR, amount DECIMAL(12,2))")
        con.execute("CREATE TABLE sales.customers (id VARCHAR, name VARCHAR)")
    (tmp_path / "glossary.toml").write_text(FILE_GLOSSARY)
    settings = neo4j_service.settings.with_section("warehouse", engine="duckdb", duckdb_path=warehouse, glossary_path=tmp_path / "glossary.toml")
    settings = settings.with_section("knowledge_catalog", project=PROJECT, endpoint=catalog[1])
    return WarehouseSync(settings, driver, "neo4j")


def test_catalog_terms_follow_the_catalog_beside_the_file(sync: WarehouseSync, catalog: tuple[Catalog, str], driver: Driver) -> None:
    state, _ = catalog
    finance = state.glossary("finance", "Finance")
    revenue = state.category(finance, "revenue", "Revenue")
    net = state.term(revenue, "net-revenue", "Net revenue", "Amount after discounts.")
    customer = state.term(finance, "customer", "Customer id", "Who ordered.", labels={"lakegraph-identifier": "true"})
    amount_link = state.link(net, PROJECT, "sales", "orders", "amount")
    state.link(customer, PROJECT, "sales", "customers", "id")
    state.link(customer, PROJECT, "sales", "orders", "customer_id")
    state.link(customer, "other-project", "sales", "customers")  # a table this warehouse does not have: reported, not tagged
    ops = state.glossary("ops", "Operations")
    for index in range(5):  # more terms than a page holds
        state.term(ops, f"kpi-{index}", f"KPI {index}")
    state.link(f"{ops}/terms/kpi-0", PROJECT, "sales", "orders")

    assert [(status.state, status.detail.split(": ", 1)[1]) for status in doctor.check(sync.settings) if status.engine == "glossary"] == [
        ("up", f"2 glossaries in projects/{PROJECT}/locations/global")
    ]
    reports = sync.sync_all()
    assert set(reports["knowledge_catalog"]["glossaries"]) == {finance, ops}
    assert tags(driver) == {
        ("Order", "acme.sales.orders"),  # the file's, beside the catalog's
        ("Net revenue", "acme.sales.orders.amount"),
        ("Customer id", "acme.sales.customers.id"),
        ("Customer id", "acme.sales.orders.customer_id"),
        ("KPI 0", "acme.sales.orders"),
    }
    found = terms(driver)
    assert found["Order"][0] == "file"
    assert found["Net revenue"] == (f"knowledge-catalog:{finance}", False, "Revenue: Amount after discounts.")
    assert found["Customer id"][:2] == (f"knowledge-catalog:{finance}", True)
    assert {name for name in found if name.startswith("KPI")} == {f"KPI {index}" for index in range(5)}
    warning = [p for p in problems.listing(driver, "neo4j", "warehouse") if p.key == f"catalog:{finance}"]
    assert warning and "other-project.sales.customers" in warning[0].reason

    # Edits and removals: a description, a link and a term go; a term comes.
    state.terms[net]["description"] = "Gross minus discounts and returns."
    state.unlink(amount_link)
    del state.terms[f"{ops}/terms/kpi-4"]
    state.term(ops, "kpi-5", "KPI 5")
    assert sync.sync_all() and sync.sync_catalog_glossary() is not None
    found = terms(driver)
    assert found["Net revenue"][2] == "Revenue: Gross minus discounts and returns."
    assert ("Net revenue", "acme.sales.orders.amount") not in tags(driver)
    assert "KPI 4" not in found and "KPI 5" in found

    # Permission denied on one glossary: its terms stay as they were, the denial is recorded.
    state.denied.add(ops)
    del state.terms[f"{ops}/terms/kpi-5"]
    report = sync.sync_catalog_glossary()
    assert report is not None and set(report["failed"]) == {ops} and report["removed"] == []
    assert "KPI 5" in terms(driver)
    denied = [p for p in problems.listing(driver, "neo4j", "warehouse") if p.key == f"catalog:{ops}" and p.kind == "skipped"]
    assert denied and "Permission 'dataplex.glossaries.get' denied" in denied[0].reason and denied[0].task == SYNC_CATALOG_GLOSSARY

    # A glossary deleted while a sync reads it, and one deleted between syncs: their terms go.
    state.denied.clear()
    state.vanishing.add(ops)
    report = sync.sync_catalog_glossary()
    assert report is not None and report["removed"] == [f"knowledge-catalog:{ops}"]
    assert not any(name.startswith("KPI") for name in terms(driver))
    state.delete_glossary(finance)
    assert sync.sync_catalog_glossary() == {"glossaries": {}, "failed": {}, "removed": [f"knowledge-catalog:{finance}"]}
    assert tags(driver) == {("Order", "acme.sales.orders")}  # the file's term untouched throughout
    assert not [p for p in problems.listing(driver, "neo4j", "warehouse") if p.key.startswith("catalog:") and p.kind == "skipped"]


def test_an_unreachable_catalog_changes_nothing_and_is_recorded(sync: WarehouseSync, catalog: tuple[Catalog, str], driver: Driver) -> None:
    state, _ = catalog
    finance = state.glossary("finance", "Finance")
    state.link(state.term(finance, "customer", "Customer id"), PROJECT, "sales", "customers", "id")
    sync.sync_all()
    assert ("Customer id", "acme.sales.customers.id") in tags(driver)
    broken = sync.settings.with_section("knowledge_catalog", endpoint="http://127.0.0.1:9")  # nothing listens there
    report = WarehouseSync(broken, driver, "neo4j").sync_catalog_glossary()
    assert report is not None and report["removed"] == [] and list(report["failed"]) == [f"projects/{PROJECT}/locations/global"]
    assert ("Customer id", "acme.sales.customers.id") in tags(driver)


def test_beat_syncs_the_catalog_only_when_configured(sync: WarehouseSync) -> None:
    scheduled = beat_schedule(sync.settings)["sync-catalog-glossary"]
    assert scheduled == {"task": SYNC_CATALOG_GLOSSARY, "schedule": sync.settings.knowledge_catalog.sync_interval}
    assert "sync-catalog-glossary" not in beat_schedule(sync.settings.with_section("knowledge_catalog", project=""))
