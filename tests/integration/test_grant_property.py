"""The grant property: for random grants, every shape with random parameters (cursors taken from
another caller's answers among them) shows nothing outside the grant — no document, section,
folder or library URI it does not see, no table or column of a table it does not see — in the
answer's JSON or its text. Asked through `Shapes.ask`, the one door every surface (HTTP, MCP, the
themes page) passes with the caller the token check made; and over the wire, as callers really ask:
a server in oidc mode with random grants, each a client of a real issuer, asked over HTTP (JSON
and text) and the official MCP client (structured content and text), with cursors from another
caller's answers."""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import anyio
import httpx2
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp.client import Client as McpClient
from mcp.client.streamable_http import streamable_http_client
from neo4j import Driver

from shapes.serving.identity import LOCAL, Caller
from shapes.serving.service import Answer, Shapes
from shapes.spec.exceptions import ShapeError
from shapes.spec.registry import SPECS
from tests import lakehouse
from tests.conftest import Neo4jService
from tests.integration.conftest import oidc_env, serving
from tests.services.oidc_issuer import Client, Issuer
from worker.graph.schema import Label
from worker.settings import load_settings
from worker.shared.grants import Grant

pytestmark = pytest.mark.timeout(600)
NAMED = f"MATCH (n:{Label.LIBRARY}|{Label.FOLDER}|{Label.DOCUMENT}|{Label.SECTION}) RETURN n.uri AS name"
TABLES = f"MATCH (t:{Label.TABLE}) OPTIONAL MATCH (t)-->(c:{Label.COLUMN}) RETURN t.id AS table, collect(c.id) AS columns"
PREFIXES = ["shop", "shop/manuals", "shop/bulletins", "shop/recalls", "shop/manuals/ignition", "shop/recalls/r-03"]
TABLE_PATTERNS = ["service", "service.work_orders", "service.parts", "service.vehicles", "warehouse.service.fault_codes", "SERVICE.Work_Order_Parts"]
WORDS = ["coil", "P0301", "12345-AB", "U0140", "recall", "ignition", "vehicles", "parts", "work_orders", "misfire"]
URIS = ["shop", "shop/manuals", "shop/manuals/ignition", "shop/bulletins/tsb-7", "shop/recalls/r-01", "shop/recalls", "shop/manuals-old"]
TABLE_NAMES = ["work_orders", "parts", "vehicles", "service.work_order_parts", "warehouse.service.fault_codes", "technicians"]


def _params(name: str) -> st.SearchStrategy[dict[str, Any]]:
    """Parameters an agent might send to shape `name` (most valid, some refused)."""
    word, uri, table = st.sampled_from(WORDS), st.sampled_from(URIS), st.sampled_from(TABLE_NAMES)
    small = st.sampled_from([300, 800, 8000])
    choices: dict[str, st.SearchStrategy[dict[str, Any]]] = {
        "search": st.fixed_dictionaries({"query": word, "k": st.integers(1, 30)}, optional={"under": uri}),
        "outline": st.fixed_dictionaries({}, optional={"uri": uri, "depth": st.integers(1, 4)}),
        "coverage": st.fixed_dictionaries({"terms": st.lists(word, min_size=1, max_size=4)}, optional={"under": uri}),
        "links": st.fixed_dictionaries({}, optional={"broken": st.booleans(), "under": uri}),
        "bridge": st.one_of(
            st.just({}),
            st.fixed_dictionaries({"value": word}),
            st.fixed_dictionaries({"uri": uri}),
            st.fixed_dictionaries({"column": st.sampled_from(["fault_code", "vin", "part_no"])}),
        ),
        "themes": st.fixed_dictionaries({}, optional={"level": st.integers(0, 1)}),
        "theme_changes": st.just({}),
        "table_context": st.fixed_dictionaries({"question": st.sampled_from(["repeat repair rate", "parts revision", "vehicle model year", "technicians"])}),
        "table": st.fixed_dictionaries({"table": st.sampled_from(["warehouse.service.work_orders", "warehouse.service.parts", "warehouse.service.vehicles"])}),
        "join_path": st.fixed_dictionaries({"table_a": table, "table_b": table}),
        "joins": st.fixed_dictionaries({}, optional={"table": table}),
        "run_sql": st.fixed_dictionaries(
            {"sql": st.sampled_from([f"SELECT * FROM service.{name}" for name in ("work_orders", "parts", "vehicles")] + ["SELECT 1"])}
        ),
        "cypher": st.just({"query": "MATCH (d:Document) RETURN d.uri AS uri"}),
        "schema": st.just({}),
        "freshness": st.just({}),
    }
    return st.tuples(choices[name], small).map(lambda found: {**found[0], "max_tokens": found[1]})


GRANTS = st.builds(
    lambda libraries, tables, capabilities: Grant(("random",), tuple(libraries), tuple(tables), frozenset(capabilities)),
    st.lists(st.sampled_from(PREFIXES), max_size=2, unique=True),
    st.lists(st.sampled_from(TABLE_PATTERNS), max_size=2, unique=True),
    st.sets(st.sampled_from(["run-sql", "metrics"])),  # not cypher: it reads the whole graph by design
)
CALLS = st.sampled_from(sorted(SPECS)).flatmap(lambda name: st.tuples(st.just(name), _params(name)))


@pytest.fixture(scope="module")
def estate(house: lakehouse.Lakehouse, driver: Driver) -> tuple[Shapes, list[str], dict[str, list[str]]]:
    shapes = Shapes(house.settings, driver, "neo4j")
    names = [row["name"] for row in driver.execute_query(NAMED).records]
    tables = {row["table"]: row["columns"] for row in driver.execute_query(TABLES).records}
    return shapes, names, tables


def leaks(grant: Grant, answer: Answer, names: list[str], tables: dict[str, list[str]], asked: dict[str, Any]) -> list[str]:
    """What the answer shows that the grant does not, in its JSON and its text."""
    return leaked(grant, json.dumps(answer.data(), default=str) + "\n" + answer.text(), names, tables, asked)


def leaked(grant: Grant, shown: str, names: list[str], tables: dict[str, list[str]], asked: dict[str, Any]) -> list[str]:
    """What `shown` names that the grant does not see: a URI of a node it does not see (the
    ancestors of its prefixes excepted: the grant names them), a table or column of a table it
    does not see — each as a whole token; what the caller asked (`under`, a table name) may be
    repeated back."""
    for value in asked.values():
        for said in value if isinstance(value, list) else [value]:
            if isinstance(said, str):
                shown = _whole(said).sub("", shown)
    hidden = [name for name in names if not grant.sees_uri(name) and not any(prefix.startswith(name + "/") for prefix in grant.libraries)]
    hidden += [table for table in tables if not grant.sees_table(table)]
    hidden += [column for table, columns in tables.items() if not grant.sees_table(table) for column in columns]
    return [name for name in hidden if _whole(name).search(shown)]


def _whole(name: str) -> re.Pattern[str]:
    """`name` as a whole URI or id: not part of a longer one."""
    return re.compile(rf"(?<![\w/#.-]){re.escape(name)}(?![\w/#.-])")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(grant=GRANTS, call=CALLS, foreign=st.booleans())
def test_no_answer_shows_anything_outside_the_grant(
    estate: tuple[Shapes, list[str], dict[str, list[str]]], grant: Grant, call: tuple[str, dict[str, Any]], foreign: bool
) -> None:
    shapes, names, tables = estate
    name, params = call
    if foreign:  # the next page of the same call made by the local user: its cursor must not serve this grant
        try:
            cursor = shapes.ask(name, LOCAL, "test", **params).page.next_cursor
        except ShapeError:
            cursor = None
        if cursor:
            params = {**params, "cursor": cursor}
    try:
        answer = shapes.ask(name, Caller("someone", "", grant), "test", **params)
    except ShapeError as refused:
        shown = [hidden for hidden in names + list(tables) if not grant.sees_uri(hidden) and not grant.sees_table(hidden) and hidden in str(refused)]
        assert all(hidden in json.dumps(params) for hidden in shown), (name, params, str(refused))  # a refusal repeats only what was asked
        return
    assert leaks(grant, answer, names, tables, params) == [], (name, params, grant)


WIRE_GRANTS = 5  # random grants the wire server is configured with, one issuer client each
RESOURCE = "http://lakegraph.test"


@dataclass(frozen=True)
class Wire:
    base: str
    issuer: Issuer
    grants: list[Grant]  # grant i is client `agent-i`'s; the last one, wide, gives foreign cursors


@pytest.fixture(scope="module")
def wire(house: lakehouse.Lakehouse, neo4j_service: Neo4jService, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Wire]:
    rng = random.Random(40)
    grants = [
        Grant((f"g{index}",), tuple(rng.sample(PREFIXES, rng.randint(1, 2))), tuple(rng.sample(TABLE_PATTERNS, rng.randint(1, 2))), frozenset({"run-sql"}))
        for index in range(WIRE_GRANTS)
    ]
    grants.append(Grant(("wide",), ("shop",), ("service",), frozenset({"run-sql"})))
    settings = {
        grant.names[0]: {
            "groups": [grant.names[0]],
            "libraries": list(grant.libraries),
            "tables": list(grant.tables),
            "capabilities": sorted(grant.capabilities),
        }
        for grant in grants
    }
    clients = [Client(f"agent-{index}", [grant.names[0]], ttl=3600) for index, grant in enumerate(grants)]
    issuer = Issuer(load_settings().cache_path, tmp_path_factory.mktemp("wire-issuer"), [RESOURCE], clients).start()
    try:
        with serving(oidc_env(neo4j_service, house, tmp_path_factory.mktemp("wire-state"), issuer.url, RESOURCE, settings)) as served:
            yield Wire(served.base, issuer, grants)
    finally:
        issuer.stop()


def over_http(wire: Wire, token: str, name: str, params: dict[str, Any], output: str) -> httpx2.Response:
    spec = SPECS[name]
    headers = {"Authorization": f"Bearer {token}"}
    if spec.method == "POST":
        return httpx2.post(f"{wire.base}{spec.path}", json={**params, "format": output}, headers=headers, timeout=60)
    query = [(key, item) for key, value in {**params, "format": output}.items() for item in (value if isinstance(value, list) else [value])]
    return httpx2.get(f"{wire.base}{spec.path}", params=query, headers=headers, timeout=60)


def over_mcp(wire: Wire, token: str, name: str, params: dict[str, Any]) -> tuple[bool, str]:
    """(refused, everything the tool result shows: its structured content and its text)."""

    async def call() -> tuple[bool, str]:
        async with (
            httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60) as http,
            McpClient(streamable_http_client(f"{wire.base}/mcp", http_client=http)) as client,
        ):
            result = await client.call_tool(name, params)
        texts = [getattr(content, "text", "") for content in result.content]
        return result.is_error, json.dumps(result.structured_content, default=str) + "\n" + "\n".join(texts)

    return anyio.run(call)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(index=st.integers(0, WIRE_GRANTS - 1), call=CALLS, foreign=st.booleans(), surface=st.sampled_from(["json", "text", "mcp"]))
def test_over_http_and_mcp_no_answer_shows_anything_outside_the_grant(
    wire: Wire, estate: tuple[Shapes, list[str], dict[str, list[str]]], index: int, call: tuple[str, dict[str, Any]], foreign: bool, surface: str
) -> None:
    _, names, tables = estate
    name, params = call
    grant, token = wire.grants[index], wire.issuer.client_token(f"agent-{index}")
    if foreign:  # the next page of the same call made by another caller, a wider grant
        other = over_http(wire, wire.issuer.client_token(f"agent-{WIRE_GRANTS}"), name, params, "json")
        cursor = other.json().get("page", {}).get("next_cursor") if other.status_code == 200 else None
        if cursor:
            params = {**params, "cursor": cursor}
    if surface == "mcp":
        refused, shown = over_mcp(wire, token, name, params)
    else:
        answer = over_http(wire, token, name, params, surface)
        assert answer.status_code in (200, 400, 403, 404, 409), (name, params, answer.status_code, answer.text)
        refused, shown = answer.status_code != 200, answer.text
    if refused:  # a refusal repeats only what was asked
        hidden = [item for item in names + list(tables) if not grant.sees_uri(item) and not grant.sees_table(item) and item in shown]
        assert all(item in json.dumps(params) for item in hidden), (name, params, shown)
        return
    assert leaked(grant, shown, names, tables, params) == [], (name, params, grant, surface)
