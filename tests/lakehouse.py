"""A small lakehouse loaded into the graph through the real write paths: a DuckDB warehouse
with declared keys (one composite), a glossary, a query log that teaches an undeclared join,
a document library, and the bridge between their identifiers. Shared by the shape, MCP and HTTP
tests."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import duckdb
from neo4j import Driver

from tests.graph_dump import wipe
from worker.bridge.refresh import BridgeRefresh
from worker.documents.loader import load
from worker.documents.sync import DocumentSync
from worker.graph.setup import apply_schema
from worker.settings import Settings
from worker.warehouse.audit_log import QueryEvent
from worker.warehouse.query_graph import QueryGraph
from worker.warehouse.sync import WarehouseSync

WAREHOUSE_DDL = """
CREATE SCHEMA service;
CREATE TABLE service.vehicles (vin VARCHAR PRIMARY KEY, model VARCHAR, model_year INTEGER);
CREATE TABLE service.fault_codes (code VARCHAR PRIMARY KEY, system VARCHAR, description VARCHAR);
CREATE TABLE service.work_orders (
  id INTEGER PRIMARY KEY, vin VARCHAR REFERENCES service.vehicles (vin), fault_code VARCHAR,
  opened DATE, is_comeback BOOLEAN);
CREATE TABLE service.parts (part_no VARCHAR, revision INTEGER, name VARCHAR, PRIMARY KEY (part_no, revision));
CREATE TABLE service.work_order_parts (
  work_order_id INTEGER REFERENCES service.work_orders (id), part_no VARCHAR, revision INTEGER, quantity INTEGER,
  FOREIGN KEY (part_no, revision) REFERENCES service.parts (part_no, revision));
CREATE TABLE service.technicians (tech_id INTEGER PRIMARY KEY, full_name VARCHAR);
COMMENT ON TABLE service.work_orders IS 'Repair visits: one row per job opened in the workshop';
COMMENT ON TABLE service.fault_codes IS 'Diagnostic trouble code reference';
INSERT INTO service.vehicles VALUES ('VIN1', 'Sedan', 2021), ('VIN2', 'Sedan', 2022), ('VIN3', 'Wagon', 2021);
INSERT INTO service.fault_codes VALUES ('P0301', 'ignition', 'Cylinder 1 misfire'), ('U0140', 'network', 'Lost communication with BCM');
INSERT INTO service.work_orders VALUES
  (1, 'VIN1', 'P0301', DATE '2024-01-03', false), (2, 'VIN1', 'P0301', DATE '2024-02-01', true),
  (3, 'VIN2', 'U0140', DATE '2024-02-11', false), (4, 'VIN3', 'P0301', DATE '2024-03-05', false);
INSERT INTO service.parts VALUES ('12345-AB', 1, 'Ignition coil'), ('12345-AB', 2, 'Ignition coil (revised)');
INSERT INTO service.work_order_parts VALUES (1, '12345-AB', 1, 1), (2, '12345-AB', 2, 1), (4, '12345-AB', 2, 1);
"""
GLOSSARY = """
[[term]]
name = "Comeback ratio"
description = "Share of repair visits followed by a repeat visit for the same fault."
synonyms = ["repeat repair rate"]
tags = ["service.work_orders.is_comeback"]
"""
# Analysts join work orders to the fault-code reference, a join no declared key covers.
QUERIES = [
    ("job-1", "SELECT w.id, f.description FROM service.work_orders w JOIN service.fault_codes f ON w.fault_code = f.code", "ana@example.com"),
    ("job-2", "SELECT f.system, count(*) FROM service.fault_codes AS f, service.work_orders AS w WHERE f.code = w.fault_code GROUP BY 1", "bo@example.com"),
    ("job-3", "SELECT * FROM service.work_orders w JOIN service.vehicles v ON v.vin = w.vin", "ana@example.com"),
]
DOCUMENTS = {
    "manuals/ignition.md": "# Ignition\n## Misfire P0301\nReplace coil 12345-AB when P0301 returns.\nSee [bulletin](../bulletins/tsb-7.md).\n## Primary resistance\nMeasure the primary resistance of the ignition coil with the harness disconnected, at the connector pins, with a meter on its lowest range, and compare it with the specifications chapter.\n",
    "bulletins/tsb-7.md": "# TSB 7\n## Cause\nCoil 12345-AB revision 1 fails early; fit revision 2.\n",
    "manuals/network.md": "# Network\n## BCM\nU0140 means lost communication with the body control module.\n",
    # Recalls that outrank the manuals for "coil": a search scoped to the manuals must still find k there.
    **{f"recalls/r-{n:02d}.md": f"# Coil recall {n}\n## Coil\ncoil coil coil coil\n" for n in range(25)},
}


@dataclass(frozen=True)
class Lakehouse:
    settings: Settings
    library: Path
    warehouse: Path


def build(settings: Settings, driver: Driver, folder: Path) -> Lakehouse:
    wipe(driver)
    warehouse = folder / "warehouse.duckdb"
    with duckdb.connect(str(warehouse)) as con:
        con.execute(WAREHOUSE_DDL)
    glossary = folder / "glossary.toml"
    glossary.write_text(GLOSSARY)
    library = folder / "library"
    for relpath, text in DOCUMENTS.items():
        path = library / relpath
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    settings = settings.with_section("warehouse", engine="duckdb", duckdb_path=warehouse, glossary_path=glossary, sql_dialect="duckdb")
    settings = settings.with_section("documents", libraries=[{"name": "shop", "root": library}])
    apply_schema(settings, driver, "neo4j")
    WarehouseSync(settings, driver, "neo4j").sync_all()
    QueryGraph(driver, "neo4j", "duckdb").absorb([QueryEvent(job, sql, user, "2026-11-01T10:00:00Z", False, ()) for job, sql, user in QUERIES])
    load(DocumentSync(settings, driver, "neo4j"), workers=1)
    BridgeRefresh(settings, driver, "neo4j").refresh()
    return Lakehouse(settings, library, warehouse)
