"""Loads and reconciles touch only the sources they were given: libraries, warehouse schemas and
glossary sources of others stay exactly as they were."""

from __future__ import annotations

from pathlib import Path

import pytest
from neo4j import Driver

from tests.conftest import Neo4jService
from tests.graph_dump import dump
from tests.helpers import clean_env, run_cli
from tests.integration.test_document_graph import make_sync, write
from worker.documents.loader import load, reconcile

pytestmark = pytest.mark.timeout(300)

DOCUMENT_COUNT = "MATCH (d:Document) RETURN d.library AS library, count(*) AS documents ORDER BY library"


def per_library(driver: Driver) -> dict[str, int]:
    return {row["library"]: row["documents"] for row in driver.execute_query(DOCUMENT_COUNT).records}


def test_loading_libraries_one_at_a_time_equals_loading_them_together_on_a_real_estate(
    neo4j_service: Neo4jService,
    graph: Driver,
    powershell_docs: Path,
) -> None:
    first, second = powershell_docs / "5.1", powershell_docs / "7.4"
    load(make_sync(neo4j_service, graph, **{"ps-51": first, "ps-74": second}))
    together = dump(graph)
    counts = per_library(graph)
    assert counts["ps-51"] > 300 and counts["ps-74"] > 300

    graph.execute_query("MATCH (n) DETACH DELETE n")
    only_first = make_sync(neo4j_service, graph, **{"ps-51": first})
    load(only_first)
    load(make_sync(neo4j_service, graph, **{"ps-74": second}))
    assert per_library(graph) == counts
    report = load(only_first)  # A, then B, then A again: nothing of B is touched
    assert report.deleted == 0 and report.written == 0
    assert dump(graph) == together

    reconciled = reconcile(only_first)
    assert reconciled.unconfigured == ["ps-74"]
    assert not reconciled.outcomes
    assert dump(graph) == together


def test_cli_load_of_b_keeps_a_and_forget_removes_only_b(neo4j_service: Neo4jService, graph: Driver, tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    write(a, "guide.md", "# Guide\nSee the [reference](doc://REF-1).\n")
    write(b, "reference.md", "---\nid: REF-1\n---\n# Reference\nBack to nothing.\n")
    env = clean_env(**neo4j_service.env(), LAKEGRAPH_STATE_DIR=str(tmp_path / "state"))
    for root in (f"alpha={a}", f"beta={b}", f"alpha={a}"):
        result = run_cli("load", "docs", root, "--json", env=env)
        assert result.returncode == 0, result.stderr
    assert per_library(graph) == {"alpha": 1, "beta": 1}
    assert graph.execute_query("MATCH (:Section)-[l:LINKS_TO]->(:Document {library: 'beta'}) RETURN count(l) AS n").records[0]["n"] == 1

    refused = run_cli("forget", "gamma", env=env)
    assert refused.returncode == 1 and "no library named gamma" in refused.stderr and "alpha, beta" in refused.stderr
    forgot = run_cli("forget", "beta", env=env)
    assert forgot.returncode == 0, forgot.stderr
    assert "beta: 1 documents removed" in forgot.stdout
    assert per_library(graph) == {"alpha": 1}
    assert graph.execute_query("MATCH (n) WHERE n.uri STARTS WITH 'beta' RETURN count(n) AS n").records[0]["n"] == 0
    waiting = graph.execute_query("MATCH (u:UnresolvedLink) RETURN u.href AS href").records
    assert [row["href"] for row in waiting] == ["doc://REF-1"]
