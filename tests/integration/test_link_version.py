"""The link version the document writer keeps moves whenever the document-level link graph does
(so themes may trust it instead of reading every edge), and stays put when only text changes; the
graph a themes run reads (from the lists of outgoing links the writer keeps on each document, or
from the documents changed since the last run) equals a walk over every link."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from neo4j import Driver

from tests.conftest import Neo4jService
from tests.graph_dump import differences_from_files
from tests.integration.test_document_graph import make_sync, write
from worker.documents import link_version
from worker.documents.loader import load
from worker.themes.projection import document_graph
from worker.themes.runner import ThemeRunner
from worker.themes.summary import summarize

pytestmark = pytest.mark.timeout(300)

NAMES = [f"doc-{index}" for index in range(12)]


def version(driver: Driver) -> int:
    with driver.session(database="neo4j") as session:
        return session.execute_read(link_version.counters).version


# The reference: every section link walked and collapsed to its documents.
WALKED = """
MATCH (s)-[:LINKS_TO]->(t:Document|Section)
WITH CASE WHEN s:Section THEN s.doc_uri ELSE s.uri END AS a, CASE WHEN t:Section THEN t.doc_uri ELSE t.uri END AS b
WHERE a <> b AND EXISTS { MATCH (:Document {uri: a}) }
RETURN a, b, count(*) AS links
"""


def edges(driver: Driver) -> dict[tuple[str, str], int]:
    return {(row["a"], row["b"]): row["links"] for row in driver.execute_query(WALKED, database_="neo4j").records}


def stored_summaries(driver: Driver) -> dict[str, tuple]:
    rows = driver.execute_query("MATCH (t:Theme) RETURN t.id AS id, [t.name, t.top_targets, t.central, t.crossovers] AS summary").records
    return {row["id"]: tuple(json.loads(part) if index else part for index, part in enumerate(row["summary"])) for row in rows}


def fresh_summaries(driver: Driver) -> dict[str, tuple]:
    """The stored themes' summaries computed from scratch on the graph as it is now."""
    rows = driver.execute_query("MATCH (d:Document)-[:IN_THEME]->(t:Theme) RETURN t.id AS id, t.level AS level, collect(d.uri) AS members").records
    now = document_graph(driver, "neo4j")
    found = {}
    for level in {row["level"] for row in rows}:
        members = {row["id"]: frozenset(row["members"]) for row in rows if row["level"] == level}
        found |= {theme: (s.name, s.top_targets, s.central, s.crossovers) for theme, s in summarize(now, members).items()}
    return found


def page(name: str, targets: list[str], words: str = "") -> str:
    return f"# {name}\n{words}\n" + "".join(f"- [{target}]({target}.md)\n" for target in targets)


def test_the_version_moves_exactly_when_document_links_do(neo4j_service: Neo4jService, graph: Driver, tmp_path: Path) -> None:
    rng = random.Random(5)
    links = {name: rng.sample(NAMES, 3) for name in NAMES[:8]}  # four names stay absent until created
    for name, targets in links.items():
        write(tmp_path, f"{name}.md", page(name, targets))
    sync = make_sync(neo4j_service, graph, lib=tmp_path)
    load(sync)
    every = {record["uri"] for record in graph.execute_query("MATCH (d:Document) RETURN d.uri AS uri").records}
    with graph.session(database="neo4j") as session:  # the full load left every signature current
        assert not session.execute_write(link_version.resign, every)
    runner = ThemeRunner(sync.settings, graph, "neo4j")
    runner.run()
    summarized = 0
    for step in range(40):
        before_version, before_edges = version(graph), edges(graph)
        name = rng.choice(NAMES)
        path = tmp_path / f"{name}.md"
        action = rng.choice(["text", "add", "remove", "delete"] if path.exists() else ["create"])
        if action == "text":
            path.write_text(page(name, links[name], words=f"edit {step}"))
        elif action in ("add", "create"):
            links[name] = [*links.get(name, []), rng.choice(NAMES)]
            path.write_text(page(name, links[name]))
        elif action == "remove" and links[name]:
            links[name] = links[name][1:]
            path.write_text(page(name, links[name]))
        elif action == "delete":
            path.unlink()
            links.pop(name)
        sync.sync_path("lib", f"{name}.md")
        now = edges(graph)
        assert document_graph(graph, "neo4j").directed == now, f"step {step}: the documents' link lists differ from their links"
        moved, changed = version(graph) != before_version, now != before_edges
        assert moved or not changed, f"step {step}: {action} {name} changed the edges but not the version"
        if action == "text":
            assert not moved, f"step {step}: a text-only edit moved the version"
        if rng.random() < 0.5:  # now and then a themes run, reading only what changed since the last
            runner.run()
            assert runner.seen is not None and runner.seen.graph.directed == now, f"step {step}: the run saw other links"
            kept = stored_summaries(graph)
            assert kept == fresh_summaries(graph), f"step {step}: a kept summary went stale"
            summarized += len(kept)
    assert summarized, "no run found a theme: the summaries were never compared"
    _, differences = differences_from_files(graph, sync.settings)
    assert differences == 0, "signatures after edits differ from a fresh load's"


def test_isolated_documents_come_and_go_without_a_new_version(neo4j_service: Neo4jService, graph: Driver, tmp_path: Path) -> None:
    write(tmp_path, "a.md", page("a", ["b"]))
    write(tmp_path, "b.md", page("b", []))
    sync = make_sync(neo4j_service, graph, lib=tmp_path)
    load(sync)
    start = version(graph)
    write(tmp_path, "lonely.md", page("lonely", []))
    sync.sync_path("lib", "lonely.md")
    (tmp_path / "lonely.md").unlink()
    sync.sync_path("lib", "lonely.md")
    assert version(graph) == start
    (tmp_path / "a.md").unlink()  # its link leaves with it
    sync.sync_path("lib", "a.md")
    assert version(graph) == start + 1


def test_a_store_signed_before_the_link_lists_reads_the_same_graph_and_a_load_lists_it(neo4j_service: Neo4jService, graph: Driver, tmp_path: Path) -> None:
    rng = random.Random(7)
    for name in NAMES:
        write(tmp_path, f"{name}.md", page(name, rng.sample(NAMES, 3)))
    sync = make_sync(neo4j_service, graph, lib=tmp_path)
    load(sync)
    listed = document_graph(graph, "neo4j")
    runner = ThemeRunner(sync.settings, graph, "neo4j")
    runner.run()
    assert runner.seen is not None
    graph.execute_query("MATCH (d:Document) WHERE d.uri ENDS WITH '1' OR d.uri ENDS WITH '4' REMOVE d.link_targets, d.link_counts SET d:LinksChanged")
    patched = document_graph(graph, "neo4j", runner.seen.graph)  # a worker's read of the labelled ones walks their links
    assert patched.directed == listed.directed and patched.edges == listed.edges
    graph.execute_query("MATCH (d:LinksChanged) REMOVE d:LinksChanged")  # as a themes run leaves them
    assert any(known.unlisted for known in sync.stored_documents().values()), "no document lost its lists"
    unlisted = document_graph(graph, "neo4j")
    assert unlisted.directed == listed.directed == edges(graph) and unlisted.edges == listed.edges
    before = version(graph)
    load(sync)  # an unchanged reload lists them again, and nothing else moves
    assert not any(known.unlisted for known in sync.stored_documents().values()) and version(graph) == before
    assert not graph.execute_query("MATCH (d:LinksChanged) RETURN d.uri AS uri").records
    assert document_graph(graph, "neo4j").directed == listed.directed
