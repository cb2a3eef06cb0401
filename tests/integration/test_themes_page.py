"""The page authors watch, in a real headless Chromium: themes named from their metadata, each in
its colour, the links between them with weights, members on demand, the latest move highlighted and
the timeline — updated by itself (server-sent events) when a themes run changes anything, and a
button that asks the workers for a run now; the screenshot shows the colours and the highlight."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest
from neo4j import Driver
from playwright.sync_api import expect, sync_playwright

from shapes.serving.themes_page import HIGHLIGHT, colour
from tests.conftest import Neo4jService
from tests.helpers import LAKEGRAPH, clean_env, take_queued
from tests.integration.test_themes import load_two_clusters
from worker.documents.sync import DocumentSync
from worker.runtime import redis_server
from worker.runtime.processes import stop_pid
from worker.settings import Settings
from worker.task_names import CHECK_THEMES
from worker.themes.runner import ThemeRunner

pytestmark = pytest.mark.timeout(240)
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        pytest.fail("this test needs Chromium (Debian: apt-get install chromium; .ci/run installs it)")
    return found


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


def test_the_page_shows_named_coloured_themes_and_the_latest_move(
    server: tuple[str, str], library: tuple[Settings, Path], driver: Driver, redis_service: redis_server.LocalRedis, tmp_path: Path
) -> None:
    base, token = server
    assert httpx2.get(f"{base}/themes").status_code == 401
    settings, root = library
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium(), args=CHROMIUM_FLAGS)
        try:
            page = browser.new_page(viewport={"width": 1500, "height": 1400})
            page.goto(f"{base}/themes?token={token}")
            assert page.url == f"{base}/themes"  # the token moved into a cookie
            expect(page.locator("#header")).to_contain_text("9 documents = 8 grouped + 1 ungrouped; 2 themes", timeout=15_000)
            expect(page.locator(".theme-card")).to_have_count(2)
            brakes_card = page.locator(".theme-card", has_text="lib/brakes/pads")
            brakes = brakes_card.get_attribute("data-id")
            network = page.locator(".theme-card", has_text="lib/network/bcm").get_attribute("data-id")
            # Named from their own metadata: the folder most members share, then the top targets' titles.
            expect(brakes_card.locator("h3")).to_contain_text(f"{brakes} · lib/brakes — ")
            expect(page.locator(f".theme-card[data-id='{network}'] h3")).to_contain_text(f"{network} · lib/network — ")
            # The link between the themes, with its weight (abs cites the gateway once).
            expect(page.locator("#graph svg g.edge")).to_have_count(1)
            expect(page.locator("#graph svg g.edge text.weight")).to_have_text("1")
            # Members on demand.
            brakes_card.locator("button.open").click()
            expect(brakes_card.locator(".member")).to_have_count(4)

            # An author adds a bulletin citing the brake documents; the worker's run lands; the page follows.
            (root / "brakes/bulletin.md").write_text("# Bulletin\nSee [pads](pads.md), [abs](abs.md) and [rotors](rotors.md).\n")
            DocumentSync(settings, driver, "neo4j").sync_path("lib", "brakes/bulletin.md")
            ThemeRunner(settings, driver, "neo4j").run()
            expect(page.locator("#change")).to_contain_text(f"{brakes} grew by 1", timeout=15_000)
            expect(page.locator("#change .move")).to_contain_text(f"moved lib/brakes/bulletin: ungrouped → {brakes} lib/brakes — ")
            expect(page.locator("#header")).to_contain_text("10 documents = 9 grouped + 1 ungrouped")

            # Then it rewrites the bulletin to cite the network documents: it moves between themes.
            (root / "brakes/bulletin.md").write_text("# Bulletin\nSee [bcm](../network/bcm.md), [can](../network/can.md) and [lin](../network/lin.md).\n")
            DocumentSync(settings, driver, "neo4j").sync_path("lib", "brakes/bulletin.md")
            ThemeRunner(settings, driver, "neo4j").run()
            move = page.locator("#change .move")
            expect(move).to_contain_text(f"moved lib/brakes/bulletin: {brakes} lib/brakes — ", timeout=15_000)
            expect(move).to_contain_text(f" → {network} lib/network — ")
            expect(page.locator(f".theme-card[data-id='{network}']")).to_contain_text("5 documents")
            expect(brakes_card.locator(".member")).to_have_count(4)  # the opened members stay open, current
            expect(page.locator(".theme-card.changed")).to_have_count(2)  # both themes the move touched
            expect(page.locator("#graph svg g.theme circle[stroke='#ff9800']")).to_have_count(2)
            expect(page.locator("#timeline li")).to_have_count(3)  # the first run, then the two edits
            expect(page.locator("#timeline li").first).to_contain_text("1 moved")
            # The author asks for a run now: the button queues it for the workers (none reads this broker here).
            expect(page.locator("#refresh")).to_be_visible()
            page.locator("#refresh").click()
            status = page.locator("#refresh-status")
            expect(status).to_contain_text("asked the workers for a themes run (task ", timeout=15_000)
            task = status.inner_text().split("(task ")[1].split(")")[0]
            assert take_queued(redis_service.url, task) == (CHECK_THEMES, {"requested": True})
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
