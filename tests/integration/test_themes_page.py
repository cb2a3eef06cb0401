"""The page authors watch, in a real headless Chromium: themes said by titles and what their numbers
mean, each in its colour; an author's own documents found by title, with their theme, role and
strongest links; the map reachable by keyboard; the latest move highlighted and the timeline naming
each move and the edit that caused it — updated by itself (server-sent events) when a themes run
changes anything, and a button that asks the workers for a run now; no serious or critical
accessibility violation (axe-core); the screenshot shows the colours and the highlight."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest
from neo4j import Driver
from playwright.sync_api import expect, sync_playwright

from shapes.serving.themes_page import HIGHLIGHT, colour
from tests.browser import CHROMIUM_FLAGS, chromium
from tests.conftest import Neo4jService
from tests.helpers import LAKEGRAPH, clean_env, take_queued
from tests.integration.test_themes import load_two_clusters
from tests.services import axe
from worker.documents.sync import DocumentSync
from worker.runtime import redis_server
from worker.runtime.processes import stop_pid
from worker.settings import Settings
from worker.task_names import CHECK_THEMES
from worker.themes.runner import ThemeRunner

pytestmark = pytest.mark.timeout(240)


@pytest.fixture
def library(neo4j_service: Neo4jService, driver: Driver, redis_service: redis_server.LocalRedis, tmp_path: Path) -> tuple[Settings, Path]:
    """Runs announce on the Redis the server reads its changes from, as a worker's do."""
    settings, root = load_two_clusters(neo4j_service, driver, tmp_path)
    settings = settings.with_section("redis", url=redis_service.url)
    ThemeRunner(settings, driver, "neo4j").run()
    return settings, root


@pytest.fixture
def server(library: tuple[Settings, Path], neo4j_service: Neo4jService, redis_service: redis_server.LocalRedis, tmp_path: Path) -> Iterator[tuple[str, str]]:
    state = tmp_path / "serve-state"
    env = clean_env(**neo4j_service.env(), LAKEGRAPH_STATE_DIR=str(state), LAKEGRAPH_LOG_LEVEL="warning", LAKEGRAPH_REDIS__URL=redis_service.url)
    process = subprocess.Popen([LAKEGRAPH, "serve", "--http", "--port", "0"], env=env, stdout=subprocess.PIPE, text=True)
    try:
        line = process.stdout.readline() if process.stdout else ""
        base = line.split()[2].split("/v1")[0]
        yield base, (state / "serve" / "token").read_text().strip()
    finally:
        stop_pid(process.pid, timeout=10)
        process.wait(10)


def colour_share(png: Path, hex_colour: str) -> float:
    """The share of a screenshot's pixels in this colour (within antialiasing's reach)."""
    import numpy as np
    from PIL import Image

    target = np.array([int(hex_colour[index : index + 2], 16) for index in (1, 3, 5)])
    pixels = np.asarray(Image.open(png).convert("RGB"), dtype=np.int64)
    return float(np.all(np.abs(pixels - target) <= 6, axis=-1).mean())


def test_an_author_finds_their_documents_and_sees_what_moved_them(
    server: tuple[str, str], library: tuple[Settings, Path], driver: Driver, redis_service: redis_server.LocalRedis, neo4j_service: Neo4jService, tmp_path: Path
) -> None:
    base, token = server
    assert httpx2.get(f"{base}/themes").status_code == 401
    settings, root = library
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium(), args=CHROMIUM_FLAGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(f"{base}/themes?token={token}")
            assert page.url == f"{base}/themes"  # the token moved into a cookie
            expect(page.locator("#header")).to_contain_text("9 documents = 8 grouped + 1 ungrouped; 2 themes", timeout=15_000)
            expect(page.locator(".theme-card")).to_have_count(2)
            # Themes said as a phrase: their top targets' titles, then the folder they mostly live in.
            brakes_card = page.locator(".theme-card", has=page.locator("h3", has_text="(in lib/brakes)"))
            brakes = brakes_card.get_attribute("data-id")
            network = page.locator(".theme-card", has=page.locator("h3", has_text="(in lib/network)")).get_attribute("data-id")
            assert brakes and network and brakes != network
            # Titles, not URIs: a URI shows on hover and in the copyable detail, and numbers say what they mean.
            shown = brakes_card.inner_text()
            assert "Pads" in shown and "lib/brakes/pads" not in shown, shown
            assert "of its links lead to other themes" in shown and "4 documents" in shown
            expect(brakes_card.locator(".doc", has_text="Pads").first).to_have_attribute("title", "lib/brakes/pads")
            brakes_card.locator("details summary").click()
            expect(brakes_card.locator("details pre")).to_contain_text("lib/brakes/pads")
            # The map: the link between the themes with its weight; every theme reachable by keyboard.
            expect(page.locator("#graph svg g.edge")).to_have_count(1)
            expect(page.locator("#graph svg g.edge text.weight")).to_have_text("1")
            expect(page.locator("#graph svg g.theme[tabindex='0']")).to_have_count(2)
            page.locator(f"#graph svg g.theme[data-id='{brakes}']").focus()
            expect(page.locator("#map-caption")).to_contain_text(f"{brakes} · 4 documents Pads, ABS (in lib/brakes)")
            page.keyboard.press("Enter")
            assert page.evaluate("document.activeElement.dataset.id") == brakes  # to the theme's card
            # Members on demand, by title.
            brakes_card.locator("button.open").click()
            expect(brakes_card.locator(".member")).to_have_count(4)
            expect(brakes_card.locator(".member", has_text="Rotors")).to_have_count(1)

            # My documents: a stray page says so; a member says where it sits and its strongest links.
            page.locator("#q").fill("alone")
            expect(page.locator(".found h3")).to_have_text(["Alone"])
            expect(page.locator(".found .place")).to_contain_text("Ungrouped: no theme holds it")
            page.locator("#q").fill("abs")
            found = page.locator(".found", has=page.locator("h3", has_text="ABS"))
            expect(found.locator(".place")).to_contain_text(f"In {brakes} ")
            expect(found.locator(".place")).to_contain_text("a bridge")  # its link to the gateway crosses into the network theme
            expect(found).to_contain_text("Strongest links out: ")
            expect(found.locator(".doc", has_text="Gateway")).to_have_count(1)

            # An author adds a bulletin citing the brake documents; the worker's run lands; the page follows.
            (root / "brakes/bulletin.md").write_text("# Bulletin\nSee [pads](pads.md), [abs](abs.md) and [rotors](rotors.md).\n")
            DocumentSync(settings, driver, "neo4j").sync_path("lib", "brakes/bulletin.md")
            ThemeRunner(settings, driver, "neo4j").run()
            expect(page.locator("#change")).to_contain_text(f"{brakes} grew by 1", timeout=15_000)
            expect(page.locator("#change .move")).to_contain_text(f"Bulletin: ungrouped → {brakes} ")
            expect(page.locator("#header")).to_contain_text("10 documents = 9 grouped + 1 ungrouped")

            # Then it rewrites the bulletin to cite the network documents: the timeline names the move and the edit within a second.
            page.locator("#q").fill("bulletin")
            expect(page.locator(".found .place")).to_contain_text(f"In {brakes} ")
            (root / "brakes/bulletin.md").write_text("# Bulletin\nSee [bcm](../network/bcm.md), [can](../network/can.md) and [lin](../network/lin.md).\n")
            DocumentSync(settings, driver, "neo4j").sync_path("lib", "brakes/bulletin.md")
            ThemeRunner(settings, driver, "neo4j").run()
            ran = time.monotonic()
            latest = page.locator("#timeline li.run").first
            expect(latest.locator(".move")).to_contain_text(f"Bulletin: {brakes} ", timeout=15_000)
            named = time.monotonic() - ran
            expect(latest.locator(".move")).to_contain_text(f" → {network} ")
            expect(latest.locator(".edits")).to_contain_text("after edits to the links of: Bulletin")
            assert named < 1.0, f"the timeline named the move {named:.2f} s after the run"
            expect(page.locator(".found .place")).to_contain_text(f"In {network} ")  # the author's search follows
            expect(page.locator(f".theme-card[data-id='{network}']")).to_contain_text("5 documents")
            expect(brakes_card.locator(".member")).to_have_count(4)  # the opened members stay open, current
            expect(page.locator(".theme-card.changed")).to_have_count(2)  # both themes the move touched
            expect(page.locator("#graph svg g.theme circle[stroke='#ff9800']")).to_have_count(2)
            expect(page.locator("#timeline li.run")).to_have_count(3)  # the first run, then the two edits
            # A moved document leads to where it is now.
            latest.locator(".move button").click()
            expect(page.locator("#q")).to_have_value("lib/brakes/bulletin")
            expect(page.locator(".found .place")).to_contain_text(f"In {network} ")
            # The author asks for a run now: the button queues it for the workers (none reads this broker here).
            expect(page.locator("#refresh")).to_be_visible()
            page.locator("#refresh").click()
            status = page.locator("#refresh-status")
            expect(status).to_contain_text("asked the workers for a themes run (task ", timeout=15_000)
            task = status.inner_text().split("(task ")[1].split(")")[0]
            assert take_queued(redis_service.url, task) == (CHECK_THEMES, {"requested": True})
            # Accessibility: axe-core finds nothing serious or critical.
            page.add_script_tag(path=str(axe.script(neo4j_service.settings.cache_path)))
            violations = page.evaluate(
                "axe.run(document).then(result => result.violations.map(v => ({id: v.id, impact: v.impact, nodes: v.nodes.map(n => n.html)})))"
            )
            assert [(violation["id"], violation["nodes"][:3]) for violation in violations if violation["impact"] in ("serious", "critical")] == []
            page.wait_for_function("document.querySelectorAll('#graph svg g.edge').length >= 1")
            shot = tmp_path / "themes-page.png"
            page.screenshot(path=str(shot), full_page=True)
        finally:
            browser.close()
    # What the eye sees: each theme's own colour (card edge and circle) and the highlighted move.
    for theme in (brakes, network):
        assert colour_share(shot, colour(theme)) > 0.002, theme
    assert colour_share(shot, HIGHLIGHT) > 0.001
    svg = httpx2.get(f"{base}/themes/graph.svg", headers={"Authorization": f"Bearer {token}"})
    assert svg.headers["content-type"].startswith("image/svg+xml") and svg.text.count('class="theme"') == 2
