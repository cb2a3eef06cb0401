"""Subscriptions under faults, against real `lakegraph serve` replicas and a real Redis of their own:
Redis restarting while subscribers are connected (a change made during the outage is notified
after it), a replica killed mid-stream (its client re-listens on another and hears the next
change), and a client that disconnects mid-stream (its watch is dropped; others are unaffected).
Also: the themes resources after a themes run, and a table's resource after a learned join."""

from __future__ import annotations

import json
import re
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from mcp.client import Client
from neo4j import Driver

from shapes.serving.resources import outline_uri, table_uri
from tests import lakehouse
from tests.conftest import runtime_settings
from tests.integration.test_mcp_resources import Replica, read_state, running_replicas, session, start_replica
from worker.documents.sync import DocumentSync
from worker.runtime import redis_server
from worker.settings import Settings
from worker.shared.changes import announcer
from worker.themes.runner import ThemeRunner
from worker.warehouse.audit_log import QueryEvent
from worker.warehouse.query_graph import QueryGraph

pytestmark = pytest.mark.timeout(600)
NETWORK = "manuals/network.md"
NETWORK_URI = outline_uri("shop/manuals/network")


@pytest.fixture(scope="module")
def own_redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Settings]:
    """A Redis these tests may stop and start (the session's is shared with other modules)."""
    settings = runtime_settings(tmp_path_factory.mktemp("own-redis"))
    redis_server.start(settings)
    try:
        yield settings
    finally:
        redis_server.stop(settings)


def redis_url(settings: Settings) -> str:
    running = redis_server.status(settings)
    assert running is not None
    return running.url


@pytest.fixture(scope="module")
def pair(env: dict[str, str], own_redis: Settings, tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[Replica]]:
    with running_replicas(env, redis_url(own_redis), [tmp_path_factory.mktemp(f"faulty-{n}") for n in range(2)], api=True) as started:
        yield started


@pytest.fixture(scope="module")
def writer(house: lakehouse.Lakehouse, driver: Driver, own_redis: Settings) -> DocumentSync:
    return DocumentSync(house.settings.with_section("redis", url=redis_url(own_redis)), driver, "neo4j")


def add_section(house: lakehouse.Lakehouse, writer: DocumentSync, relpath: str, heading: str) -> None:
    path = house.library / relpath
    path.write_text(path.read_text() + f"## {heading}\nWritten during a fault test.\n")
    writer.sync_path("shop", relpath)


async def until_heading(client: Client, uri: str, heading: str, stream: object) -> None:
    async for event in stream:  # type: ignore[attr-defined]
        assert event.uri == uri
        if heading in await read_state(client, uri):
            return


async def watched(replica: Replica) -> float:
    async with replica.http() as http:
        text = (await http.get(f"{replica.base}/metrics")).text
    found = re.search(r"^lakegraph_watched_resources (\S+)$", text, re.M)
    assert found, text[:500]
    return float(found.group(1))


def test_a_change_made_while_redis_restarts_is_notified_after_it(
    pair: list[Replica], house: lakehouse.Lakehouse, writer: DocumentSync, own_redis: Settings
) -> None:
    during, after = f"During outage {time.time_ns()}", f"After outage {time.time_ns()}"

    async def run() -> None:
        async with pair[0].http() as http, session(pair[0], http) as client, client.listen(resource_subscriptions=[NETWORK_URI]) as stream:
            await anyio.sleep(0.5)
            redis_server.stop(own_redis)
            await anyio.sleep(1.0)  # the replica has lost the stream
            await anyio.to_thread.run_sync(add_section, house, writer, NETWORK, during)  # announcing fails: held
            redis_server.start(own_redis)
            with anyio.fail_after(30):
                await until_heading(client, NETWORK_URI, during, stream)
            await anyio.to_thread.run_sync(add_section, house, writer, NETWORK, after)  # and the stream works again
            with anyio.fail_after(15):
                await until_heading(client, NETWORK_URI, after, stream)

    anyio.run(run)


def test_a_client_of_a_killed_replica_listens_on_another_and_hears_the_next_change(
    pair: list[Replica], env: dict[str, str], house: lakehouse.Lakehouse, writer: DocumentSync, own_redis: Settings, tmp_path: Path
) -> None:
    doomed = start_replica({**env, "LAKEGRAPH_REDIS__URL": redis_url(own_redis)}, tmp_path / "doomed")
    heading = f"After a replica died {time.time_ns()}"

    async def run() -> None:
        try:
            async with doomed.http() as http, session(doomed, http) as client, client.listen(resource_subscriptions=[NETWORK_URI]) as stream:
                doomed.process.send_signal(signal.SIGKILL)
                with anyio.fail_after(30):
                    async for _ in stream:
                        pass
        except Exception as lost:  # the SDK reports the dropped stream (SubscriptionLost) or the broken connection
            assert not isinstance(lost, AssertionError | TimeoutError), lost
        async with pair[1].http() as http, session(pair[1], http) as client, client.listen(resource_subscriptions=[NETWORK_URI]) as stream:
            await anyio.sleep(0.5)
            await anyio.to_thread.run_sync(add_section, house, writer, NETWORK, heading)
            with anyio.fail_after(15):
                await until_heading(client, NETWORK_URI, heading, stream)

    try:
        anyio.run(run)
    finally:
        doomed.process.wait(10)


def test_a_client_that_disconnects_mid_stream_is_dropped_and_others_still_hear(pair: list[Replica], house: lakehouse.Lakehouse, writer: DocumentSync) -> None:
    heading = f"After a client left {time.time_ns()}"
    tsb = outline_uri("shop/bulletins/tsb-7")

    async def run() -> None:
        async with pair[0].http() as http, session(pair[0], http) as staying, staying.listen(resource_subscriptions=[NETWORK_URI]) as stream:
            async with pair[0].http() as other, session(pair[0], other) as leaving, leaving.listen(resource_subscriptions=[tsb]):
                assert await watched(pair[0]) == 2
            with anyio.fail_after(15):
                while await watched(pair[0]) != 1:
                    await anyio.sleep(0.2)
            await anyio.to_thread.run_sync(add_section, house, writer, NETWORK, heading)
            with anyio.fail_after(15):
                await until_heading(staying, NETWORK_URI, heading, stream)

    anyio.run(run)


def test_a_themes_run_notifies_the_themes_resources(pair: list[Replica], house: lakehouse.Lakehouse, driver: Driver, own_redis: Settings) -> None:
    watched_uris = ["lakegraph://themes", "lakegraph://theme-changes"]

    async def run() -> set[str]:
        heard: set[str] = set()
        async with pair[1].http() as http, session(pair[1], http) as client, client.listen(resource_subscriptions=watched_uris) as stream:
            await anyio.sleep(0.5)
            settings = house.settings.with_section("redis", url=redis_url(own_redis))
            await anyio.to_thread.run_sync(lambda: ThemeRunner(settings, driver, "neo4j").run(force=True))
            with anyio.fail_after(15):
                async for event in stream:
                    heard.add(event.uri)
                    if heard == set(watched_uris):
                        return heard
        return heard

    assert anyio.run(run) == set(watched_uris)


def test_a_learned_join_notifies_the_tables_it_joins(pair: list[Replica], driver: Driver, own_redis: Settings) -> None:
    uri = table_uri("warehouse.service.work_orders")

    async def run() -> None:
        async with pair[0].http() as http, session(pair[0], http) as client, client.listen(resource_subscriptions=[uri]) as stream:
            before = json.loads(await read_state(client, uri))["tables"][0]["learned_joins"]
            await anyio.sleep(0.5)
            queries = QueryGraph(driver, "neo4j", "duckdb", announce=announcer(own_redis))
            sql = "SELECT * FROM service.work_orders w JOIN service.vehicles v ON v.vin = w.vin"  # one more run: its executions move
            await anyio.to_thread.run_sync(
                lambda: queries.absorb([QueryEvent(f"job-{time.time_ns()}", sql, "ana@example.com", "2026-12-01T10:00:00Z", False, ())])
            )
            with anyio.fail_after(15):
                async for event in stream:
                    assert event.uri == uri
                    after = json.loads(await read_state(client, uri))["tables"][0]["learned_joins"]
                    assert after != before
                    return

    anyio.run(run)
