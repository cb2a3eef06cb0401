"""Fault injection against the real services, with a real worker and watcher: the worker
SIGKILLed in the middle of a burst, Redis and Neo4j restarted under a live stream of file events.
Nothing may be lost once they are back: the graph ends equal to the files by a full comparison."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx2
import pytest
import redis
from neo4j import Driver, GraphDatabase

from tests.conftest import Neo4jService, runtime_settings
from tests.graph_dump import differences_from_files
from tests.helpers import LAKEGRAPH, run_cli
from tests.integration.test_live_documents import (
    Live,
    live_stack,
    write_linked_document,
)
from tests.integration.test_neo4j_runtime import runtime_env
from tests.integration.test_up import start_up
from worker import problems
from worker import task_names as names
from worker.celery_app import create_app
from worker.runtime import neo4j_server, redis_server
from worker.runtime.processes import free_port, wait_until
from worker.settings import load_settings

pytestmark = [pytest.mark.timeout(420), pytest.mark.reliability]
STILL = 15.0  # seconds without a new document after which a stream counts as applied (retries back off up to 60 s)
BURST, FULL_BURST = 600, 2000  # file events in the worker-kill burst: the short version, and under --full
DOCUMENTS = "MATCH (d:Document) RETURN count(d) AS n"


def applied(count: Callable[[], int], expected: int, timeout: float) -> None:
    """Wait until `count` reaches `expected`, or stops moving for STILL seconds: events an outage
    lost never arrive, and waiting out the whole timeout for them only slows the test down (the
    reconcile that follows repairs them)."""
    last, moved, deadline = -1, time.monotonic(), time.monotonic() + timeout
    while (now := time.monotonic()) < deadline:
        current = count()
        if current == expected or now - moved > STILL:
            return
        if current != last:
            last, moved = current, now
        time.sleep(0.5)


def settle(live: Live, driver: Driver, expected: int, timeout: float) -> int:
    """Wait for the stream to be applied; if events were lost in the outage, the periodic
    reconcile's task repairs them (sent here rather than waiting out its interval). Returns the
    documents present before any reconcile."""
    applied(lambda: driver.execute_query(DOCUMENTS).records[0]["n"], expected, timeout)
    live.quiesce()
    before = driver.execute_query(DOCUMENTS).records[0]["n"]
    create_app(live.settings()).send_task(names.RECONCILE_DOCUMENTS).get(timeout=120)
    live.quiesce()
    return before


@pytest.mark.slow
def test_a_worker_killed_mid_burst_loses_nothing(
    neo4j_service: Neo4jService, driver: Driver, redis_service: redis_server.LocalRedis, tmp_path: Path, full: bool
) -> None:
    """SIGKILL to the worker and its pool (a crash, not a shutdown) while 600 file events (2,000
    under --full) stream in; tasks it had taken are redelivered (acks late, reject on worker lost),
    the rest wait in the queue, and the reconcile covers anything else."""
    burst = FULL_BURST if full else BURST
    with live_stack(neo4j_service, driver, redis_service, tmp_path) as live:
        began = time.monotonic()
        for index in range(burst):
            write_linked_document(live.root, index)
            if index == burst * 2 // 5:
                live.kill_worker()
        live.start_worker()
        before_reconcile = settle(live, driver, burst, 180)
        caught_up = time.monotonic() - began
        live.stop(live.watcher)
        documents, differences = differences_from_files(driver, live.settings())
    print(
        f"\n{burst} file events, worker SIGKILLed after {burst * 2 // 5 + 1}: {before_reconcile} documents before the "
        f"reconcile ({caught_up:.1f} s from the first event), {documents} after, {differences} differences"
    )
    assert (documents, differences) == (burst, 0)


def test_redis_restarted_under_lakegraph_up(tmp_path: Path) -> None:
    """The whole product: `lakegraph up` with its embedded Redis, restarted in the middle of a
    stream of 400 file events. A worker that loses its broker with tasks in flight may exit (a
    Celery/kombu fault on unacked messages); the supervisor restarts it, and what the outage
    dropped the reconcile repairs."""
    library = tmp_path / "lib"
    library.mkdir()
    libraries = [{"name": "lib", "root": str(library)}]
    env = runtime_env(tmp_path / "state", LAKEGRAPH_DOCUMENTS__LIBRARIES=json.dumps(libraries))
    settings = load_settings(state_dir=str(tmp_path / "state"), documents={"libraries": libraries})
    process, _ = start_up(env)
    try:
        running = neo4j_server.status(settings)
        assert running is not None
        settings = settings.with_section("neo4j", uri=running.uri, password=running.password)
        with GraphDatabase.driver(running.uri, auth=(neo4j_server.LOCAL_USER, running.password)) as up_driver:
            for index in range(400):
                write_linked_document(library, index)
                if index == 150:
                    redis_server.stop(settings)
                if index == 250:
                    redis_server.start(settings)
            count = lambda: up_driver.execute_query(DOCUMENTS).records[0]["n"]
            applied(count, 400, 90)
            through_retries = count()
            app = create_app(settings.with_section("redis", url=redis_server.broker_url(settings)))
            wait_until(lambda: bool(app.control.ping(timeout=1)), 60, "a worker answering again")
            app.send_task(names.RECONCILE_DOCUMENTS).get(timeout=180)
            documents, differences = differences_from_files(up_driver, settings)
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=60)
    print(
        f"\nRedis restarted under `lakegraph up` during 400 events: {through_retries} documents before the reconcile, "
        f"{documents} after, {differences} differences"
    )
    assert (documents, differences) == (400, 0)


@pytest.fixture
def own_neo4j(tmp_path: Path) -> Iterator[tuple[object, Neo4jService, Driver]]:
    """A Neo4j of this test's own on a fixed port, so a restart keeps its address."""
    settings = runtime_settings(tmp_path / "neo4j-state", neo4j={"bolt_port": free_port()})
    running = neo4j_server.start(settings)
    service = Neo4jService(running.uri, running.password, settings.with_section("neo4j", uri=running.uri, password=running.password))
    with GraphDatabase.driver(running.uri, auth=(neo4j_server.LOCAL_USER, running.password)) as own_driver:
        try:
            yield settings, service, own_driver
        finally:
            neo4j_server.stop(settings)


def test_neo4j_restarted_while_writes_are_in_flight(own_neo4j: tuple, redis_service: redis_server.LocalRedis, tmp_path: Path) -> None:
    settings, service, own_driver = own_neo4j
    with live_stack(service, own_driver, redis_service, tmp_path) as live:
        for index in range(300):
            write_linked_document(live.root, index)
            if index == 100:
                neo4j_server.stop(settings)  # writes in flight fail; the tasks retry with backoff
            if index == 200:
                neo4j_server.start(settings)
        began = time.monotonic()
        before_reconcile = settle(live, own_driver, 300, 180)
        caught_up = time.monotonic() - began
        live.stop(live.watcher)
        documents, differences = differences_from_files(own_driver, live.settings())
    print(
        f"\nNeo4j down for events 101-200 of 300: {before_reconcile} documents through retries alone "
        f"({caught_up:.1f} s after the last event), {documents} after the reconcile, {differences} differences"
    )
    assert (documents, differences) == (300, 0)


RECONCILE_INTERVAL = 20
URIS = "MATCH (d:Document) RETURN d.uri AS uri"


def first_reconcile_since(broker: redis.Redis, since: float) -> dict:
    """The report of the first reconcile begun after `since` (epoch s), from Celery's result backend."""
    reports = []
    for key in broker.scan_iter("celery-task-meta-*"):
        result = json.loads(broker.get(key)).get("result")
        if isinstance(result, dict) and result.get("started_at", 0) >= since:
            reports.append(result)
    return min(reports, key=lambda report: report["started_at"])


def test_events_dropped_on_the_way_are_repaired_within_one_reconcile_interval(
    neo4j_service: Neo4jService, driver: Driver, redis_service: redis_server.LocalRedis, tmp_path: Path
) -> None:
    """The watcher's task messages for 200 changes (100 new files, 50 edits, 50 deletions) are
    deleted from the broker before any worker sees them; nothing but beat's periodic reconcile
    knows. The graph must equal the files within one reconcile interval of the loss."""
    interval = str(RECONCILE_INTERVAL)
    with live_stack(neo4j_service, driver, redis_service, tmp_path, LAKEGRAPH_DOCUMENTS__RECONCILE_INTERVAL=interval) as live:
        beat = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "worker.celery_app", "beat", "--loglevel", "warning", "--schedule", str(tmp_path / "beat-schedule")],
            env=live.env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            for index in range(200):
                write_linked_document(live.root, index)
            wait_until(lambda: driver.execute_query(DOCUMENTS).records[0]["n"] == 200, 60, "200 documents")
            live.quiesce()
            live.kill_worker()
            for index in range(200, 300):
                write_linked_document(live.root, index)
            for index in range(50):
                folder = live.root / f"batch-{index % 10}"
                (folder / f"doc-{index}.md").write_text(f"# Doc {index}\nEdited while its event was lost: lostedit{index}.\n")
                (folder / f"doc-{index + 50}.md").unlink()
            broker = redis_server.client(redis_service.url, 5)
            wait_until(lambda: broker.llen("celery") >= 200, 30, "the watcher's 200 messages in the queue")
            dropped = broker.llen("celery")
            broker.delete("celery", "unacked", "unacked_index")  # lost: no worker will ever see them
            lost_at, lost_wall = time.monotonic(), time.time()
            live.start_worker()
            expected = {f"lib/batch-{index % 10}/doc-{index}" for index in range(300) if not 50 <= index < 100}
            current = lambda: {row["uri"] for row in driver.execute_query(URIS).records}
            wait_until(lambda: current() == expected and len(live.search("lostedit7")) == 1, RECONCILE_INTERVAL + 30, "the reconcile's repair")
            repaired = time.monotonic() - lost_at
            live.quiesce()
            repair = first_reconcile_since(broker, lost_wall)
        finally:
            beat.terminate()
            beat.wait(timeout=20)
        live.stop(live.watcher)
        documents, differences = differences_from_files(driver, live.settings())
    began = repair["started_at"] - lost_wall
    print(
        f"\n{dropped} task messages dropped from the broker: beat's reconcile began {began:.1f} s after the loss "
        f"(interval {RECONCILE_INTERVAL} s), repaired {sum(repair['outcomes'].values())} files in {repair['seconds']:.1f} s; "
        f"graph equal to the files {repaired:.1f} s after the loss; {documents} documents, {differences} differences"
    )
    assert began <= RECONCILE_INTERVAL
    assert repair["outcomes"] == {"written": 150, "deleted": 50}  # the first reconcile after the loss repaired all of it
    assert (documents, differences) == (250, 0)


def metric(base: str, token: str, line_start: str) -> float | None:
    """One sample of /metrics, or None when the series is absent."""
    text = httpx2.get(f"{base}/metrics", headers={"Authorization": f"Bearer {token}"}, timeout=30).text
    found = [line.rsplit(" ", 1)[1] for line in text.splitlines() if line.startswith(line_start + " ")]
    return float(found[0]) if found else None


def test_work_failing_while_neo4j_is_down_is_held_counted_and_moved_to_the_graph(
    own_neo4j: tuple, redis_service: redis_server.LocalRedis, tmp_path: Path
) -> None:
    """A task that fails for good while the graph is down cannot park its problem in the graph: it
    is held in Redis, counted by /metrics and listed by `lakegraph errors` meanwhile, and moved
    into the graph by the periodic task once Neo4j is back."""
    settings, service, own_driver = own_neo4j
    with live_stack(service, own_driver, redis_service, tmp_path) as live:
        serve = subprocess.Popen(
            [LAKEGRAPH, "serve", "--mcp", "http", "--http", "--port", "0"], env=live.env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
        )
        try:
            base = serve.stdout.readline().split()[1].removesuffix("/mcp")
            token = (Path(live.env["LAKEGRAPH_STATE_DIR"]) / "serve" / "token").read_text().strip()
            app = create_app(live.settings())
            neo4j_server.stop(settings)
            failing = app.send_task(names.SYNC_DOCUMENT, args=["lib", "../outside.md"])  # fails for good, at once
            failing.get(timeout=120, propagate=False)
            broker = redis_server.client(redis_service.url, 5)
            wait_until(lambda: broker.hlen(problems.HELD) == 1, 60, "the failure held in Redis")
            held_while_down = metric(base, token, "lakegraph_problems_held")
            listed = run_cli("errors", env=live.env)  # the graph is down: held problems still listed
            neo4j_server.start(settings)
            moved = app.send_task(names.SETTLE_HELD_PROBLEMS).get(timeout=120)  # what beat sends every minute
            [problem] = problems.listing(own_driver, "neo4j")
            after = (metric(base, token, "lakegraph_problems_held"), metric(base, token, 'lakegraph_problems{kind="failed"}'))
        finally:
            serve.terminate()
            serve.wait(timeout=20)
    print(
        f"\nfailure while Neo4j was down: held in Redis, /metrics held={held_while_down:.0f}; moved {moved} to the graph "
        f"once it was back; /metrics after: held={after[0]:.0f}, failed={after[1]:.0f}"
    )
    assert held_while_down == 1 and "(held)" in listed.stdout and "OutsideFolder" in listed.stdout
    assert "1 recorded problem(s), 1 held" in listed.stdout and listed.returncode != 0  # listed, then the graph error
    assert moved == 1 and problem.kind == "failed" and problem.args == ["lib", "../outside.md"]
    assert after == (0, 1) and broker.hlen(problems.HELD) == 0
