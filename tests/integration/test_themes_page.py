"""The page authors watch, in a real headless Chromium: it shows the themes and a picture of the
theme graph, and updates by itself (server-sent events) when a themes run changes anything."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest
from neo4j import Driver
from playwright.sync_api import expect, sync_playwright

from tests.conftest import Neo4jService
from tests.helpers import LAKEGRAPH, clean_env
from tests.integration.test_themes import load_two_clusters
from worker.documents.sync import DocumentSync
from worker.runtime.processes import stop_pid
from worker.settings import Settings
from worker.themes.runner import ThemeRunner

pytestmark = pytest.mark.timeout(240)
CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync",
]


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        pytest.fail("this test needs Chromium (Debian: apt-get install chromium; .ci/run installs it)")
    return found


@pytest.fixture
def library(neo4j_service: Neo4jService, driver: Driver, tmp_path: Path) -> tuple[Settings, Path]:
    settings, root = load_two_clusters(neo4j_service, driver, tmp_path)
    ThemeRunner(settings, driver, "neo4j").run()
    return settings, root


@pytest.fixture
def server(library: tuple[Settings, Path], neo4j_service: Neo4jService, tmp_path: Path) -> Iterator[tuple[str, str]]:
    state = tmp_path / "serve-state"
    env = clean_env(**neo4j_service.env(), LAKEGRAPH_STATE_DIR=str(state), LAKEGRAPH_LOG_LEVEL="warning")
    process = subprocess.Popen([LAKEGRAPH, "serve", "--http", "--port", "0"], env=env, stdout=subprocess.PIPE, text=True)
    try:
        line = process.stdout.readline() if process.stdout else ""
        base = line.split()[2].split("/v1")[0]
        yield base, (state / "serve" / "token").read_text().strip()
    finally:
        stop_pid(process.pid, timeout=10)
        process.wait(10)


def test_the_page_shows_themes_and_updates_itself(server: tuple[str, str], library: tuple[Settings, Path], driver: Driver, tmp_path: Path) -> None:
    base, token = server
    assert httpx2.get(f"{base}/themes").status_code == 401
    settings, root = library
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium(), args=CHROMIUM_FLAGS)
        try:
            page = browser.new_page()
            page.goto(f"{base}/themes?token={token}")
            assert page.url == f"{base}/themes"  # the token moved into a cookie
            expect(page.locator("#header")).to_contain_text("9 documents = 8 grouped + 1 ungrouped; 2 themes", timeout=15_000)
            expect(page.locator(".theme-card")).to_have_count(2)
            expect(page.locator(".theme-card").first).to_contain_text("converge on:")
            page.wait_for_function("document.getElementById('graph').naturalWidth > 0")
            brakes = page.locator(".theme-card", has_text="lib/brakes/pads").get_attribute("data-id")

            # An author adds a bulletin citing the brake documents; the worker's run lands; the page follows.
            (root / "brakes/bulletin.md").write_text("# Bulletin\nSee [pads](pads.md), [abs](abs.md) and [rotors](rotors.md).\n")
            DocumentSync(settings, driver, "neo4j").sync_path("lib", "brakes/bulletin.md")
            ThemeRunner(settings, driver, "neo4j").run()
            expect(page.locator("#change")).to_contain_text(f"{brakes} grew by 1", timeout=15_000)
            expect(page.locator("#change")).to_contain_text(f"moved lib/brakes/bulletin: ungrouped → {brakes}")
            expect(page.locator("#header")).to_contain_text("10 documents = 9 grouped + 1 ungrouped")

            # Then it rewrites the bulletin to cite the network documents: it moves between themes.
            network = page.locator(".theme-card", has_text="lib/network/bcm").get_attribute("data-id")
            (root / "brakes/bulletin.md").write_text("# Bulletin\nSee [bcm](../network/bcm.md), [can](../network/can.md) and [lin](../network/lin.md).\n")
            DocumentSync(settings, driver, "neo4j").sync_path("lib", "brakes/bulletin.md")
            ThemeRunner(settings, driver, "neo4j").run()
            expect(page.locator("#change")).to_contain_text(f"moved lib/brakes/bulletin: {brakes} → {network}", timeout=15_000)
            expect(page.locator(f".theme-card[data-id='{network}']")).to_contain_text("5 documents")
            page.screenshot(path=str(tmp_path / "themes-page.png"))
        finally:
            browser.close()
    svg = httpx2.get(f"{base}/themes/graph.svg", headers={"Authorization": f"Bearer {token}"})
    assert svg.headers["content-type"].startswith("image/svg+xml") and svg.text.count('class="theme"') == 2
