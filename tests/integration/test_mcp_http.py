"""The shapes over MCP (the official Python client, stdio and streamable HTTP) and the HTTP API,
against `lakegraph serve` processes on a real graph."""

from __future__ import annotations

import http.client
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.subscriptions import ToolsListChanged
from neo4j import Driver

from tests import lakehouse
from tests.conftest import Neo4jService
from tests.graph_dump import dump
from tests.helpers import LAKEGRAPH, clean_env
from tests.integration.test_shapes_warehouse import SQL_ATTEMPTS, WRITE_ATTEMPTS
from worker.documents.loader import load
from worker.documents.sync import DocumentSync
from worker.runtime.processes import stop_pid

pytestmark = pytest.mark.timeout(240)
ALL_TOOLS = ["bridge", "coverage", "cypher", "freshness", "join_path", "joins", "links", "outline", "run_sql", "schema", "search", "table", "table_context"]
COUNTS = "MATCH (n) WITH count(n) AS nodes MATCH ()-[r]->() RETURN nodes, count(r) AS edges"


@pytest.fixture(scope="module")
def house(neo4j_service: Neo4jService, driver: Driver, tmp_path_factory: pytest.TempPathFactory) -> lakehouse.Lakehouse:
    return lakehouse.build(neo4j_service.settings, driver, tmp_path_factory.mktemp("lakehouse"))


@pytest.fixture(scope="module")
def env(house: lakehouse.Lakehouse, neo4j_service: Neo4jService, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    return clean_env(
        **neo4j_service.env(),
        LAKEGRAPH_STATE_DIR=str(tmp_path_factory.mktemp("serve-state")),
        LAKEGRAPH_WAREHOUSE__DUCKDB_PATH=str(house.warehouse),
        LAKEGRAPH_SERVE__TOOLS_REFRESH_INTERVAL="0.5",
        LAKEGRAPH_LOG_LEVEL="warning",
    )


class Served:
    def __init__(self, process: subprocess.Popen, base: str, token: str) -> None:
        self.process = process
        self.base = base
        self.token = token

    def client(self, token: str | None = None) -> httpx2.AsyncClient:
        return httpx2.AsyncClient(headers={"Authorization": f"Bearer {token or self.token}"}, timeout=30)


@pytest.fixture(scope="module")
def served(env: dict[str, str]) -> Iterator[Served]:
    process = subprocess.Popen(
        [LAKEGRAPH, "serve", "--mcp", "http", "--http", "--port", "0"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        first = process.stdout.readline() if process.stdout else ""
        assert first.startswith("MCP"), first + (process.stderr.read() if process.stderr else "")
        base = first.split()[1].removesuffix("/mcp")
        token = (Path(env["LAKEGRAPH_STATE_DIR"]) / "serve" / "token").read_text().strip()
        assert oct((Path(env["LAKEGRAPH_STATE_DIR"]) / "serve" / "token").stat().st_mode & 0o777) == "0o600"
        yield Served(process, base, token)
    finally:
        stop_pid(process.pid, timeout=10)
        process.wait(10)


async def _tool_text(client: Client, name: str, arguments: dict) -> tuple[bool, str]:
    result = await client.call_tool(name, arguments)
    return result.is_error, "\n".join(block.text for block in result.content if hasattr(block, "text"))


async def _journey(client: Client) -> dict[str, str]:
    """Every tool once, the way an agent would use it."""
    tools = sorted(tool.name for tool in (await client.list_tools()).tools)
    assert tools == ALL_TOOLS
    calls = {
        "global": {"query": "coil", "k": 2, "format": "json"},
        "search": {"query": "coil", "under": "shop/manuals", "k": 2, "format": "json"},
        "outline": {"uri": "shop/manuals/ignition", "depth": 3},
        "coverage": {"terms": ["P0301", "P0420"], "format": "json"},
        "table_context": {"question": "repeat repair rate", "format": "json"},
        "join_path": {"table_a": "vehicles", "table_b": "parts"},
        "run_sql": {"sql": "SELECT count(*) AS n FROM service.work_orders WHERE is_comeback", "format": "json"},
        "schema": {},
        "cypher": {"query": "MATCH (t:Table) RETURN count(t) AS tables"},
        "freshness": {"format": "json"},
    }
    answers = {}
    for key, arguments in calls.items():
        name = "search" if key == "global" else key
        failed, text = await _tool_text(client, name, arguments)
        assert not failed, (name, text)
        answers[key] = text
    return answers


def _check_journey(answers: dict[str, str]) -> None:
    assert not any(hit["uri"].startswith("shop/manuals") for hit in json.loads(answers["global"])["hits"])
    scoped = [hit["uri"] for hit in json.loads(answers["search"])["hits"]]
    assert len(scoped) == 2 and all(uri.startswith("shop/manuals/ignition") for uri in scoped)  # k hits in scope
    assert "→ TSB 7  shop/bulletins/tsb-7" in answers["outline"]
    assert json.loads(answers["coverage"])["missing"] == ["P0420"]
    assert json.loads(answers["table_context"])["tables"][0]["id"] == "warehouse.service.work_orders"
    assert "ON work_order_parts.part_no = parts.part_no AND work_order_parts.revision = parts.revision" in answers["join_path"]
    assert json.loads(answers["run_sql"])["rows"] == [[1]]
    assert "(:Table)  6 nodes" in answers["schema"]
    assert "freshness:" in answers["cypher"]
    assert {source["source"] for source in json.loads(answers["freshness"])["freshness"]["sources"]} >= {"documents", "warehouse"}


def test_mcp_over_stdio_answers_every_tool(env: dict[str, str], driver: Driver) -> None:
    async def main() -> dict[str, str]:
        params = StdioServerParameters(command=LAKEGRAPH, args=["serve", "--mcp", "stdio"], env=env)
        async with Client(params) as client:
            return await _journey(client)

    _check_journey(anyio.run(main))


@pytest.mark.reliability
def test_mcp_over_http_answers_every_tool_and_refuses_every_write(served: Served, driver: Driver, house: lakehouse.Lakehouse) -> None:
    before = dump(driver), driver.execute_query(COUNTS).records[0].values()

    async def main() -> tuple[dict[str, str], list[tuple[bool, str]]]:
        async with served.client() as http, Client(streamable_http_client(f"{served.base}/mcp", http_client=http)) as client:
            answers = await _journey(client)
            refusals = [await _tool_text(client, "cypher", {"query": query}) for query in WRITE_ATTEMPTS]
            refusals += [await _tool_text(client, "run_sql", {"sql": sql}) for sql, _ in SQL_ATTEMPTS]
            refusals.append(await _tool_text(client, "outline", {"uri": "../../etc/passwd"}))
            refusals.append(await _tool_text(client, "search", {"query": "coil", "under": 'shop" OR 1=1 //'}))
            return answers, refusals

    answers, refusals = anyio.run(main)
    _check_journey(answers)
    search_injection = refusals.pop()
    assert not search_injection[0] and "0 hits" in search_injection[1]  # a scope matching nothing, not an error
    for failed, text in refusals:
        assert failed and "Traceback" not in text and len(text.splitlines()) == 1, text
    assert (dump(driver), driver.execute_query(COUNTS).records[0].values()) == before


@pytest.mark.reliability
def test_http_needs_the_bearer_token(served: Served) -> None:
    async def main() -> list[int]:
        async with httpx2.AsyncClient(timeout=10) as anonymous:
            codes = [(await anonymous.get(f"{served.base}{path}")).status_code for path in ("/v1/freshness", "/metrics", "/mcp")]
            codes.append((await anonymous.post(f"{served.base}/mcp", json={})).status_code)
        async with served.client("wrong-token") as wrong:
            codes.append((await wrong.get(f"{served.base}/v1/search", params={"query": "coil"})).status_code)
        async with httpx2.AsyncClient(timeout=10) as anonymous:
            codes += [(await anonymous.get(f"{served.base}{path}")).status_code for path in ("/healthz", "/openapi.json")]
        return codes

    assert anyio.run(main) == [401, 401, 401, 401, 401, 200, 200]


TRAVERSALS = [
    "/../../../../etc/passwd",
    "/%2e%2e/%2e%2e/%2e%2e/etc/passwd",
    "/v1/../../serve/token",
    "/v1/%2e%2e%2f%2e%2e%2fserve%2ftoken",
    "/themes/..%2f..%2f..%2fetc%2fpasswd",
    "/themes/graph.svg/../../../etc/passwd",
    "//etc/passwd",
    "/file:///etc/passwd",
]


@pytest.mark.reliability
def test_no_uri_reaches_a_file(served: Served) -> None:
    """Raw request paths (sent as-is, nothing normalised by a client library) never serve a file,
    with or without the token."""
    host, port = served.base.removeprefix("http://").split(":")
    answers = []
    for path in TRAVERSALS:
        for headers in ({}, {"Authorization": f"Bearer {served.token}"}):
            connection = http.client.HTTPConnection(host, int(port), timeout=10)
            connection.request("GET", path, headers=headers)
            response = connection.getresponse()
            answers.append((path, response.status, response.read().decode(errors="replace")))
            connection.close()
    print(f"\n{len(answers)} traversal requests: statuses {sorted({status for _, status, _ in answers})}")
    for path, status, body in answers:
        assert status in (401, 404), (path, status)
        assert "root:" not in body and served.token not in body, path


@pytest.mark.reliability
def test_http_api_answers_refuses_and_counts(served: Served, driver: Driver) -> None:
    before = dump(driver)

    async def main() -> dict:
        async with served.client() as http:
            base = served.base
            return {
                "search": (await http.get(f"{base}/v1/search", params={"query": "coil", "under": "shop/bulletins"})).json(),
                "text": (await http.get(f"{base}/v1/join-path", params={"table_a": "vehicles", "table_b": "parts", "format": "text"})).text,
                "coverage": (await http.get(f"{base}/v1/coverage", params=[("terms", "U0140"), ("terms", "P9999")])).json(),
                "cypher": await http.post(f"{base}/v1/cypher", json={"query": "MATCH (n) DETACH DELETE n"}),
                "sql": await http.post(f"{base}/v1/run-sql", json={"sql": "DROP TABLE service.parts"}),
                "bad": await http.get(f"{base}/v1/outline", params={"depth": "deep"}),
                "unknown": await http.get(f"{base}/v1/table-context", params={"question": "x", "evil": "1"}),
                "traversal": await http.get(f"{base}/v1/outline", params={"uri": "../../../etc/passwd"}),
                "openapi": (await http.get(f"{base}/openapi.json")).json(),
                "metrics": (await http.get(f"{base}/metrics")).text,
                "tools": (await http.get(f"{base}/v1/tools")).json(),
            }

    got = anyio.run(main)
    assert got["search"]["hits"] and all(hit["uri"].startswith("shop/bulletins/") for hit in got["search"]["hits"])
    assert "freshness" in got["search"]
    assert "ON vehicles.vin = work_orders.vin" in got["text"]
    assert got["coverage"]["missing"] == ["P9999"]
    for name, status in (("cypher", 400), ("sql", 400), ("bad", 400), ("unknown", 400), ("traversal", 404)):  # a path outside the graph is not found in it
        assert got[name].status_code == status and set(got[name].json()) == {"error"}, (name, got[name].text)
    assert "refused" in got["cypher"].json()["error"] and "read-only" in got["sql"].json()["error"]
    assert set(got["openapi"]["paths"]) >= {"/v1/search", "/v1/table-context", "/v1/join-path", "/v1/links", "/v1/joins", "/v1/cypher", "/healthz", "/metrics"}
    assert 'lakegraph_shape_calls_total{outcome="refused",shape="cypher"}' in got["metrics"]
    assert "lakegraph_source_age_seconds" in got["metrics"]
    assert got["tools"]["available"] == sorted(ALL_TOOLS)
    assert dump(driver) == before


def test_tool_list_follows_what_exists_and_is_announced(served: Served, driver: Driver, house: lakehouse.Lakehouse) -> None:
    """Documents vanish: outline, search and coverage go (the bridge stays: the values are there), and
    listening clients are told; they come back."""

    async def main() -> tuple[list[str], list[str]]:
        async with (
            served.client() as http,
            Client(streamable_http_client(f"{served.base}/mcp", http_client=http)) as client,
            client.listen(tools_list_changed=True) as events,
        ):
            driver.execute_query("MATCH (l:Library) DETACH DELETE l")
            with anyio.fail_after(20):
                event = await events.__anext__()
            assert isinstance(event, ToolsListChanged)
            without = sorted(tool.name for tool in (await client.list_tools()).tools)
            await anyio.to_thread.run_sync(lambda: load(DocumentSync(house.settings, driver, "neo4j"), workers=1))
            with anyio.fail_after(20):
                await events.__anext__()
            again = sorted(tool.name for tool in (await client.list_tools()).tools)
            return without, again

    without, again = anyio.run(main)
    assert without == ["bridge", "cypher", "freshness", "join_path", "joins", "run_sql", "schema", "table", "table_context"]
    assert again == ALL_TOOLS
