"""Fault injection against the real services, with a real worker and watcher: the worker
SIGKILLed in the middle of a burst, Redis and Neo4j restarted under a live stream of file events.
Nothing may be lost once they are back: the graph ends equal to the files by a full comparison."""

from __future__ import annotations

import json
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from neo4j import Driver, GraphDatabase

from tests.conftest import Neo4jService, runtime_settings
from tests.graph_dump import differences_from_files
from tests.integration.test_live_documents import (
    Live,
    live_stack,
    write_linked_document,
)
from tests.integration.test_neo4j_runtime import runtime_env
from tests.integration.test_up import start_up
from worker.celery_app import create_app
from worker.errors import LakegraphError
from worker.runtime import neo4j_server, redis_server
from worker.runtime.processes import free_port, wait_until
from worker.settings import load_settings

pytestmark = [pytest.mark.timeout(420), pytest.mark.reliability]
BURST = 2000
DOCUMENTS = "MATCH (d:Document) RETURN count(d) AS n"


def settle(live: Live, driver: Driver, expected: int, timeout: float) -> int:
    """Wait for the stream to be applied; if events were lost in the outage, the periodic
    reconcile's task repairs them (sent here rather than waiting out its interval). Returns the
    documents present before any reconcile."""
    try:
        wait_until(lambda: driver.execute_query(DOCUMENTS).records[0]["n"] == expected, timeout, f"{expected} documents")
    except LakegraphError:
        pass
    live.quiesce()
    before = driver.execute_query(DOCUMENTS).records[0]["n"]
    create_app(live.settings()).send_task("lakegraph.reconcile_documents").get(timeout=120)
    live.quiesce()
    return before


def test_a_worker_killed_mid_burst_loses_nothing(neo4j_service: Neo4jService, driver: Driver, redis_service: redis_server.LocalRedis, tmp_path: Path) -> None:
    """SIGKILL to the worker and its pool (a crash, not a shutdown) while 2,000 file events stream
    in; tasks it had taken are redelivered (acks late, reject on worker lost), the rest wait in the
    queue, and the reconcile covers anything else."""
    with live_stack(neo4j_service, driver, redis_service, tmp_path) as live:
        began = time.monotonic()
        for index in range(BURST):
            write_linked_document(live.root, index)
            if index == BURST * 2 // 5:
                live.kill_worker()
        live.start_worker()
        before_reconcile = settle(live, driver, BURST, 180)
        caught_up = time.monotonic() - began
        live.stop(live.watcher)
        documents, differences = differences_from_files(driver, live.settings())
    print(f"\n{BURST} file events, worker SIGKILLed after {BURST * 2 // 5 + 1}: {before_reconcile} documents before the "
          f"reconcile ({caught_up:.1f} s from the first event), {documents} after, {differences} differences")
    assert (documents, differences) == (BURST, 0)


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
            try:
                wait_until(lambda: count() == 400, 90, "400 documents")
            except LakegraphError:
                pass
            through_retries = count()
            app = create_app(settings.with_section("redis", url=redis_server.broker_url(settings)))
            wait_until(lambda: bool(app.control.ping(timeout=1)), 60, "a worker answering again")
            app.send_task("lakegraph.reconcile_documents").get(timeout=180)
            documents, differences = differences_from_files(up_driver, settings)
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=60)
    print(f"\nRedis restarted under `lakegraph up` during 400 events: {through_retries} documents before the reconcile, "
          f"{documents} after, {differences} differences")
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
    print(f"\nNeo4j down for events 101-200 of 300: {before_reconcile} documents through retries alone "
          f"({caught_up:.1f} s after the last event), {documents} after the reconcile, {differences} differences")
    assert (documents, differences) == (300, 0)
