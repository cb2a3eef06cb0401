"""Typed answers, resources and subscriptions, through the official MCP SDK client against two
`lakegraph serve` replicas that share a real Redis: every tool's structuredContent validates
against its outputSchema, answers link to resources that read back, an unknown subscription is
refused by name, and an edit written by a process that never talked to either replica reaches
the subscribers of both, on the 2026-07-28 listen stream and on a 2025 session alike."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2
import jsonschema
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import ResourceUpdated
from mcp_types import ResourceLink, ResourceUpdatedNotification
from neo4j import Driver

from shapes.serving.resources import RESOURCES, outline_uri, table_uri
from tests import lakehouse
from tests.helpers import LAKEGRAPH
from tests.integration.test_shape_parity import SAMPLES
from worker.documents.sync import DocumentSync
from worker.runtime import redis_server
from worker.runtime.processes import stop_pid

# The 2025 clients' resources/subscribe is what these tests exercise on purpose.
pytestmark = [pytest.mark.timeout(600), pytest.mark.filterwarnings("ignore:resources/subscribe is removed")]
TOKEN = "resources-test-token"
IGNITION = "manuals/ignition.md"
IGNITION_URI = outline_uri("shop/manuals/ignition")
NOTICE_SECONDS = 10.0


@dataclass(frozen=True)
class Replica:
    process: subprocess.Popen
    base: str

    def http(self) -> httpx2.AsyncClient:
        return httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30)


def start_replica(env: dict[str, str], state: Path, api: bool = False) -> Replica:
    """`lakegraph serve --mcp http` (with the HTTP API and /metrics when `api`) on a port of its own."""
    process = subprocess.Popen(
        [LAKEGRAPH, "serve", "--mcp", "http", *(["--http"] if api else []), "--port", "0"],
        env={**env, "LAKEGRAPH_STATE_DIR": str(state), "LAKEGRAPH_SERVE__TOKEN": TOKEN, "LAKEGRAPH_SERVE__NOTIFY_INTERVAL": "0.2"},
        stdout=subprocess.PIPE,
        text=True,
    )
    first = process.stdout.readline() if process.stdout else ""
    assert first.startswith("MCP"), first
    return Replica(process, first.split()[1].removesuffix("/mcp"))


@contextmanager
def running_replicas(env: dict[str, str], redis_url: str, folders: list[Path], api: bool = False) -> Iterator[list[Replica]]:
    """One replica per state folder, all reading the change stream of the Redis at `redis_url`."""
    started = [start_replica({**env, "LAKEGRAPH_REDIS__URL": redis_url}, folder, api) for folder in folders]
    try:
        yield started
    finally:
        for replica in started:
            stop_pid(replica.process.pid, timeout=10)
            replica.process.wait(10)


@pytest.fixture(scope="module")
def replicas(env: dict[str, str], redis_service: redis_server.LocalRedis, tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[Replica]]:
    with running_replicas(env, redis_service.url, [tmp_path_factory.mktemp(f"replica-{n}") for n in range(2)]) as started:
        yield started


@pytest.fixture(scope="module")
def writer(house: lakehouse.Lakehouse, driver: Driver, redis_service: redis_server.LocalRedis) -> DocumentSync:
    """A writer that is neither replica: it announces on the shared Redis as a worker does."""
    return DocumentSync(house.settings.with_section("redis", url=redis_service.url), driver, "neo4j")


def session(replica: Replica, http: httpx2.AsyncClient, **options: Any) -> Client:
    return Client(streamable_http_client(f"{replica.base}/mcp", http_client=http), **options)


def edit(house: lakehouse.Lakehouse, writer: DocumentSync, heading: str) -> None:
    path = house.library / IGNITION
    path.write_text(path.read_text() + f"## {heading}\nAdded while an agent watched.\n")
    assert writer.sync_path("shop", IGNITION) == "written"


def test_every_tool_answers_what_its_output_schema_declares(replicas: list[Replica]) -> None:
    async def check() -> None:
        async with replicas[0].http() as http, session(replicas[0], http) as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            assert set(tools) == set(SAMPLES), "every shape is offered on the tests' lakehouse"
            for name, arguments in SAMPLES.items():
                schema = tools[name].output_schema
                assert schema is not None and {"page", "freshness"} <= set(schema["properties"]), name
                result = await client.call_tool(name, arguments)
                assert not result.is_error, (name, result.content)
                jsonschema.validate(result.structured_content, schema, cls=jsonschema.Draft202012Validator)

    anyio.run(check)


def test_answers_link_to_resources_that_read_back(replicas: list[Replica]) -> None:
    async def check() -> None:
        async with replicas[1].http() as http, session(replicas[1], http) as client:
            found = await client.call_tool("search", {"query": "coil", "k": 3})
            links = [block for block in found.content if isinstance(block, ResourceLink)]
            hits = found.structured_content["hits"]
            assert [link.uri for link in links] == [outline_uri(hit["uri"]) for hit in hits]
            section = next(link for link in links if "%23" in link.uri)  # a section: its # travels as %23
            read = await client.read_resource(section.uri)
            assert json.loads(read.contents[0].text)["root"] == section.name
            assert read.ttl_ms is not None and read.cache_scope == "private"  # the freshness hint
            tables = await client.call_tool("table_context", {"question": "repeat repair rate", "k": 1})
            table = next(block for block in tables.content if isinstance(block, ResourceLink))
            assert table.uri == table_uri(tables.structured_content["tables"][0]["id"])
            one = json.loads((await client.read_resource(table.uri)).contents[0].text)
            assert one["tables"][0]["id"] == tables.structured_content["tables"][0]["id"] and one["tables"][0]["columns"]
            listed = {resource.uri for resource in (await client.list_resources()).resources}
            templates = {template.uri_template for template in (await client.list_resource_templates()).resource_templates}
            assert listed | templates == {resource.uri for resource in RESOURCES}
            for uri in listed:
                assert json.loads((await client.read_resource(uri)).contents[0].text)["freshness"]
            with pytest.raises(MCPError, match="no table"):
                await client.read_resource(table_uri("warehouse.service.nothing"))

    anyio.run(check)


def test_an_unknown_resource_is_refused_by_name_and_nothing_is_watched(replicas: list[Replica]) -> None:
    async def check() -> None:
        async with replicas[0].http() as http, session(replicas[0], http) as client:
            with pytest.raises(MCPError, match="lakegraph://nowhere"):
                async with client.listen(resource_subscriptions=["lakegraph://nowhere"]):
                    pass
            async with session(replicas[0], http, mode="legacy") as old:
                with pytest.raises(MCPError, match="lakegraph://tables-of-nothing"):
                    await old.session.subscribe_resource("lakegraph://tables-of-nothing")

    anyio.run(check)


def test_an_edit_by_another_process_reaches_subscribers_on_both_replicas(replicas: list[Replica], house: lakehouse.Lakehouse, writer: DocumentSync) -> None:
    heard: dict[str, float] = {}
    heading = f"Coil dwell {time.time_ns()}"

    async def listen(replica: Replica, key: str, ready: anyio.Event) -> None:
        async with replica.http() as http, session(replica, http) as client, client.listen(resource_subscriptions=[IGNITION_URI]) as stream:
            ready.set()
            async for event in stream:
                assert event == ResourceUpdated(uri=IGNITION_URI)
                outline = json.loads((await client.read_resource(IGNITION_URI)).contents[0].text)
                if any(heading in row["label"] for row in outline["rows"]):
                    heard[key] = time.monotonic()
                    return

    async def legacy(replica: Replica, ready: anyio.Event) -> None:
        got = anyio.Event()

        async def on_message(message: Any) -> None:
            if isinstance(message, ResourceUpdatedNotification) and message.params.uri == IGNITION_URI:
                got.set()

        async with replica.http() as http, session(replica, http, mode="legacy", message_handler=on_message) as client:
            await client.session.subscribe_resource(IGNITION_URI)
            ready.set()
            await got.wait()
            outline = json.loads((await client.read_resource(IGNITION_URI)).contents[0].text)
            assert any(heading in row["label"] for row in outline["rows"])
            heard["legacy"] = time.monotonic()

    async def run() -> None:
        with anyio.fail_after(NOTICE_SECONDS + 20):
            async with anyio.create_task_group() as tasks:
                readies = [anyio.Event() for _ in range(3)]
                tasks.start_soon(listen, replicas[0], "a", readies[0])
                tasks.start_soon(listen, replicas[1], "b", readies[1])
                tasks.start_soon(legacy, replicas[1], readies[2])
                for ready in readies:
                    await ready.wait()
                await anyio.sleep(0.5)  # the replicas read the subscribed outlines' links
                began = time.monotonic()
                await anyio.to_thread.run_sync(edit, house, writer, heading)
        assert set(heard) == {"a", "b", "legacy"}
        assert max(heard.values()) - began < NOTICE_SECONDS

    anyio.run(run)


class Recorder:
    """A listen stream that reads its resource again at every notification, as an agent would."""

    def __init__(self, uris: list[str]) -> None:
        self.uris = uris
        self.seen: dict[str, list[tuple[float, str]]] = {uri: [] for uri in uris}  # (when, what the read gave)

    async def run(self, replica: Replica, ready: anyio.Event) -> None:
        async with replica.http() as http, session(replica, http) as client, client.listen(resource_subscriptions=self.uris) as stream:
            ready.set()
            async for event in stream:
                assert isinstance(event, ResourceUpdated)
                self.seen[event.uri].append((time.monotonic(), await read_state(client, event.uri)))


async def read_state(client: Client, uri: str) -> str:
    """What the resource answers, without how fresh the graph is (that moves with every change) and
    the cursor of a cut page (it names the snapshot this read kept)."""
    data = json.loads((await client.read_resource(uri)).contents[0].text)
    data["page"].pop("next_cursor")
    return json.dumps({key: value for key, value in data.items() if key != "freshness"}, sort_keys=True)


WATCHED = [
    IGNITION_URI,
    outline_uri("shop/bulletins/tsb-7"),
    outline_uri("shop/manuals/network"),
    outline_uri("shop/manuals"),
    outline_uri("shop/recalls/r-03"),
]
DOCUMENTS = {"manuals/ignition.md": "Ignition", "bulletins/tsb-7.md": "TSB 7", "manuals/network.md": "Network", "recalls/r-03.md": "Coil recall 3"}


def apply(house: lakehouse.Lakehouse, writer: DocumentSync, relpath: str, action: str, step: int) -> None:
    """One edit a library sees: a section added, the title changed, or the file rewritten as it was."""
    path = house.library / relpath
    text = path.read_text()
    if action == "section":
        text += f"## Step {step}\nChecked at step {step}.\n"
    elif action == "title":
        text = text.replace(text.splitlines()[0], f"# {DOCUMENTS[relpath]} rev {step}", 1)
    path.write_text(text)
    writer.sync_path("shop", relpath)


@given(edits=st.lists(st.tuples(st.sampled_from(sorted(DOCUMENTS)), st.sampled_from(["section", "title", "same"])), min_size=1, max_size=8))
@settings(
    max_examples=4, deadline=None, suppress_health_check=list(HealthCheck), phases=[Phase.explicit, Phase.generate]
)  # no shrinking: each example edits a live library
def test_every_changed_resource_is_notified_after_its_final_state(
    edits: list[tuple[str, str]], replicas: list[Replica], house: lakehouse.Lakehouse, writer: DocumentSync
) -> None:
    recorder = Recorder(WATCHED)

    async def run() -> tuple[dict[str, str], dict[str, str], float]:
        async with replicas[1].http() as http, session(replicas[1], http) as client:
            before = {uri: await read_state(client, uri) for uri in WATCHED}
            async with anyio.create_task_group() as tasks:
                ready = anyio.Event()
                tasks.start_soon(recorder.run, replicas[0], ready)
                await ready.wait()
                await anyio.sleep(0.5)  # the replica reads the watched outlines' links
                for step, (relpath, action) in enumerate(edits):
                    await anyio.to_thread.run_sync(apply, house, writer, relpath, action, step)
                last_write = time.monotonic()
                await anyio.sleep(3.0)  # quiet: everything owed has been notified
                tasks.cancel_scope.cancel()
            return before, {uri: await read_state(client, uri) for uri in WATCHED}, last_write

    before, after, last_write = anyio.run(run)
    last_edited = outline_uri(f"shop/{edits[-1][0].removesuffix('.md')}")
    for uri in WATCHED:
        if after[uri] == before[uri]:
            continue
        seen = recorder.seen[uri]
        assert seen, f"{uri} changed and was never notified"
        assert seen[-1][1] == after[uri], f"{uri}: its last notification read a state that is not its final one"
        if uri == last_edited and edits[-1][1] != "same":  # what the last write moved is notified after it
            assert seen[-1][0] >= last_write, f"{uri}: no notification after the last write"


def test_a_burst_of_edits_coalesces_and_ends_with_the_final_state(replicas: list[Replica], house: lakehouse.Lakehouse, writer: DocumentSync) -> None:
    recorder = Recorder([outline_uri("shop/recalls/r-07")])
    edits = 60

    async def run() -> tuple[float, float, str]:
        async with replicas[1].http() as http, session(replicas[1], http) as client:
            async with anyio.create_task_group() as tasks:
                ready = anyio.Event()
                tasks.start_soon(recorder.run, replicas[0], ready)
                await ready.wait()
                await anyio.sleep(0.5)
                began = time.monotonic()
                for step in range(edits):
                    await anyio.to_thread.run_sync(apply, house, writer, "recalls/r-07.md", "section", step)
                ended = time.monotonic()
                await anyio.sleep(2.0)
                tasks.cancel_scope.cancel()
            return began, ended, await read_state(client, recorder.uris[0])

    began, ended, final = anyio.run(run)
    seen = recorder.seen[recorder.uris[0]]
    assert seen and seen[-1][1] == final and seen[-1][0] >= ended
    bound = (ended - began) / 0.2 + 2  # at most one per notify_interval while the edits last, and the last one
    assert len(seen) <= min(bound, edits), f"{len(seen)} notifications for {edits} edits in {ended - began:.1f} s"


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_over_stdio_a_subscriber_hears_an_edit_on_both_revisions(
    mode: str, env: dict[str, str], redis_service: redis_server.LocalRedis, house: lakehouse.Lakehouse, writer: DocumentSync, tmp_path: Path
) -> None:
    """`serve --mcp stdio` (an MCP client that launches its server) reads the same change stream."""
    heading = f"Stdio {mode} {time.time_ns()}"
    uri = outline_uri("shop/bulletins/tsb-7")
    params = StdioServerParameters(
        command=LAKEGRAPH, args=["serve", "--mcp", "stdio"], env={**env, "LAKEGRAPH_REDIS__URL": redis_service.url, "LAKEGRAPH_STATE_DIR": str(tmp_path)}
    )

    def edit_tsb() -> None:
        path = house.library / "bulletins/tsb-7.md"
        path.write_text(path.read_text() + f"## {heading}\nWritten while a stdio client watched.\n")
        assert writer.sync_path("shop", "bulletins/tsb-7.md") == "written"

    async def run() -> None:
        heard = anyio.Event()

        async def on_message(message: Any) -> None:
            if isinstance(message, ResourceUpdatedNotification) and message.params.uri == uri:
                heard.set()

        async with Client(params, mode=mode, message_handler=on_message) as client:  # type: ignore[arg-type]
            if mode == "legacy":
                await client.session.subscribe_resource(uri)
                await anyio.sleep(0.5)
                await anyio.to_thread.run_sync(edit_tsb)
                with anyio.fail_after(NOTICE_SECONDS):
                    await heard.wait()
            else:
                async with client.listen(resource_subscriptions=[uri]) as stream:
                    await anyio.sleep(0.5)
                    await anyio.to_thread.run_sync(edit_tsb)
                    with anyio.fail_after(NOTICE_SECONDS):
                        async for event in stream:
                            assert event.uri == uri
                            break
            assert heading in await read_state(client, uri)

    anyio.run(run)
