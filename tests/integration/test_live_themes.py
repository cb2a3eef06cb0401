"""Themes kept live by the real worker: link edits mark them dirty, a run follows a quiet window or
a maximum wait under a steady stream of edits, text-only edits cost no run, runs never overlap.
Also the debounce rules themselves against a real Redis, with a fake clock."""

from __future__ import annotations

import itertools
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest
from neo4j import Driver

from tests.conftest import Neo4jService
from tests.helpers import LAKEGRAPH
from tests.integration.test_live_documents import Live, live_stack
from tests.integration.test_themes import brakes_and_network
from worker.runtime import redis_server
from worker.runtime.processes import stop_pid, wait_until
from worker.themes.schedule import Decision, ThemeScheduler

pytestmark = pytest.mark.timeout(300)
TOKEN = "refresh-test-token"
DOCUMENTS = "MATCH (d:Document) WHERE d.uri STARTS WITH 'lib/' RETURN count(d) AS n"
RUNS = "MATCH (r:ThemeRun) RETURN toString(r.started) AS started, r.duration AS duration, r.themes AS themes ORDER BY r.started"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_debounce_rules(redis_service: redis_server.LocalRedis) -> None:
    client = redis_server.client(redis_service.url, 5)
    client.flushall()
    clock = Clock()
    scheduler = ThemeScheduler(client, quiet=5, max_wait=60, clock=clock)
    assert scheduler.decide().action == "idle"
    assert scheduler.mark_dirty() is True  # the first change schedules the one check
    clock.now += 2
    assert scheduler.mark_dirty() is False  # later ones do not
    assert scheduler.decide() == Decision("wait", 5)
    clock.now += 5
    assert scheduler.decide().action == "run"
    # a steady stream: every change within the quiet window, until the maximum wait
    for _ in range(30):
        clock.now += 2
        scheduler.mark_dirty()
        decision = scheduler.decide()
        if decision.action == "run":
            break
    assert decision.action == "run" and clock.now - 1000 >= 60
    assert scheduler.begin_run() and not scheduler.begin_run()  # never two runs at once
    assert scheduler.decide().action == "idle"  # the run consumed the marks
    scheduler.mark_dirty()  # an edit during the run
    scheduler.end_run(failed=False)
    assert scheduler.release_check() is True  # dirty again: another check is due
    scheduler.begin_run()
    scheduler.end_run(failed=True)  # a failed run leaves the themes dirty
    assert scheduler.dirty()
    # and backs off: the quiet window doubled for each failure in a row, edits or not
    assert scheduler.decide() == Decision("wait", 10)
    clock.now += 10
    assert scheduler.decide().action == "run" and scheduler.begin_run()
    scheduler.end_run(failed=True)
    scheduler.mark_dirty()
    assert scheduler.decide() == Decision("wait", 20)
    clock.now += 20
    assert scheduler.begin_run()
    scheduler.end_run(failed=False)  # a run that succeeds ends the backoff
    scheduler.mark_dirty()
    assert scheduler.decide() == Decision("wait", 5)
    scheduler.request_run()  # asked for (the served refresh): no quiet window to wait out
    assert scheduler.decide().action == "run"
    scheduler.begin_run()
    scheduler.end_run(failed=True)
    scheduler.request_run()  # but a failure's backoff still holds
    assert scheduler.decide() == Decision("wait", 10)


@pytest.fixture
def live(neo4j_service: Neo4jService, driver: Driver, redis_service: redis_server.LocalRedis, tmp_path: Path) -> Iterator[Live]:
    quick = {"LAKEGRAPH_THEMES__QUIET_SECONDS": "1.5", "LAKEGRAPH_THEMES__MAX_WAIT_SECONDS": "5"}
    with live_stack(neo4j_service, driver, redis_service, tmp_path, **quick) as stack:
        yield stack


@pytest.fixture
def patient(neo4j_service: Neo4jService, driver: Driver, redis_service: redis_server.LocalRedis, tmp_path: Path) -> Iterator[Live]:
    """A live stack whose themes would wait ten minutes after the last link edit."""
    slow = {"LAKEGRAPH_THEMES__QUIET_SECONDS": "600", "LAKEGRAPH_THEMES__MAX_WAIT_SECONDS": "1200", "LAKEGRAPH_SERVE__TOKEN": TOKEN}
    with live_stack(neo4j_service, driver, redis_service, tmp_path, **slow) as stack:
        yield stack


def test_a_served_refresh_runs_themes_now_through_the_worker(patient: Live, driver: Driver) -> None:
    """`POST /v1/themes/refresh` on a running server: the worker runs the themes at once, not
    after the quiet window; asked again on an unchanged link graph, it changes nothing."""
    brakes_and_network(patient.root)
    wait_until(lambda: driver.execute_query(DOCUMENTS).records[0]["n"] == 9, 30, "the documents loaded")
    patient.quiesce()
    assert runs(driver) == []  # the quiet window is ten minutes
    server = subprocess.Popen([LAKEGRAPH, "serve", "--http", "--port", "0"], env=patient.env, stdout=subprocess.PIPE, text=True)
    try:
        base = (server.stdout.readline() if server.stdout else "").split()[2].removesuffix("/v1/...")
        asked = httpx2.post(f"{base}/v1/themes/refresh", headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30)
        assert asked.status_code == 202, asked.text
        assert asked.json()["watch"] == "lakegraph://themes" and asked.json()["task_id"]
        wait_until(lambda: len(runs(driver)) == 1, 60, "the requested themes run")
        assert runs(driver)[0]["themes"] == 2
        patient.quiesce()
        again = httpx2.post(f"{base}/v1/themes/refresh", headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30)
        assert again.status_code == 202
        patient.quiesce()
        assert len(runs(driver)) == 1  # nothing changed since: no new run
        assert httpx2.post(f"{base}/v1/themes/refresh", timeout=30).status_code == 401
    finally:
        stop_pid(server.pid, timeout=10)
        server.wait(10)


def runs(driver: Driver) -> list[dict]:
    return [dict(row) for row in driver.execute_query(RUNS).records]


def test_themes_follow_link_edits_debounced(live: Live, driver: Driver) -> None:
    brakes_and_network(live.root)
    wait_until(lambda: len(runs(driver)) >= 1, 30, "a first themes run")
    time.sleep(3)  # the burst of file events settles into that one run (or one more)
    settled = runs(driver)
    assert settled[-1]["themes"] == 2 and len(settled) <= 2

    # A burst of 100 link edits (well inside the maximum wait) becomes one run, or two at most.
    burst_began = time.time()
    for index in range(100):
        (live.root / f"network/burst-{index}.md").write_text(f"# Burst {index}\nSee [bcm](bcm.md) and [can](can.md).\n")
    assert time.time() - burst_began < 5
    wait_until(lambda: _grouped(driver, "lib/network/burst-") == 100, 60, "the burst grouped")
    live.quiesce()
    burst_runs = len(runs(driver)) - len(settled)
    assert 1 <= burst_runs <= 2, burst_runs
    settled = runs(driver)

    # A steady stream of link edits, one every 0.5 s for 8 s: the maximum wait (5 s) forces a run
    # before the stream ends, although the quiet window (1.5 s) never passes.
    stream_began = time.time()
    for index in range(16):
        (live.root / f"brakes/extra-{index}.md").write_text(f"# Extra {index}\nSee [pads](pads.md) and [abs](abs.md).\n")
        time.sleep(0.5)
    stream_ended = time.time()
    during = [run for run in runs(driver)[len(settled) :] if _epoch(run["started"]) < stream_ended]
    assert during, "no run during a steady stream of edits: the maximum wait did not apply"
    wait_until(lambda: _grouped(driver, "lib/brakes/extra-") == 16, 30, "the extras grouped after the stream")

    # Text-only edits: the edge set is unchanged, so no run is recorded.
    live.quiesce()
    time.sleep(3)
    before = len(runs(driver))
    (live.root / "brakes/pads.md").write_text("# Pads\nCeramic pads. See [rotors](rotors.md), [abs](abs.md) and [fluid](fluid.md).\n")
    time.sleep(4)
    live.quiesce()
    assert len(runs(driver)) == before

    # Runs never overlapped.
    spans = sorted((_epoch(run["started"]), _epoch(run["started"]) + run["duration"]) for run in runs(driver))
    assert all(end <= next_start + 0.05 for (_, end), (next_start, _) in itertools.pairwise(spans))
    assert stream_began < stream_ended


def _epoch(iso: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(iso).timestamp()


def _grouped(driver: Driver, prefix: str) -> int:
    query = "MATCH (d:Document)-[:IN_THEME]->(:Theme {level: 0}) WHERE d.uri STARTS WITH $prefix RETURN count(d) AS n"
    return driver.execute_query(query, prefix=prefix).records[0]["n"]
