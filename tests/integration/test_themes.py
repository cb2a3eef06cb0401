"""Themes runs on a real graph: GDS Leiden and the in-process fallback, stable ids across runs,
the change log, skipped runs when only text changed, and failures that leave the themes alone."""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path

import pytest
from neo4j import Driver

from shapes.serving import authors_view
from shapes.serving.identity import Caller
from shapes.serving.service import Shapes
from shapes.themes import render_changes, stored_themes
from tests.conftest import Neo4jService
from tests.graph_dump import wipe
from tests.helpers import assert_one_line_error, clean_env, run_cli
from worker.documents.loader import load
from worker.documents.sync import DocumentSync
from worker.exceptions import LakegraphError
from worker.graph.setup import apply_schema
from worker.settings import Settings
from worker.shared.grants import EVERYTHING, Grant
from worker.themes import write
from worker.themes.engines import PROJECT, GdsEngine
from worker.themes.model import DocumentGraph
from worker.themes.projection import conductance, document_graph
from worker.themes.runner import LINKS_UNCHANGED, ThemeRunner

pytestmark = pytest.mark.timeout(180)
THEMES = "MATCH (d:Document)-[:IN_THEME]->(t:Theme {level: 0}) RETURN t.id AS id, collect(d.uri) AS members"
PROJECTIONS = "CALL gds.graph.list() YIELD graphName RETURN count(*) AS n"


def brakes_and_network(root: Path) -> None:
    """Two clusters of documents that cite each other, one crossover link, one isolated document."""
    docs = {
        "brakes/pads.md": "# Pads\nSee [rotors](rotors.md), [abs](abs.md) and [fluid](fluid.md).\n",
        "brakes/rotors.md": "# Rotors\nSee [pads](pads.md) and [abs](abs.md).\n",
        "brakes/abs.md": "# ABS\nSee [pads](pads.md), [fluid](fluid.md) and the [gateway](../network/gateway.md).\n",
        "brakes/fluid.md": "# Fluid\nSee [pads](pads.md) and [rotors](rotors.md).\n",
        "network/bcm.md": "# BCM\nSee [gateway](gateway.md), [can](can.md) and [lin](lin.md).\n",
        "network/gateway.md": "# Gateway\nSee [bcm](bcm.md) and [can](can.md).\n",
        "network/can.md": "# CAN\nSee [bcm](bcm.md), [lin](lin.md) and [gateway](gateway.md).\n",
        "network/lin.md": "# LIN\nSee [can](can.md) and [bcm](bcm.md).\n",
        "misc/alone.md": "# Alone\nNo links here.\n",
    }
    for relpath, text in docs.items():
        path = root / relpath
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def load_two_clusters(service: Neo4jService, driver: Driver, tmp_path: Path) -> tuple[Settings, Path]:
    wipe(driver)
    root = tmp_path / "lib"
    brakes_and_network(root)
    settings = service.settings.with_section("documents", libraries=[{"name": "lib", "root": root}])
    apply_schema(settings, driver, "neo4j")
    load(DocumentSync(settings, driver, "neo4j"), workers=1)
    return settings, root


@pytest.fixture
def library(neo4j_service: Neo4jService, driver: Driver, tmp_path: Path) -> tuple[Settings, Path]:
    return load_two_clusters(neo4j_service, driver, tmp_path)


def memberships(driver: Driver) -> dict[str, list[str]]:
    return {row["id"]: sorted(row["members"]) for row in driver.execute_query(THEMES).records}


@pytest.mark.parametrize("engine", ["gds", "leidenalg"])
def test_a_run_finds_the_clusters_and_counts_reconcile(library: tuple[Settings, Path], driver: Driver, engine: str) -> None:
    settings, _ = library
    report = ThemeRunner(settings.with_section("themes", engine=engine), driver, "neo4j").run()
    assert report.ran and report.engine == engine
    assert (report.documents, report.grouped, report.ungrouped, report.themes) == (9, 8, 1, 2)
    assert sorted(memberships(driver).values()) == [
        ["lib/brakes/abs", "lib/brakes/fluid", "lib/brakes/pads", "lib/brakes/rotors"],
        ["lib/network/bcm", "lib/network/can", "lib/network/gateway", "lib/network/lin"],
    ]
    assert sorted(report.changes["born"]) == sorted(memberships(driver))
    run = driver.execute_query("MATCH (r:ThemeRun) RETURN r.engine AS engine, r.documents AS documents, r.grouped AS grouped").records
    assert [tuple(row.values()) for row in run] == [(engine, 9, 8)]
    conductance = driver.execute_query("MATCH (t:Theme {level: 0}) RETURN min(t.conductance) AS low, max(t.conductance) AS high").records[0]
    assert 0 < conductance["low"] <= conductance["high"] < 0.3  # one crossover link out of many inside


def test_conductance_scored_here_is_what_gds_computes(library: tuple[Settings, Path], driver: Driver) -> None:
    """The engine scores every level with GDS's formula in numpy; GDS's own conductance, from the
    final communities mutated into the projection, gives the same numbers."""
    graph = document_graph(driver, "neo4j")
    gds, edges = GdsEngine(driver, "neo4j").client, graph.arrays
    projected = gds.graph.project.cypher(
        PROJECT, name="conductance-check", source=edges.a.tolist(), target=edges.b.tolist(), weight=edges.weight.tolist()
    ).graph
    try:
        gds.leiden.mutate(projected, mutate_property="community", random_seed=42, concurrency=1, relationship_weight_property="weight")
        theirs = gds.conductance.stream(projected, community_property="community", relationship_weight_property="weight")
        found = gds.graph.node_properties.stream(projected, "community")
        membership = {graph.linked[node]: int(community) for node, community in zip(found["nodeId"], found["community"], strict=True)}
    finally:
        gds.graph.drop("conductance-check")
    expected = {int(community): round(float(score), 6) for community, score in zip(theirs["community"], theirs["conductance"], strict=True)}
    assert len(expected) == 2 and conductance(graph, membership) == expected


def test_a_new_score_with_the_same_members_is_changed_in_place_and_readers_of_the_run_before_keep_theirs(
    library: tuple[Settings, Path], driver: Driver
) -> None:
    """A link added inside the brakes theme changes its cohesion, not its members: no new version
    (no membership written again), and a reader still at the run before reads the score it had."""
    settings, root = library
    runner = ThemeRunner(settings, driver, "neo4j")
    runner.run()
    before = {row["id"]: row["conductance"] for row in stored_themes(driver, "neo4j", 1, 0)}
    (root / "brakes/rotors.md").write_text("# Rotors\nSee [pads](pads.md), [abs](abs.md), [fluid](fluid.md) and the [gateway](../network/gateway.md).\n")
    DocumentSync(settings, driver, "neo4j").sync_path("lib", "brakes/rotors.md")
    versions = driver.execute_query("MATCH (t:Theme|ThemeDraft|ThemeRetired) RETURN count(t) AS n").records[0]["n"]
    report = runner.run()
    assert report.ran and report.changes["moved"] == []
    assert driver.execute_query("MATCH (t:Theme|ThemeDraft|ThemeRetired) RETURN count(t) AS n").records[0]["n"] == versions
    assert {row["id"]: row["conductance"] for row in stored_themes(driver, "neo4j", 1, 0)} == before  # read at run 1
    after = {row["id"]: row["conductance"] for row in stored_themes(driver, "neo4j", 2, 0)}
    assert after.keys() == before.keys() and after != before


def test_ids_stay_stable_and_changes_are_logged(library: tuple[Settings, Path], driver: Driver) -> None:
    settings, root = library
    runner = ThemeRunner(settings, driver, "neo4j")
    runner.run()
    first = memberships(driver)
    brakes = next(theme for theme, members in first.items() if "lib/brakes/pads" in members)

    assert runner.run().reason == LINKS_UNCHANGED
    sync = DocumentSync(settings, driver, "neo4j")
    (root / "brakes/fluid.md").write_text("# Fluid\nDOT 4 only. See [pads](pads.md) and [rotors](rotors.md).\n")
    sync.sync_path("lib", "brakes/fluid.md")
    assert runner.run().reason == LINKS_UNCHANGED  # text only: the writer saw no link change, no edge is read

    (root / "brakes/calipers.md").write_text("# Calipers\nSee [pads](pads.md), [rotors](rotors.md) and [abs](abs.md).\n")
    sync.sync_path("lib", "brakes/calipers.md")
    report = runner.run()
    assert report.ran and report.changes["grew"] == {brakes: 1} and report.changes["born"] == []
    assert report.changes["moved"] == [{"document": "lib/brakes/calipers", "from": None, "to": brakes}]
    # Why: the edit that changed links, not the one that changed text only (the first run named none).
    assert (report.changes["edited"], report.changes["edits"]) == (["lib/brakes/calipers"], 1)
    assert memberships(driver)[brakes] == sorted(first[brakes] + ["lib/brakes/calipers"])
    logged = driver.execute_query("MATCH (r:ThemeRun) RETURN r.changes AS changes ORDER BY r.started").records
    assert len(logged) == 2 and json.loads(logged[-1]["changes"])["grew"] == {brakes: 1}


def test_a_failed_run_leaves_the_themes_and_drops_its_projection(library: tuple[Settings, Path], driver: Driver) -> None:
    settings, _ = library
    ThemeRunner(settings, driver, "neo4j").run()
    before = memberships(driver)
    graph = DocumentGraph(["lib/a", "lib/b"], {("lib/a", "lib/b"): 1})
    with pytest.raises(LakegraphError, match="GDS Leiden failed"):
        GdsEngine(driver, "neo4j").partition(graph, -1.0, 42, 3)  # a resolution Leiden refuses, after the projection
    assert driver.execute_query(PROJECTIONS).records[0]["n"] == 0
    assert memberships(driver) == before


def test_the_themes_shape_reconciles_and_explains_each_theme(library: tuple[Settings, Path], driver: Driver, neo4j_service: Neo4jService) -> None:
    settings, _ = library
    shapes = Shapes(settings, driver, "neo4j")
    empty = shapes.ask("themes").result
    assert (empty.documents, empty.grouped, empty.ungrouped, empty.themes) == (9, 0, 9, [])
    ThemeRunner(settings, driver, "neo4j").run()
    result = shapes.ask("themes").result
    assert result.documents == result.grouped + result.ungrouped == 9 and result.ungrouped == 1
    brakes = next(view for view in result.themes if view.central[0]["uri"].startswith("lib/brakes/"))
    network = next(view for view in result.themes if view is not brakes)
    assert brakes.size == 4 and brakes.share == pytest.approx(4 / 9, abs=1e-3) and brakes.cohesion in ("tight", "cohesive")
    assert brakes.top_targets[0] == {"uri": "lib/brakes/pads", "cited_by": 3}
    assert brakes.central[0] == {"uri": "lib/brakes/pads", "links": 6}  # cites 3 members, cited by 3
    assert brakes.crossovers == [{"theme": network.id, "document": "lib/brakes/abs", "links": 1}]
    text = shapes.ask("themes").text()
    assert text.startswith("9 documents = 8 grouped + 1 ungrouped; 2 themes at level 0")
    assert f"↔ {network.id} via lib/brakes/abs (1 links)" in text

    env = clean_env(**neo4j_service.env())
    done = run_cli("themes", "--json", env=env)
    data = json.loads(done.stdout)
    assert (data["documents"], data["grouped"], data["ungrouped"]) == (9, 8, 1)
    assert {theme["id"]: theme["size"] for theme in data["themes"]} == {view.id: view.size for view in result.themes}
    assert all(set(theme) >= {"id", "size", "conductance", "top_targets", "central", "crossovers"} for theme in data["themes"])
    assert all("documents" not in theme for theme in data["themes"])  # members come from a call of their own
    first = json.loads(run_cli("themes", "--theme", brakes.id, "--max-tokens", "200", "--json", env=env).stdout)
    rest = json.loads(run_cli("themes", "--theme", brakes.id, "--max-tokens", "5000", "--cursor", first["page"]["next_cursor"], "--json", env=env).stdout)
    assert [m["uri"] for m in first["members"] + rest["members"]] == memberships(driver)[brakes.id]
    assert first["page"]["truncated"] and (first["page"]["total"], rest["page"]["next_cursor"]) == (5, None)  # the theme, then its 4 members
    assert_one_line_error(run_cli("themes", "--theme", "T999", env=env), "no theme 'T999'")
    refreshed = run_cli("themes", "--refresh", "--gamma", "2.5", env=env)
    assert refreshed.returncode == 0 and "themes run run-" in refreshed.stdout
    changes = run_cli("theme-changes", "--since", "2000-01-01", env=env)
    assert changes.returncode == 0 and len([line for line in changes.stdout.splitlines() if " run-" in line]) == 2
    assert_one_line_error(run_cli("theme-changes", "--since", "yesterday", env=env), "since: Value error, should be a date (2026-11-30)")


def planted(root: Path, communities: int = 5, size: int = 16, seed: int = 3) -> dict[str, int]:
    """Communities of documents citing 4 others inside and, one time in ten, one outside."""
    rng = random.Random(seed)
    truth = {}
    for community in range(communities):
        for index in range(size):
            links = [f"../c{community}/d{rng.randrange(size)}.md" for _ in range(4)]
            if rng.random() < 0.1:
                links.append(f"../c{rng.randrange(communities)}/d{rng.randrange(size)}.md")
            body = " ".join(f"[see]({link})" for link in links if not link.endswith(f"c{community}/d{index}.md"))
            path = root / f"c{community}" / f"d{index}.md"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(f"# Doc {community}-{index}\n{body}\n")
            truth[f"lib/c{community}/d{index}"] = community
    return truth


@pytest.fixture
def planted_library(neo4j_service: Neo4jService, driver: Driver, tmp_path: Path) -> tuple[Settings, Path, dict[str, int]]:
    wipe(driver)
    root = tmp_path / "lib"
    truth = planted(root)
    settings = neo4j_service.settings.with_section("documents", libraries=[{"name": "lib", "root": root}])
    apply_schema(settings, driver, "neo4j")
    load(DocumentSync(settings, driver, "neo4j"), workers=1)
    return settings, root, truth


def test_planted_communities_are_recovered_and_one_cross_link_keeps_the_ids(planted_library: tuple[Settings, Path, dict[str, int]], driver: Driver) -> None:
    settings, root, truth = planted_library
    runner = ThemeRunner(settings, driver, "neo4j")
    runner.run()
    first = memberships(driver)
    # purity: each theme is (almost) one planted community, and each community is (almost) one theme
    agree = sum(Counter(truth[uri] for uri in members).most_common(1)[0][1] for members in first.values())
    assert len(first) == 5 and agree >= 0.95 * len(truth)

    (root / "c0/d0.md").write_text((root / "c0/d0.md").read_text() + "\n[one more](../c3/d5.md)\n")
    DocumentSync(settings, driver, "neo4j").sync_path("lib", "c0/d0.md")
    runner.run()
    second = memberships(driver)
    kept = sum(1 for theme, members in first.items() if second.get(theme) and len(set(members) & set(second[theme])) >= 0.5 * len(members))
    assert kept >= 0.9 * len(first)


def test_an_authors_documents_are_placed_within_their_grant(library: tuple[Settings, Path], driver: Driver) -> None:
    """The themes page's search (shapes/serving/authors_view.py): each document with its theme,
    role and strongest links; a stray page with nothing to suggest; and, within a grant on one
    folder, nothing of the documents outside it — not found, not as a link, not as a title."""
    settings, _ = library
    ThemeRunner(settings, driver, "neo4j").run()
    shapes = Shapes(settings, driver, "neo4j")
    themes = shapes.ask("themes").result
    [abs_doc] = authors_view.find(driver, "neo4j", themes, EVERYTHING, "ABS", "lib/brakes")
    network = next(view.id for view in themes.themes if view.id != abs_doc.theme)
    assert (abs_doc.uri, abs_doc.title, abs_doc.bridges) == ("lib/brakes/abs", "ABS", [network])
    assert {link.uri for link in abs_doc.outbound} == {"lib/brakes/pads", "lib/brakes/fluid", "lib/network/gateway"}
    assert {link.uri: link.links for link in abs_doc.inbound} == {"lib/brakes/pads": 1, "lib/brakes/rotors": 1}
    [alone] = authors_view.find(driver, "neo4j", themes, EVERYTHING, "alone", "")
    assert (alone.theme, alone.home, alone.link_to, alone.outbound, alone.inbound) == (None, None, [], [], [])
    assert [place.uri for place in authors_view.find(driver, "neo4j", themes, EVERYTHING, "", "lib/network")] == [
        "lib/network/bcm",
        "lib/network/can",
        "lib/network/gateway",
        "lib/network/lin",
    ]
    grant = Grant(("net",), ("lib/network",))
    seen = shapes.ask("themes", Caller("a", "", grant)).result
    gateway = authors_view.find(driver, "neo4j", seen, grant, "", "")
    assert {place.uri for place in gateway} == {"lib/network/bcm", "lib/network/can", "lib/network/gateway", "lib/network/lin"}
    links = {link.uri for place in gateway for link in (*place.inbound, *place.outbound)}
    assert links and all(uri.startswith("lib/network/") for uri in links)  # the ABS page's link to the gateway is not theirs
    assert authors_view.find(driver, "neo4j", seen, grant, "ABS", "") == []
    assert authors_view.titles(driver, "neo4j", {"lib/brakes/abs", "lib/network/can"}, grant) == {"lib/network/can": "CAN"}
    assert authors_view.folders(driver, "neo4j", grant) == ["lib/network"]


def test_a_document_whose_links_move_is_recorded_as_that_move(library: tuple[Settings, Path], driver: Driver) -> None:
    settings, root = library
    runner, sync = ThemeRunner(settings, driver, "neo4j"), DocumentSync(settings, driver, "neo4j")
    (root / "brakes/bulletin.md").write_text("# Bulletin\nSee [pads](pads.md), [abs](abs.md) and [rotors](rotors.md).\n")
    sync.sync_path("lib", "brakes/bulletin.md")
    runner.run()
    themes = memberships(driver)
    brakes = next(theme for theme, members in themes.items() if "lib/brakes/pads" in members)
    network = next(theme for theme in themes if theme != brakes)
    shapes = Shapes(settings, driver, "neo4j")  # a server's, which keeps each run's themes
    sizes = {view.id: view.size for view in shapes.ask("themes").result.themes}
    (root / "brakes/bulletin.md").write_text("# Bulletin\nSee [bcm](../network/bcm.md), [can](../network/can.md) and [lin](../network/lin.md).\n")
    sync.sync_path("lib", "brakes/bulletin.md")
    report = runner.run()
    assert report.changes["moved"] == [{"document": "lib/brakes/bulletin", "from": brakes, "to": network}]
    assert report.changes["grew"] == {network: 1} and report.changes["shrank"] == {brakes: 1}
    assert report.changes["edited"] == ["lib/brakes/bulletin"]
    log = render_changes(shapes.ask("theme_changes", since="2000-01-01").result)
    assert log.endswith(f"moved lib/brakes/bulletin: {brakes} → {network}\n    after edits to the links of lib/brakes/bulletin"), log
    network_only = Shapes(settings, driver, "neo4j").ask("theme_changes", Caller("a", "", Grant(("net",), ("lib/network",))), since="2000-01-01").result
    assert [run["changes"] for run in network_only.runs][-1] == {"moved": [], "edited": [], "edits": 0}  # the bulletin is not theirs
    after = shapes.ask("themes").result
    assert after == Shapes(settings, driver, "neo4j").ask("themes").result  # the new run's themes, not the kept ones
    assert {view.id: view.size for view in after.themes} == {brakes: sizes[brakes] - 1, network: sizes[network] + 1}


LEFTOVERS = "MATCH (n:ThemeDraft|ThemeRunDraft) RETURN count(n) AS n"  # retired versions stay for readers of the run before, until the next run


@pytest.mark.parametrize("strike", ["switch", "settle"])
def test_a_failure_injected_mid_write_leaves_readers_on_one_run(
    library: tuple[Settings, Path], driver: Driver, monkeypatch: pytest.MonkeyPatch, strike: str
) -> None:
    """At the switch the new run is staged (a version of the grown theme, the run's node) and no
    reader sees it: the shape and naive Cypher both answer the previous run. After the switch, the
    shape answers the new run while naive Cypher still matches the previous one's `Theme` nodes,
    until the next call of the runner settles it (even one that finds nothing to run)."""
    settings, root = library
    runner = ThemeRunner(settings, driver, "neo4j")
    runner.run()
    shapes = Shapes(settings, driver, "neo4j")
    before = memberships(driver), shapes.ask("themes").result.run
    real = getattr(write.ThemesWrite, f"_{strike}")

    def failing(self, *args):
        if strike == "settle" and args[0] != 2:  # the clearing before staging settles run 1: let it
            return real(self, *args)
        raise OSError("injected: the disk failed while the run was being written")

    monkeypatch.setattr(write.ThemesWrite, f"_{strike}", failing)
    (root / "brakes/bulletin.md").write_text("# Bulletin\nSee [pads](pads.md) and [abs](abs.md).\n")
    DocumentSync(settings, driver, "neo4j").sync_path("lib", "brakes/bulletin.md")
    with pytest.raises(OSError, match="injected"):
        runner.run()
    brakes = next(theme for theme, members in before[0].items() if "lib/brakes/pads" in members)
    answered = Shapes(settings, driver, "neo4j").ask("themes").result
    assert memberships(driver) == before[0]
    if strike == "switch":
        assert driver.execute_query(LEFTOVERS).records[0]["n"] == 2  # the grown theme's new version, the run's node
        assert answered.run == before[1] and {view.id: view.size for view in answered.themes} == {theme: len(members) for theme, members in before[0].items()}
    else:
        assert answered.run != before[1] and {view.id: view.size for view in answered.themes}[brakes] == len(before[0][brakes]) + 1

    monkeypatch.setattr(write.ThemesWrite, f"_{strike}", real)
    ThemeRunner(settings, driver, "neo4j").run()
    assert "lib/brakes/bulletin" in memberships(driver)[brakes]
    assert driver.execute_query(LEFTOVERS).records[0]["n"] == 0
