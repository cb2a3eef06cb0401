"""Themes that hold still on a real estate (3,088 PowerShell documentation pages): runs on an
unchanged graph are identical, small link edits keep ids and move only documents at the changed
links, and edits followed by their reversal bring the themes back — no drift coarser or finer."""

from __future__ import annotations

import json
import random
import subprocess
import time
from pathlib import Path

import pytest
from neo4j import Driver
from playwright.sync_api import sync_playwright

from shapes.serving.themes_page import phrase
from tests import themes_properties as props
from tests.browser import CHROMIUM_FLAGS, chromium
from tests.conftest import Neo4jService
from tests.graph_dump import wipe
from tests.helpers import LAKEGRAPH, clean_env, run_cli
from tests.paging import reassembled, walk
from worker.documents.loader import load
from worker.documents.sync import DocumentSync
from worker.graph.setup import apply_schema
from worker.runtime.processes import stop_pid
from worker.settings import Settings
from worker.themes.runner import ThemeRunner

pytestmark = pytest.mark.timeout(900)
LEVEL_0_NAMES = "MATCH (t:Theme {level: 0}) RETURN t.id AS id, t.name AS name"
ARTIFACTS = Path(__file__).resolve().parents[2] / "artifacts"  # kept after the run (.gitignore)


@pytest.fixture(scope="module")
def estate(neo4j_service: Neo4jService, driver: Driver, powershell_docs: Path) -> Settings:
    wipe(driver)
    settings = neo4j_service.settings.with_section("documents", libraries=[{"name": "ps", "root": powershell_docs}])
    apply_schema(settings, driver, "neo4j")
    report = load(DocumentSync(settings, driver, "neo4j"))
    assert report.documents > 3000 and report.linked > 20000
    return settings


def test_runs_on_an_unchanged_real_estate_are_identical(estate: Settings, driver: Driver, tmp_path: Path, neo4j_service: Neo4jService) -> None:
    runner = ThemeRunner(estate, driver, "neo4j")
    first = runner.run(force=True)
    assert first.ran and first.themes >= 20
    assert first.documents == first.grouped + first.ungrouped
    themes = props.snapshot(driver)
    for _ in range(3):
        again = runner.run(force=True)
        assert (again.themes, again.grouped, again.changes["moved"]) == (first.themes, first.grouped, [])
        assert props.snapshot(driver) == themes  # ids, levels, conductance and members
    env = clean_env(**neo4j_service.env(), LAKEGRAPH_STATE_DIR=str(tmp_path / "state"))
    for _ in range(2):
        refreshed = run_cli("themes", "--refresh", "--json", env=env)
        assert refreshed.returncode == 0, refreshed.stderr
        assert props.snapshot(driver) == themes
        assert len(json.loads(refreshed.stdout)["themes"]) == first.themes  # one JSON document, nothing before it
    assert not runner.run().ran  # the debounced path: nothing changed, nothing runs
    rebuilt = runner.run(rebuild=True)  # Leiden from scratch is a function of the graph too
    assert rebuilt.mode == "full" and props.snapshot(driver) == themes


def test_the_page_paints_the_estate_within_a_second_with_every_theme_readable(
    estate: Settings, driver: Driver, neo4j_service: Neo4jService, tmp_path: Path
) -> None:
    """The authors' page on the real estate, opened on a server just started: every theme's card
    and circle drawn within a second of the request, every name whole (the map names each on
    focus past a dozen themes); the screenshot is kept in ARTIFACTS."""
    stored = {row["id"]: row["name"] for row in driver.execute_query(LEVEL_0_NAMES).records}
    level0 = len(stored)
    state = tmp_path / "serve-state"
    env = clean_env(**neo4j_service.env(), LAKEGRAPH_STATE_DIR=str(state), LAKEGRAPH_LOG_LEVEL="warning")
    server = subprocess.Popen([LAKEGRAPH, "serve", "--http", "--port", "0"], env=env, stdout=subprocess.PIPE, text=True)
    try:
        base = (server.stdout.readline() if server.stdout else "").split()[2].split("/v1")[0]
        token = (state / "serve" / "token").read_text().strip()
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=chromium(), args=CHROMIUM_FLAGS)
            try:
                page = browser.new_page(viewport={"width": 1400, "height": 1000})
                began = time.monotonic()
                page.goto(f"{base}/themes?token={token}")
                page.wait_for_function(
                    f"document.querySelectorAll('.theme-card').length === {level0} && document.querySelectorAll('#graph svg g.theme').length === {level0}"
                )
                painted = time.monotonic() - began
                names = page.locator(".theme-card h3").all_inner_texts()
                labels = page.locator("#graph svg g.theme").evaluate_all("nodes => nodes.map(node => node.getAttribute('aria-label'))")
                ARTIFACTS.mkdir(exist_ok=True)
                page.screenshot(path=str(ARTIFACTS / "themes-page-powershell.png"), full_page=True)
            finally:
                browser.close()
    finally:
        stop_pid(server.pid, timeout=10)
        server.wait(10)
    print(f"\nthe page painted {level0} themes in {painted:.2f} s")
    assert painted < 1.0, f"first paint of {level0} themes took {painted:.2f} s"
    assert len(names) == len(labels) == level0 and all("…" not in name and " · " in name for name in names)
    assert all(phrase(stored[label.split(" · ")[0]]) in label for label in labels)  # whole, never cut


# The share of themes that keep their id after an edit of that fraction of the links, at least
# (measured: 1.00 at both; Leiden from scratch after each edit kept 0.86 to 0.91 at 2 %).
KEPT_AT_LEAST = {0.01: 0.9, 0.02: 0.9}


@pytest.mark.parametrize("fraction", sorted(KEPT_AT_LEAST))
def test_a_small_link_edit_keeps_the_ids_and_its_reversal_restores_the_themes(estate: Settings, driver: Driver, fraction: float) -> None:
    runner = ThemeRunner(estate, driver, "neo4j")
    runner.run(force=True)
    before = props.level0(props.snapshot(driver))
    shares, moves = [], []
    documents = sum(len(members) for members in before.values())
    for trial in range(3):
        edit = props.edit_links(driver, fraction, random.Random(f"{fraction}-{trial}"))
        report = runner.run()
        assert report.ran and report.mode == "update" and report.frontier <= len(edit.ends)
        after = props.level0(props.snapshot(driver))
        assert props.kept_together(before, after, edit.ends)  # documents away from the edit did not move
        shares.append(props.kept_share(before, after))
        moves.append(props.moved(before, after))
        props.revert(driver, edit)
        assert runner.run().ran
        restored = props.level0(props.snapshot(driver))
        assert props.kept_together(before, restored, set()) or props.moved(before, restored) <= 0.01 * documents
        before = restored
    assert min(shares) >= KEPT_AT_LEAST[fraction], shares
    assert max(moves) <= 0.02 * documents, moves


def test_twenty_small_edits_and_their_reversal_do_not_drift(estate: Settings, driver: Driver) -> None:
    runner = ThemeRunner(estate, driver, "neo4j")
    runner.run(force=True)
    start = props.level0(props.snapshot(driver))
    rng = random.Random(20)
    edits = []
    for _ in range(20):
        edits.append(props.edit_links(driver, 0.005, rng))
        assert runner.run().ran
    for edit in reversed(edits):
        props.revert(driver, edit)
    runner.run()
    end = props.level0(props.snapshot(driver))
    assert abs(len(end) - len(start)) <= 0.1 * len(start)
    assert props.kept_share(start, end) >= 0.9  # not merely as many themes: mostly the same ones
    assert props.moved(start, end) <= 0.02 * sum(len(members) for members in start.values())


def test_the_answer_fits_an_agent_and_walking_members_reassembles_every_theme(estate: Settings, driver: Driver) -> None:
    from shapes.serving.service import Shapes

    ThemeRunner(estate, driver, "neo4j").run()
    shapes = Shapes(estate, driver, "neo4j")
    overview = shapes.ask("themes")
    assert len(json.dumps(overview.data())) < 32_000 and len(overview.text()) < 32_000  # about 8,000 tokens
    stored = props.level0(props.snapshot(driver))
    walked: dict[str, frozenset[str]] = {}
    for _, view in reassembled(walk(shapes, "themes")):
        rows = reassembled(walk(shapes, "themes", theme=view.id, max_tokens=400))
        assert rows[0] == ("themes", view)
        found = [member["uri"] for _, member in rows[1:]]
        assert found == sorted(found) and len(found) == len(set(found)) == view.size  # one stable order, nothing twice
        walked[view.id] = frozenset(found)
    assert walked == stored
    assert overview.result.grouped == sum(len(members) for members in walked.values())


@pytest.mark.parametrize("tokens", [300, 2000])
def test_walking_the_overview_cursor_reassembles_the_whole_answer(estate: Settings, driver: Driver, tokens: int) -> None:
    from shapes.serving.service import Shapes

    ThemeRunner(estate, driver, "neo4j").run()
    shapes = Shapes(estate, driver, "neo4j")
    whole = shapes.ask("themes", max_tokens=10**6)
    assert not whole.page.truncated and whole.page.shown == whole.page.total == len(whole.result.themes)
    pages = walk(shapes, "themes", max_tokens=tokens)
    for page in pages:
        assert page.result.themes and (page.page.shown == 1 or len(json.dumps(page.data())) <= tokens * 4)  # whole themes within the budget
        assert page.page.total == whole.page.total and page.result.grouped == whole.result.grouped
    assert [view for _, view in reassembled(pages)] == whole.result.themes and len(pages) > 1  # the same themes in the same order, each once
