"""The demo end to end: `lakegraph demo` builds the lakehouse, runs the live stack and prints where
to look; the three agent journeys run over MCP the way an agent calls the tools (no LLM) and find
exactly what was planted (the dataset's manifest); a second start reuses the dataset and is faster."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import time
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import anyio
import httpx2
import jsonschema
import pytest
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from playwright.sync_api import expect, sync_playwright

from tests.browser import CHROMIUM_FLAGS, chromium
from tests.helpers import LAKEGRAPH, clean_env
from worker.runtime.processes import free_port

pytestmark = pytest.mark.timeout(600)
READY_TIMEOUT = 300


@dataclass
class Demo:
    folder: Path
    base: str
    token: str
    ready_seconds: float
    output: list[str]
    process: subprocess.Popen

    @property
    def manifest(self) -> dict:
        return json.loads((self.folder / "manifest.json").read_text())


def start_demo(folder: Path, port: int, *options: str, **extra_env: str) -> Demo:
    began = time.monotonic()
    process = subprocess.Popen(
        [LAKEGRAPH, "demo", "--folder", str(folder), "--port", str(port), "--vehicles", "300", *options],
        env=clean_env(**extra_env),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )
    lines: list[str] = []
    assert process.stdout is not None
    while not any(line.startswith("edit a file") for line in lines):
        line = process.stdout.readline()
        if not line:
            raise AssertionError("the demo exited before it was ready:\n" + "".join(lines))
        lines.append(line)
        if time.monotonic() - began > READY_TIMEOUT:
            raise AssertionError("the demo was not ready in time:\n" + "".join(lines))
    ready = next(line for line in lines if line.startswith("ready in"))
    page = next(line for line in lines if line.startswith("themes page"))
    token = page.split("token=")[1].strip()
    return Demo(folder, f"http://127.0.0.1:{port}", token, float(re.search(r"ready in ([\d.]+) s", ready).group(1)), lines, process)


def stop_demo(demo: Demo) -> None:
    demo.process.send_signal(signal.SIGINT)
    demo.process.wait(60)


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Demo]:
    folder = tmp_path_factory.mktemp("demo") / "lakegraph-demo"
    running = start_demo(folder, free_port())
    try:
        yield running
    finally:
        if running.process.poll() is None:
            stop_demo(running)


class Agent:
    """Calls tools the way an agent would, reading JSON answers; each answer's structuredContent is
    checked against the outputSchema its tool declares."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.calls: list[str] = []
        self.schemas: dict[str, dict] = {}

    async def __call__(self, tool: str, **arguments: object) -> dict:
        self.calls.append(tool)
        if tool not in self.schemas:
            self.schemas = {listed.name: listed.output_schema or {} for listed in (await self.client.list_tools()).tools}
        result = await self.client.call_tool(tool, {**arguments, "format": "json"})
        text = "".join(block.text for block in result.content if hasattr(block, "text"))
        assert not result.is_error, f"{tool}: {text}"
        jsonschema.validate(result.structured_content, self.schemas[tool], cls=jsonschema.Draft202012Validator)
        assert result.structured_content == json.loads(text)
        return json.loads(text)

    async def rows(self, tool: str, field: str, **arguments: object) -> tuple[dict, list]:
        """Every row of `field`, walking the cursor the answers give; and the first answer."""
        first = answer = await self(tool, **arguments)
        found = list(answer[field])
        while answer["page"]["next_cursor"]:
            answer = await self(tool, **arguments, cursor=answer["page"]["next_cursor"])
            found += answer[field]
        return first, found

    async def sql(self, query: str) -> list[dict]:
        answer, rows = await self.rows("run_sql", "rows", sql=query)
        return [dict(zip(answer["columns"], row, strict=True)) for row in rows]


def journey(demo: Demo, steps) -> dict:
    async def main() -> dict:
        headers = {"Authorization": f"Bearer {demo.token}"}
        async with httpx2.AsyncClient(headers=headers, timeout=60) as http, Client(streamable_http_client(f"{demo.base}/mcp", http_client=http)) as client:
            return await steps(Agent(client))

    return anyio.run(main)


REPAIR_OUTCOMES = """
SELECT w.fault_code, wp.part_no, COUNT(*) AS repairs,
       SUM(CASE WHEN EXISTS (
         SELECT 1 FROM service.work_orders c
         WHERE c.vin = w.vin AND c.fault_code = w.fault_code AND c.is_comeback
           AND c.opened_on > w.opened_on AND c.opened_on <= w.opened_on + INTERVAL 30 DAY) THEN 1 ELSE 0 END) AS came_back
FROM service.work_orders w JOIN service.work_order_parts wp ON wp.wo_id = w.wo_id
{where}
GROUP BY 1, 2 ORDER BY 1, 2
"""


def test_the_demo_prints_where_to_look(demo: Demo) -> None:
    text = "".join(demo.output)
    assert "dataset   made in" in text and f"MCP          {demo.base}/mcp" in text and "lakegraph --config" in text
    assert httpx2.get(f"{demo.base}/healthz").status_code == 200
    page = httpx2.get(f"{demo.base}/themes?token={demo.token}", follow_redirects=True)
    assert page.status_code == 200 and "<title>lakegraph themes</title>" in page.text


def test_technician_finds_the_revised_part(demo: Demo) -> None:
    planted = demo.manifest["revised_part"]

    async def steps(agent: Agent) -> dict:
        [case] = await agent.sql(f"SELECT vin FROM service.work_orders WHERE fault_code = '{planted['fault_code']}' ORDER BY wo_id LIMIT 1")
        hits = (await agent("search", query=f"{planted['fault_code']} misfire", expand=["cylinder 1 misfire", "recurring misfire"], k=10))["hits"]
        bulletin = next(hit["uri"].split("#")[0] for hit in hits if "/bulletins/" in hit["uri"])
        outline = await agent("outline", uri=bulletin, depth=3)
        linked = [row["uri"] for row in outline["rows"] if row["kind"] == "Link"]
        path = await agent("join_path", table_a="work_orders", table_b="parts")
        outcomes = await agent.sql(REPAIR_OUTCOMES.format(where=f"WHERE w.fault_code = '{planted['fault_code']}'"))
        best = min(outcomes, key=lambda row: row["came_back"] / row["repairs"])
        orders = await agent.sql(
            f"SELECT w.wo_id FROM service.work_orders w JOIN service.work_order_parts wp ON wp.wo_id = w.wo_id "
            f"WHERE w.fault_code = '{planted['fault_code']}' AND wp.part_no = '{best['part_no']}' ORDER BY w.wo_id LIMIT 5"
        )
        return {"vin": case["vin"], "bulletin": bulletin, "linked": linked, "path": path, "best": best, "orders": orders}

    found = journey(demo, steps)
    assert found["best"]["part_no"] == planted["new_part"]  # the planted revised part
    assert found["bulletin"] == "technical-library/bulletins/tsb-24-017"
    assert "technical-library/parts/ignition/ic-3051b" in found["linked"]  # outline follows the bulletin to the part
    assert "technical-library/procedures/ignition/proc-ign-01" in found["linked"]
    assert [hop["on"] for hop in found["path"]["hops"]] == ["work_orders.wo_id = work_order_parts.wo_id", "work_order_parts.part_no = parts.part_no"]
    assert len(found["orders"]) == 5 and found["vin"].startswith("VIN")


def test_estate_gaps_are_exactly_the_planted_ones(demo: Demo) -> None:
    manifest = demo.manifest

    async def steps(agent: Agent) -> dict:
        codes = [row["fault_code"] for row in await agent.sql("SELECT DISTINCT fault_code FROM service.work_orders ORDER BY 1")]
        _, missing = await agent.rows("coverage", "missing", terms=codes)
        documented = await agent.sql(
            "SELECT DISTINCT w.fault_code AS code, p.part_no FROM service.work_orders w JOIN service.procedures p ON p.procedure_id = w.procedure_id ORDER BY 1"
        )
        outcomes = await agent.sql(REPAIR_OUTCOMES.format(where=""))
        mismatched = []
        for row in documented:
            rates = {o["part_no"]: o["came_back"] / o["repairs"] for o in outcomes if o["fault_code"] == row["code"]}
            best = min(rates, key=rates.get)
            if best == row["part_no"]:
                continue
            # the field's fix differs from the procedure: is it documented together with the code anywhere?
            mentions = await agent("coverage", terms=[row["code"], best])
            found = {entry["term"]: entry["uris"] for entry in mentions["found"]}
            places = [{uri.split("#")[0] for uri in found.get(term, [])} for term in (row["code"], best)]
            if not places[0] & places[1]:
                mismatched.append(row["code"])
        return {"missing": missing, "mismatched": sorted(mismatched)}

    found = journey(demo, steps)
    assert sorted(found["missing"]) == manifest["undocumented_codes"]
    assert found["mismatched"] == sorted(item["fault_code"] for item in manifest["wrong_procedures"])


def test_coverage_by_theme_gives_each_themes_share_of_vehicles(demo: Demo) -> None:
    manifest = demo.manifest

    async def theme_members(agent: Agent, theme: str) -> list[str]:
        """A theme's members, walking the cursor the answer gives (a small page, to walk it)."""
        found, cursor = [], None
        while True:
            answer = await agent("themes", theme=theme, max_tokens=300, **({"cursor": cursor} if cursor else {}))
            found += [member["uri"] for member in answer["members"]]
            cursor = answer["page"]["next_cursor"]
            if cursor is None:
                assert len(found) == answer["page"]["total"] - 1  # the theme itself, then its members
                return found

    async def steps(agent: Agent) -> dict:
        themes = (await agent("themes"))["themes"]
        for theme in themes:
            theme["documents"] = await theme_members(agent, theme["id"])
        codes = [row["code"] for row in await agent.sql("SELECT code FROM service.fault_codes ORDER BY 1")]
        covered = {entry["term"]: entry["uris"] for entry in (await agent.rows("coverage", "found", terms=codes))[1]}
        theme_of = {uri: theme["id"] for theme in themes for uri in theme["documents"]}
        codes_by_theme: dict[str, set[str]] = defaultdict(set)
        for code, uris in covered.items():
            for uri in uris:
                if uri.split("#")[0] in theme_of:
                    codes_by_theme[theme_of[uri.split("#")[0]]].add(code)
        [total] = await agent.sql("SELECT COUNT(DISTINCT vin) AS n FROM service.work_orders")
        shares = {}
        for theme, theme_codes in codes_by_theme.items():
            listed = ", ".join(f"'{code}'" for code in sorted(theme_codes))
            [row] = await agent.sql(f"SELECT COUNT(DISTINCT vin) AS n FROM service.work_orders WHERE fault_code IN ({listed})")
            shares[theme] = row["n"] / total["n"]
        return {"themes": themes, "codes": codes_by_theme, "shares": shares}

    found = journey(demo, steps)
    members = {theme["id"]: set(theme["documents"]) for theme in found["themes"]}
    for planted in ("braking", "network-bcm"):
        truth = set(manifest["themes"][planted])
        best = max(members, key=lambda theme: len(members[theme] & truth))
        assert len(members[best] & truth) >= 0.8 * len(truth), (planted, best)
        assert 0 < found["shares"][best] < 1
    braking = max(members, key=lambda theme: len(members[theme] & set(manifest["themes"]["braking"])))
    assert {"C0035", "C0121"} <= found["codes"][braking]


def test_the_bridge_names_both_gaps_in_one_call(demo: Demo) -> None:
    """Field codes no document mentions, ranked by work orders; documented codes never in a work order."""
    manifest = demo.manifest

    async def steps(agent: Agent) -> dict:
        gaps = await agent("bridge", column="work_orders.fault_code")
        counts = {row["fault_code"]: row["n"] for row in await agent.sql("SELECT fault_code, COUNT(*) AS n FROM service.work_orders GROUP BY 1")}
        return {"gaps": gaps, "counts": counts, "calls": list(agent.calls)}

    found = journey(demo, steps)
    gaps, counts = found["gaps"], found["counts"]
    assert not gaps["page"]["truncated"] and found["calls"][0] == "bridge"
    ranked = sorted(manifest["undocumented_codes"], key=lambda code: (-counts[code], code))
    assert [(row["value"], row["rows"]) for row in gaps["unmentioned"]] == [(code, counts[code]) for code in ranked]
    assert [row["value"] for row in gaps["unseen"]] == manifest["unseen_codes"]
    assert all(row["columns"] == ["warehouse.service.fault_codes.code"] and row["mentions"] > 0 for row in gaps["unseen"])


def test_an_edit_naming_a_code_is_bridged_live(demo: Demo) -> None:
    """A bulletin that starts naming an undocumented code gains its MENTIONS in the transaction
    that makes the edit searchable — so within the edit latency, whatever it is; taking the line
    out again removes them. Twice: the first edit also warms the worker up."""
    headers = {"Authorization": f"Bearer {demo.token}"}
    bulletin = next((demo.folder / "library" / "bulletins").glob("*.md"))
    original = bulletin.read_text()

    def mentions(code: str) -> list[str]:
        answer = httpx2.get(f"{demo.base}/v1/bridge", params={"value": code}, headers=headers, timeout=30)
        assert answer.status_code == 200, answer.text
        return [row["uri"] for row in answer.json()["mentions"]]

    def searchable(token: str) -> bool:
        answer = httpx2.get(f"{demo.base}/v1/search", params={"query": token}, headers=headers, timeout=30)
        return answer.status_code == 200 and bool(answer.json()["hits"])

    def until(check, what: str) -> float:
        began = time.monotonic()
        while not check():
            assert time.monotonic() - began < 30, what
            time.sleep(0.02)
        return time.monotonic() - began

    for attempt, code in enumerate(demo.manifest["undocumented_codes"][:2]):
        token = f"fieldreport{attempt}x"
        assert mentions(code) == []
        try:
            bulletin.write_text(original + f"\n## Field reports\nWorkshops report {code} after a gateway update ({token}).\n")
            seconds = until(lambda token=token: searchable(token), f"the edit naming {code} was not searchable")
            assert len(mentions(code)) == 1  # written with the text: bridged as soon as it is searchable
        finally:
            bulletin.write_text(original)
        removed = until(lambda code=code: mentions(code) == [], f"{code}'s mention did not go with the line")
        print(f"\nedit {attempt + 1}: searchable and bridged in {seconds * 1000:.0f} ms; the line removed, unbridged in {removed * 1000:.0f} ms")


def test_an_analysts_own_words_find_the_tables(demo: Demo) -> None:
    """Questions as an analyst says them, not as the tables are named: each finds every table it
    needs in the first five (the default), says which columns matched, and which table came by a join."""

    async def steps(agent: Agent) -> dict:
        return {
            question: await agent("table_context", question=question)
            for question in ("how many work orders per vehicle model", "which parts came back most", "work orders per vehicle model")
        }

    found = journey(demo, steps)
    for question, needed in (
        ("how many work orders per vehicle model", {"work_orders", "vehicles"}),
        ("work orders per vehicle model", {"work_orders", "vehicles"}),
        ("which parts came back most", {"parts", "work_order_parts", "work_orders"}),
    ):
        tables = {table["name"]: table for table in found[question]["tables"]}
        assert needed <= set(tables), (question, list(tables))
    vehicles = {table["name"]: table for table in found["how many work orders per vehicle model"]["tables"]}["vehicles"]
    assert "column vehicles.model" in vehicles["matched"]
    came_back = found["which parts came back most"]["tables"]
    assert any(table["joined_by"] for table in came_back), came_back  # a table the best ones join, and over which key


# The ABS bulletin rewritten to point at the ignition documents: it should leave the ABS theme for the ignition one.
ABS_BULLETIN_TO_IGNITION = """# TSB abs service update

## Condition
Applies to fault codes C0110, C0121, C0265.

## Correction
- Follow [PROC-IGN-01](../procedures/ignition/proc-ign-01.md) using [IC-3051B](../parts/ignition/ic-3051b.md).
- Follow [PROC-IGN-02](../procedures/ignition/proc-ign-02.md) using [SP-112](../parts/ignition/sp-112.md).
- See the [Aster ignition manual](../manuals/ignition/aster.md) and the [Boreal ignition manual](../manuals/ignition/boreal.md).
"""
# The moment the page's timeline first names a move of the bulletin, by the page's clock (the machine's).
WATCH_MOVES = """
window.namedAt = null;
new MutationObserver(() => {
  const move = [...document.querySelectorAll('#timeline li.run .move')].find(el => el.textContent.startsWith('TSB abs service update:'));
  if (move && window.namedAt === null) window.namedAt = Date.now();
}).observe(document.getElementById('timeline'), {childList: true, subtree: true, characterData: true});
"""


def test_an_author_finds_a_bulletin_and_sees_the_edit_that_moved_it(demo: Demo) -> None:
    """On the demo's themes page, live: an author finds the ABS bulletin by title, sees its theme and
    its strongest links; rewrites it to point at the ignition documents; the worker's debounced
    run moves it, and the timeline names the move and the edit within a second of the run."""
    bulletin = demo.folder / "library" / "bulletins" / "tsb-abs-update.md"
    original = bulletin.read_text()
    headers = {"Authorization": f"Bearer {demo.token}"}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium(), args=CHROMIUM_FLAGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(f"{demo.base}/themes?token={demo.token}")
            expect(page.locator(".theme-card").first).to_be_visible(timeout=30_000)
            page.locator("#q").fill("abs service update")
            found = page.locator(".found", has=page.locator("h3", has_text="TSB abs service update"))
            expect(found.locator(".place")).to_contain_text("In T", timeout=10_000)
            before = found.locator(".place").inner_text().split()[1]  # its theme's id
            abs_theme = page.locator(f".theme-card[data-id='{before}'] h3").inner_text()
            assert "abs" in abs_theme.lower(), abs_theme
            expect(found.locator(".doc", has_text="PROC-ABS-01")).to_have_count(1)  # a strongest link out
            page.evaluate(WATCH_MOVES)
            try:
                bulletin.write_text(ABS_BULLETIN_TO_IGNITION)
                latest = page.locator("#timeline li.run").first
                expect(latest.locator(".move", has_text="TSB abs service update:")).to_have_count(1, timeout=90_000)
                move = latest.locator(".move", has_text="TSB abs service update:").inner_text()
                after = move.split("→ ")[1].split()[0]
                assert move.startswith(f"TSB abs service update: {before} ") and after != before, move
                assert "ignition" in page.locator(f".theme-card[data-id='{after}'] h3").inner_text().lower()
                expect(latest.locator(".edits")).to_contain_text("TSB abs service update")
                run = httpx2.get(f"{demo.base}/v1/themes", headers=headers, timeout=30).json()["run"]
                ended = datetime.fromisoformat(run["started"]).timestamp() + run["duration"]
                named = page.evaluate("window.namedAt") / 1000 - ended
                assert named < 1.0, f"the timeline named the move {named:.2f} s after the run ended"
                expect(found.locator(".place")).to_contain_text(f"In {after} ")  # the search follows
            finally:
                bulletin.write_text(original)
        finally:
            browser.close()


def test_a_second_start_reuses_the_dataset_and_is_faster(demo: Demo) -> None:
    first = demo.ready_seconds
    stop_demo(demo)
    again = start_demo(demo.folder, free_port())
    try:
        assert any(line.startswith("dataset   reused") for line in again.output)
        print(f"\ndemo ready: first start {first:.1f} s, second start {again.ready_seconds:.1f} s")
        assert again.ready_seconds < first
    finally:
        stop_demo(again)
