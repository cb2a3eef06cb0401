"""The business glossary: terms and tags follow the file, removals included; bad files are recorded."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest
from neo4j import Driver

from tests.conftest import Neo4jService
from tests.graph_dump import wipe
from tests.helpers import LAKEGRAPH, clean_env
from worker import problems
from worker.graph import schema
from worker.runtime import redis_server
from worker.runtime.processes import wait_until
from worker.warehouse import glossary as glossary_source
from worker.warehouse.sync import WarehouseSync

pytestmark = pytest.mark.timeout(180)
TAGS = """
MATCH (n)-[:TAGGED_WITH]->(b:BusinessTerm)
RETURN b.name AS term, n.id AS node ORDER BY term, node
"""
GLOSSARY = """
[[term]]
name = "Comeback ratio"
description = "Share of work orders with a repeat visit."
synonyms = ["comeback rate"]
tags = ["service.work_orders", "service.work_orders.is_comeback"]

[[term]]
name = "first-time-fix rate"
tags = ["service.work_orders", "service.nowhere"]
"""


@pytest.fixture
def warehouse(tmp_path: Path) -> Path:
    path = tmp_path / "warehouse.duckdb"
    with duckdb.connect(str(path)) as con:
        con.execute("CREATE SCHEMA service; CREATE TABLE service.work_orders (id INTEGER, is_comeback BOOLEAN, part VARCHAR)")
    return path


def make_sync(service: Neo4jService, driver: Driver, warehouse: Path, glossary: Path) -> WarehouseSync:
    settings = service.settings.with_section("warehouse", engine="duckdb", duckdb_path=warehouse, glossary_path=glossary)
    return WarehouseSync(settings, driver, "neo4j")


def synced_glossary(service: Neo4jService, driver: Driver, warehouse: Path, folder: Path) -> tuple[Path, WarehouseSync]:
    """An empty graph, the glossary file written and synced with the warehouse."""
    wipe(driver)
    schema.apply(driver, "neo4j")
    glossary = folder / "glossary.toml"
    glossary.write_text(GLOSSARY)
    sync = make_sync(service, driver, warehouse, glossary)
    sync.sync_all()
    return glossary, sync


def tags(driver: Driver) -> list[tuple[str, str]]:
    return [(row["term"], row["node"]) for row in driver.execute_query(TAGS).records]


def test_terms_and_tags_follow_the_file(neo4j_service: Neo4jService, driver: Driver, warehouse: Path, tmp_path: Path) -> None:
    glossary, sync = synced_glossary(neo4j_service, driver, warehouse, tmp_path)
    assert tags(driver) == [
        ("Comeback ratio", "warehouse.service.work_orders"),
        ("Comeback ratio", "warehouse.service.work_orders.is_comeback"),
        ("first-time-fix rate", "warehouse.service.work_orders"),
    ]
    [warning] = problems.listing(driver, "neo4j", "warehouse")
    assert warning.kind == "warning" and "first-time-fix rate: service.nowhere" in warning.reason
    term = driver.execute_query("MATCH (b:BusinessTerm {id: 'comeback ratio'}) RETURN b").records[0]["b"]
    assert term["synonyms"] == ["comeback rate"] and term["description"].startswith("Share of work orders")

    glossary.write_text(
        GLOSSARY.replace('tags = ["service.work_orders", "service.work_orders.is_comeback"]', 'tags = ["service.work_orders.part"]').split(
            '[[term]]\nname = "first-time-fix rate"'
        )[0]
    )
    report = sync.sync_glossary()
    assert report is not None and report.terms == 1
    assert tags(driver) == [("Comeback ratio", "warehouse.service.work_orders.part")]
    assert driver.execute_query("MATCH (b:BusinessTerm) RETURN count(b) AS n").records[0]["n"] == 1
    assert problems.listing(driver, "neo4j", "warehouse") == []

    glossary.write_text("[[term]\nname = broken")
    assert sync.sync_glossary() is None
    assert tags(driver) == [("Comeback ratio", "warehouse.service.work_orders.part")]  # the last good state stays
    [bad] = problems.listing(driver, "neo4j", "warehouse")
    assert bad.kind == "skipped" and "not valid TOML" in bad.reason


def test_an_edited_glossary_reaches_the_graph_through_the_watcher(
    neo4j_service: Neo4jService, driver: Driver, redis_service: redis_server.LocalRedis, warehouse: Path, tmp_path: Path
) -> None:
    wipe(driver)
    schema.apply(driver, "neo4j")
    glossary = tmp_path / "config" / "glossary.toml"
    glossary.parent.mkdir()
    glossary.write_text(GLOSSARY)
    make_sync(neo4j_service, driver, warehouse, glossary).sync_all()
    env = clean_env(
        LAKEGRAPH_STATE_DIR=str(tmp_path / "state"),
        LAKEGRAPH_REDIS__URL=redis_service.url,
        LAKEGRAPH_WAREHOUSE__DUCKDB_PATH=str(warehouse),
        LAKEGRAPH_WAREHOUSE__GLOSSARY_PATH=str(glossary),
        LAKEGRAPH_DOCUMENTS__LIBRARIES=json.dumps([]),
        **neo4j_service.env(),
    )
    redis_server.client(redis_service.url, 5).flushall()
    processes = [
        subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "worker.celery_app", "worker", "--concurrency", "1", "--loglevel", "warning"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        ),
        subprocess.Popen([LAKEGRAPH, "watch"], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True),
    ]
    try:
        processes[1].stdout.readline()
        glossary.write_text(GLOSSARY + '\n[[term]]\nname = "parts cost"\ntags = ["service.work_orders.part"]\n')
        wait_until(lambda: ("parts cost", "warehouse.service.work_orders.part") in tags(driver), 20, "the new term tagged")
    finally:
        for process in processes:
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=20)


def test_a_file_sync_never_removes_another_sources_terms(neo4j_service: Neo4jService, driver: Driver, warehouse: Path, tmp_path: Path) -> None:
    glossary, sync = synced_glossary(neo4j_service, driver, warehouse, tmp_path)
    catalog_terms = [glossary_source.Term(name="Part number", tags=["service.work_orders.part"])]
    glossary_source.sync(driver, "neo4j", catalog_terms, source="catalog")
    glossary.write_text('[[term]]\nname = "Comeback ratio"\ntags = ["service.work_orders.is_comeback"]\n')
    sync.sync_glossary()
    assert tags(driver) == [
        ("Comeback ratio", "warehouse.service.work_orders.is_comeback"),
        ("Part number", "warehouse.service.work_orders.part"),
    ]
    sources = "MATCH (b:BusinessTerm) RETURN b.name AS name, b.source AS source ORDER BY name"
    assert [tuple(row.values()) for row in driver.execute_query(sources).records] == [
        ("Comeback ratio", "file"),
        ("Part number", "catalog"),
    ]
    glossary_source.sync(driver, "neo4j", [], source="catalog")  # the other source, emptied, leaves the file's
    assert tags(driver) == [("Comeback ratio", "warehouse.service.work_orders.is_comeback")]


DEFINITIONS = """
MATCH (b:BusinessTerm) OPTIONAL MATCH (n)-[:TAGGED_WITH]->(b)
WITH b, n ORDER BY n.id
RETURN b.id AS id, b.source AS source, b.description AS d, collect(n.id) AS tagged ORDER BY id
"""


def test_a_term_two_sources_define_belongs_to_the_first_whatever_the_order_of_syncs(
    neo4j_service: Neo4jService, driver: Driver, warehouse: Path, tmp_path: Path
) -> None:
    """The file and a catalog glossary both define "Comeback ratio": any order and number of syncs
    leaves the file's definition and tags, the catalog's report names the term shadowed, and the
    catalog's definition takes over only once the file drops the term."""
    glossary, sync = synced_glossary(neo4j_service, driver, warehouse, tmp_path)
    mine = [glossary_source.Term(name="comeback  Ratio", description="the catalog's", tags=["service.work_orders.part"])]
    mine.append(glossary_source.Term(name="Part number", tags=["service.work_orders.part"]))
    settled = None
    for order in ("cf", "fc", "ccff", "fcfc", "cfcf"):
        for step in order:
            if step == "c":
                report = glossary_source.sync(driver, "neo4j", mine, source="knowledge-catalog:b")
                assert report.shadowed == {"comeback  Ratio": "file"}
            else:
                sync.sync_glossary()
        state = [tuple(row.values()) for row in driver.execute_query(DEFINITIONS).records]
        assert settled in (None, state), order
        settled = state
    assert settled[0][:3] == ("comeback ratio", "file", "Share of work orders with a repeat visit.")
    assert settled[0][3] == ["warehouse.service.work_orders", "warehouse.service.work_orders.is_comeback"]
    assert report.problem_text("unlinked") == "defined first by another glossary, whose definition holds: comeback  Ratio (file)"
    glossary.write_text('[[term]]\nname = "first-time-fix rate"\n')
    sync.sync_glossary()  # the file drops it: the catalog's definition is the one left to hold
    glossary_source.sync(driver, "neo4j", mine, source="knowledge-catalog:b")
    owner = driver.execute_query("MATCH (b:BusinessTerm {id: 'comeback ratio'}) RETURN b.source AS s, b.description AS d").records[0]
    assert (owner["s"], owner["d"]) == ("knowledge-catalog:b", "the catalog's")
