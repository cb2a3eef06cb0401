"""lakegraph as an OAuth 2.1 resource server, against a real OpenID Connect issuer (oidc-provider):
tokens obtained by the real flows (client credentials; authorization code with PKCE for a user),
every kind of bad token refused with a 401 a developer can act on, key rotation picked up, and
each caller answered within its grant over HTTP and the official MCP client."""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2
import jwt
import pytest
from mcp.client import Client as McpClient
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_types import ResourceUpdatedNotification
from neo4j import Driver

from shapes.spec.registry import SPECS
from tests import lakehouse
from tests.conftest import Neo4jService
from tests.helpers import assert_one_line_error, clean_env, mcp_listening, run_cli, take_queued
from tests.integration.conftest import oidc_env, serving
from tests.services.oidc_issuer import Client, Issuer, User, signing_key
from worker.documents.sync import DocumentSync
from worker.runtime.redis_server import LocalRedis
from worker.settings import load_settings
from worker.task_names import CHECK_THEMES

# The 2025 clients' resources/subscribe is what the subscription tests exercise on purpose.
pytestmark = [pytest.mark.timeout(300), pytest.mark.filterwarnings("ignore:resources/subscribe is removed")]
RESOURCE = "http://lakegraph.test"  # the public URL the server is configured with (behind a proxy)
OTHER = "http://another-api.test"  # a resource the same issuer serves: its tokens are not ours
REDIRECT = "http://127.0.0.1:9/callback"
LIBRARIES = "lakegraph://outline"  # the libraries and their top folders, as the caller's grant shows them
GRANTS = {
    "manuals": {"groups": ["workshop"], "libraries": ["shop/manuals"], "tables": ["service.vehicles", "service.work_orders"], "capabilities": ["run-sql"]},
    "bulletins": {"groups": ["quality"], "libraries": ["shop/bulletins"], "tables": ["service.parts"]},
    "admins": {"groups": ["admins"], "libraries": ["shop"], "tables": ["service"], "capabilities": ["cypher", "run-sql", "metrics", "themes-refresh"]},
}
CLIENTS = [
    Client("workshop-agent", ["workshop"]),
    Client("quality-agent", ["quality"]),
    Client("admin-agent", ["admins"]),
    Client("intern-agent", ["interns"]),  # valid tokens, no grant
    Client("short-lived", ["workshop"], ttl=1),
    Client("notebook", [], client_secret="", redirect_uri=REDIRECT),
]


@dataclass
class Secured:
    base: str
    issuer: Issuer
    audit: Path

    def get(self, path: str, token: str | None, **params: Any) -> httpx2.Response:
        headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
        return httpx2.get(self.base + path, params=params, headers=headers, timeout=30)

    def shape(self, name: str, token: str, **params: Any) -> httpx2.Response:
        if SPECS[name].method == "POST":
            return httpx2.post(f"{self.base}{SPECS[name].path}", json=params, headers={"Authorization": f"Bearer {token}"}, timeout=30)
        return self.get(SPECS[name].path, token, **params)


@pytest.fixture(scope="module")
def issuer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Issuer]:
    running = Issuer(load_settings().cache_path, tmp_path_factory.mktemp("issuer"), [RESOURCE, OTHER], CLIENTS, [User("alice", ["quality"])]).start()
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture(scope="module")
def secured_env(
    house: lakehouse.Lakehouse, neo4j_service: Neo4jService, redis_service: LocalRedis, issuer: Issuer, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, str]:
    return oidc_env(
        neo4j_service,
        house,
        tmp_path_factory.mktemp("secured-state"),
        issuer.url,
        RESOURCE,
        GRANTS,
        LAKEGRAPH_REDIS__URL=redis_service.url,  # the change stream a writer of the tests announces on
        LAKEGRAPH_SERVE__NOTIFY_INTERVAL="0.2",
        LAKEGRAPH_AUTH__LEEWAY_SECONDS="1",
        LAKEGRAPH_AUTH__JWKS_REFRESH_SECONDS="0.5",
        LAKEGRAPH_AUTH__JWKS_MAX_AGE_SECONDS="2",
    )


@pytest.fixture(scope="module")
def secured(secured_env: dict[str, str], issuer: Issuer) -> Iterator[Secured]:
    with serving(secured_env) as served:
        yield Secured(served.base, issuer, Path(secured_env["LAKEGRAPH_STATE_DIR"]) / "audit" / "access.jsonl")


def _segment(part: dict[str, Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(part).encode()).decode().rstrip("=")


def _with_claims(token: str, **changed: Any) -> str:
    """The issuer's token with its payload changed and its signature kept: a forgery."""
    header, payload, signature = token.split(".")
    claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    return f"{header}.{_segment({**claims, **changed})}.{signature}"


def _signed_by_issuer(issuer: Issuer, **claims: Any) -> str:
    """A token signed with the issuer's own current key (for a claim no flow of it would issue)."""
    key = issuer.keys[0]
    private = jwt.PyJWK(key).key
    return jwt.encode(claims, private, algorithm="RS256", headers={"kid": key["kid"], "typ": "at+jwt"})


def _bad_tokens(issuer: Issuer, tmp: Path) -> dict[str, tuple[str | None, str]]:
    """Each refusal the issue names: the token, and a fragment of the reason it must get."""
    good = issuer.client_token("workshop-agent")
    claims = jwt.decode(good, options={"verify_signature": False})
    now = int(time.time())
    stranger = Issuer(load_settings().cache_path, tmp, [RESOURCE], [Client("workshop-agent", ["workshop"])])
    stranger.keys = issuer.keys  # the same key: only the `iss` claim can tell it apart
    stranger.start()
    try:
        foreign = stranger.client_token("workshop-agent")
    finally:
        stranger.stop()
    expiring = issuer.client_token("short-lived")
    time.sleep(3)  # its 1 s lifetime and the 1 s leeway are over
    return {
        "missing": (None, "no bearer token"),
        "malformed": ("not-a-token", "not a JWT"),
        "expired": (expiring, "expired at"),
        "not yet valid": (_signed_by_issuer(issuer, **{**claims, "nbf": now + 600, "iat": now, "exp": now + 1200}), "not valid before"),
        "wrong audience": (issuer.client_token("workshop-agent", resource=OTHER), "audience"),
        "wrong issuer": (foreign, "not the configured issuer"),
        "forged signature": (_with_claims(good, groups=["admins"]), "signature does not verify"),
        "alg none": (f"{_segment({'alg': 'none', 'typ': 'JWT'})}.{_segment({**claims, 'groups': ['admins']})}.", "'none' is not accepted"),
        "unknown key": (jwt.encode(claims, jwt.PyJWK(signing_key("key-9")).key, algorithm="RS256", headers={"kid": "key-9"}), "does not publish"),
    }


def test_protected_resource_metadata_names_the_issuer(secured: Secured) -> None:
    for path in ("/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"):
        document = httpx2.get(secured.base + path, timeout=10).json()
        assert document["resource"] == RESOURCE and document["authorization_servers"] == [secured.issuer.url]
    challenge = httpx2.post(secured.base + "/mcp", json={}, timeout=10).headers["www-authenticate"]
    assert challenge.startswith("Bearer ") and f'resource_metadata="{RESOURCE}/.well-known/oauth-protected-resource"' in challenge


def test_every_bad_token_gets_401_with_an_actionable_reason(secured: Secured, tmp_path: Path) -> None:
    for case, (token, reason) in _bad_tokens(secured.issuer, tmp_path).items():
        for path in ("/v1/search?query=coil", "/mcp", "/themes/graph.svg"):
            answer = secured.get(path, token)
            assert answer.status_code == 401, (case, path, answer.text)
            challenge = answer.headers["www-authenticate"]
            assert "resource_metadata=" in challenge, (case, challenge)
            body = answer.json()
            assert reason in (body.get("error_description") or body["error"]), (case, body)
            assert "hits" not in body and (token is None or token not in answer.text), case
    logged = secured.audit.read_text()
    assert '"outcome": "rejected"' in logged and "expired at" in logged
    assert secured.issuer.client_token("workshop-agent").split(".")[2] not in logged


def test_a_valid_token_without_a_grant_gets_403(secured: Secured) -> None:
    answer = secured.shape("search", secured.issuer.client_token("intern-agent"), query="coil")
    assert answer.status_code == 403 and 'error="insufficient_scope"' in answer.headers["www-authenticate"]
    assert "no grant" in answer.json()["error_description"]


def test_keys_rotated_by_the_issuer_are_picked_up(secured: Secured) -> None:
    before = secured.issuer.client_token("workshop-agent")
    assert secured.shape("search", before, query="coil").status_code == 200
    secured.issuer.rotate(keep_old=True)
    after = secured.issuer.client_token("workshop-agent")
    assert jwt.get_unverified_header(after)["kid"] != jwt.get_unverified_header(before)["kid"]
    assert secured.shape("search", after, query="coil").status_code == 200  # an unknown key id reads the keys again
    assert secured.shape("search", before, query="coil").status_code == 200  # the old key is still published
    secured.issuer.rotate(keep_old=False)
    time.sleep(2.5)  # jwks_max_age_seconds: the withdrawn key is forgotten
    withdrawn = secured.shape("search", after, query="coil")
    assert withdrawn.status_code == 401 and "does not publish" in withdrawn.json()["error_description"]
    assert secured.shape("search", secured.issuer.client_token("workshop-agent"), query="coil").status_code == 200


def test_each_caller_is_answered_within_its_grant_over_http(secured: Secured) -> None:
    workshop, quality = secured.issuer.client_token("workshop-agent"), secured.issuer.client_token("quality-agent")
    admin = secured.issuer.client_token("admin-agent")
    hits = secured.shape("search", workshop, query="coil", k=20).json()["hits"]
    assert hits and all(hit["uri"].startswith("shop/manuals/") for hit in hits)
    assert all(hit["uri"].startswith("shop/bulletins/") for hit in secured.shape("search", quality, query="coil", k=20).json()["hits"])
    hidden, absent = secured.shape("outline", workshop, uri="shop/bulletins/tsb-7"), secured.shape("outline", workshop, uri="shop/nowhere")
    assert (hidden.status_code, absent.status_code) == (404, 404)
    assert hidden.json()["error"].replace("shop/bulletins/tsb-7", "X") == absent.json()["error"].replace("shop/nowhere", "X")
    outline = secured.shape("outline", workshop, uri="shop/manuals/ignition", depth=3, format="text").text
    assert "tsb-7" not in outline  # the link into a library it may not read is not shown
    assert "tsb-7" in secured.shape("outline", admin, uri="shop/manuals/ignition", depth=3, format="text").text
    assert secured.shape("run_sql", workshop, sql="SELECT count(*) AS n FROM service.work_orders").json()["rows"] == [[4]]
    for sql in ("SELECT * FROM service.parts", "WITH p AS (SELECT * FROM service.parts) SELECT * FROM p", "SELECT * FROM read_csv('/etc/passwd')"):
        refused = secured.shape("run_sql", workshop, sql=sql)
        assert refused.status_code == 403 and "rows" not in refused.json(), (sql, refused.text)
    hidden_table = secured.shape("run_sql", workshop, sql="SELECT * FROM service.parts").json()["error"]
    absent_table = secured.shape("run_sql", workshop, sql="SELECT * FROM service.nowhere").json()["error"]
    assert hidden_table.replace("parts", "X") == absent_table.replace("nowhere", "X")  # a hidden table is not told from a missing one
    assert secured.shape("run_sql", quality, sql="SELECT 1").status_code == 403  # no run-sql capability
    assert secured.shape("cypher", workshop, query="MATCH (n) RETURN count(n) AS n").status_code == 403
    assert secured.shape("cypher", admin, query="MATCH (n:Document) RETURN count(n) AS n").status_code == 200
    assert secured.get("/metrics", workshop).status_code == 403 and secured.get("/metrics", admin).status_code == 200


def test_a_user_signed_in_with_pkce_sees_its_groups_grant(secured: Secured) -> None:
    token = secured.issuer.user_token("notebook", "alice")
    assert jwt.decode(token, options={"verify_signature": False})["sub"] == "alice"
    hits = secured.shape("search", token, query="coil", k=20).json()["hits"]
    assert hits and all(hit["uri"].startswith("shop/bulletins/") for hit in hits)
    entries = [json.loads(line) for line in secured.audit.read_text().splitlines()]
    assert any(entry["subject"] == "alice" and entry["action"] == "search" and entry["grants"] == ["bulletins"] for entry in entries)


def test_the_mcp_client_is_answered_within_its_grant(secured: Secured) -> None:
    token = secured.issuer.client_token("workshop-agent")

    async def main() -> tuple[str, bool, str]:
        async with (
            httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30) as http,
            McpClient(streamable_http_client(f"{secured.base}/mcp", http_client=http)) as client,
        ):
            found = await client.call_tool("search", {"query": "coil", "k": 20, "format": "json"})
            cypher = await client.call_tool("cypher", {"query": "MATCH (n) RETURN count(n) AS n"})
            return found.content[0].text, bool(cypher.is_error), cypher.content[0].text

    hits, refused, reason = anyio.run(main)
    assert all(hit["uri"].startswith("shop/manuals/") for hit in json.loads(hits)["hits"])
    assert refused and "cypher" in reason


def test_warehouse_shapes_show_no_table_outside_the_grant(secured: Secured) -> None:
    workshop, admin = secured.issuer.client_token("workshop-agent"), secured.issuer.client_token("admin-agent")
    granted = {"warehouse.service.vehicles", "warehouse.service.work_orders"}
    for question in ("repeat repair rate", "parts coil revision", "vehicles work orders"):
        answer = secured.shape("table_context", workshop, question=question, k=10).json()
        assert {table["id"] for table in answer["tables"]} <= granted, question
        partners = [join["other"] for table in answer["tables"] for join in table["declared_joins"] + table["learned_joins"]]
        assert all(other.rsplit(".", 1)[0] in granted for other in partners), partners
    assert secured.shape("table", workshop, table="warehouse.service.work_orders").status_code == 200
    hidden, absent = secured.shape("table", workshop, table="warehouse.service.parts"), secured.shape("table", workshop, table="warehouse.service.nowhere")
    assert (hidden.status_code, absent.status_code) == (404, 404)
    path = secured.shape("join_path", workshop, table_a="work_orders", table_b="vehicles").json()
    assert path["found"] and {hop["right"] for hop in path["hops"]} <= granted
    assert secured.shape("join_path", workshop, table_a="work_orders", table_b="parts").status_code == 404
    assert secured.shape("join_path", admin, table_a="work_orders", table_b="parts").json()["found"]
    joins = secured.shape("joins", workshop, format="text").text
    assert "parts" not in joins and "work_orders.vin" in joins
    assert "parts" in secured.shape("joins", admin, format="text").text


def test_document_shapes_count_only_what_the_grant_shows(secured: Secured) -> None:
    workshop, admin = secured.issuer.client_token("workshop-agent"), secured.issuer.client_token("admin-agent")
    links = secured.shape("links", workshop).json()
    assert all(row["source"].startswith("shop/manuals/") and row["target"].startswith("shop/manuals/") for row in links["rows"])
    assert links["resolved"] == len(links["rows"]) < secured.shape("links", admin).json()["resolved"]
    coverage = secured.shape("coverage", workshop, terms=["P0301", "12345-AB"]).json()
    assert coverage["missing"] == [] and all(uri.startswith("shop/manuals/") for row in coverage["found"] for uri in row["uris"])
    recalls = secured.shape("coverage", workshop, terms=["recall"]).json()
    assert recalls["missing"] == ["recall"]  # the recalls library mentions it; this grant does not show it
    assert secured.shape("coverage", admin, terms=["recall"]).json()["missing"] == []


def test_the_audit_command_lists_who_was_refused_and_why(secured: Secured) -> None:
    token = secured.issuer.client_token("workshop-agent")
    assert secured.shape("cypher", token, query="MATCH (n) RETURN count(n) AS n").status_code == 403
    env = clean_env(LAKEGRAPH_STATE_DIR=str(secured.audit.parent.parent))
    listed = run_cli("audit", "--subject", "workshop-agent", "--outcome", "denied", "--json", env=env)
    assert listed.returncode == 0, listed.stderr
    found = json.loads(listed.stdout)
    assert found and found[-1]["action"] == "cypher" and found[-1]["grants"] == ["manuals"] and "capability" in found[-1]["reason"]
    text = run_cli("audit", "--outcome", "rejected", "--last", "3", env=env)
    assert text.returncode == 0 and "rejected" in text.stdout and token not in text.stdout + secured.audit.read_text()


@pytest.mark.parametrize(
    ("grant", "said"),
    [
        ({"groups": ["x"], "libraries": ["shoop/manuals"]}, "library 'shoop/manuals' names no library (configured or loaded: shop)"),
        ({"groups": ["x"], "tables": ["finance"]}, "tables 'finance' match no table the graph holds"),
    ],
)
def test_a_grant_naming_what_does_not_exist_stops_the_start(secured_env: dict[str, str], grant: dict[str, Any], said: str) -> None:
    env = {**secured_env, "LAKEGRAPH_GRANTS": json.dumps({**GRANTS, "typo": grant})}
    assert_one_line_error(run_cli("serve", "--http", "--port", "0", env=env, timeout=60), f"grants.typo: {said}")


def test_oidc_mode_without_an_issuer_is_a_configuration_error(secured_env: dict[str, str]) -> None:
    assert_one_line_error(run_cli("serve", "--http", "--port", "0", env={**secured_env, "LAKEGRAPH_AUTH__ISSUER": ""}, timeout=60), "needs auth.issuer")


def test_themes_bridge_schema_and_freshness_within_a_grant(secured: Secured) -> None:
    workshop, admin = secured.issuer.client_token("workshop-agent"), secured.issuer.client_token("admin-agent")
    themes = secured.shape("themes", workshop).json()
    assert themes["documents"] == 2 and themes["grouped"] + themes["ungrouped"] == 2  # the two manuals
    for view in themes["themes"]:
        assert view["name"] == view["id"] and view["conductance"] is None and not (view["top_targets"] or view["central"] or view["crossovers"])
        members = secured.shape("themes", workshop, theme=view["id"]).json()["members"]
        assert len(members) == view["size"] and all(member["uri"].startswith("shop/manuals/") for member in members)
    everyone = secured.shape("themes", admin).json()
    assert everyone["documents"] > themes["documents"]
    hidden = [view["id"] for view in everyone["themes"] if view["id"] not in {seen["id"] for seen in themes["themes"]}]
    for theme in hidden:
        assert secured.shape("themes", workshop, theme=theme).status_code == 404
    columns = secured.shape("bridge", workshop).json()["bridged"]
    assert columns and all(row["table"] in ("warehouse.service.work_orders", "warehouse.service.vehicles") for row in columns)
    part = secured.shape("bridge", workshop, value="12345-AB").json()
    assert part["columns"] == [] and part["mentions"] and all(row["uri"].startswith("shop/manuals/") for row in part["mentions"])
    assert all(count is None for count in secured.shape("schema", workshop).json()["labels"].values())
    assert all(source["changes"] is None and source["queued"] is None for source in secured.shape("freshness", workshop).json()["freshness"]["sources"])
    assert "count withheld" in secured.shape("schema", admin, format="text").text  # every grant is restricted: only the local mode counts


def test_a_subscriber_may_watch_only_what_it_may_read(secured: Secured) -> None:
    token = secured.issuer.client_token("workshop-agent")

    async def main() -> list[str]:
        refused = []
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30) as http:
            for uri in ("lakegraph://outline/shop/bulletins/tsb-7", "lakegraph://tables/warehouse.service.parts"):
                async with McpClient(streamable_http_client(f"{secured.base}/mcp", http_client=http)) as client:
                    with pytest.raises(MCPError, match="cannot watch"):
                        async with client.listen(resource_subscriptions=[uri]):
                            pass
                async with McpClient(streamable_http_client(f"{secured.base}/mcp", http_client=http), mode="legacy") as old:
                    with pytest.raises(MCPError, match="cannot watch"):
                        await old.session.subscribe_resource(uri)
                refused.append(uri)
            async with McpClient(streamable_http_client(f"{secured.base}/mcp", http_client=http), mode="legacy") as old:
                await old.session.subscribe_resource("lakegraph://outline/shop/manuals/ignition")  # within the grant: watched
                read = json.loads((await old.read_resource("lakegraph://outline/shop/manuals/ignition")).contents[0].text)
                assert all(row["uri"].startswith("shop/manuals/") for row in read["rows"] if row.get("uri"))
        return refused

    assert len(anyio.run(main)) == 2


def test_a_subscriber_hears_only_of_changes_within_its_grant(secured: Secured, house: lakehouse.Lakehouse, driver: Driver, redis_service: LocalRedis) -> None:
    """Two callers watch the same resource (the libraries' outline) as their grants show it: a
    document added where only one of them may look is news to that one alone, on the listen stream
    and on a 2025 session alike — the other is not even told that something moved."""
    writer = DocumentSync(house.settings.with_section("redis", url=redis_service.url), driver, "neo4j")
    tokens = {name: secured.issuer.client_token(f"{name}-agent") for name in ("workshop", "quality")}
    heard: dict[str, list[str]] = {"workshop": [], "quality": [], "workshop 2025": []}
    added = ["bulletins/tsb-watched.md", "manuals/watched.md"]

    def add(relpath: str) -> None:
        (house.library / relpath).write_text(f"# Added {relpath}\n\nWritten while two agents watched.\n")
        assert writer.sync_path("shop", relpath) == "written"

    async def listen(name: str, ready: anyio.Event) -> None:
        async with mcp_listening(secured.base, tokens[name], [LIBRARIES]) as stream:
            ready.set()
            async for event in stream:
                heard[name].append(str(getattr(event, "uri", "")))

    async def legacy(ready: anyio.Event) -> None:
        async def on_message(message: Any) -> None:
            if isinstance(message, ResourceUpdatedNotification):
                heard["workshop 2025"].append(str(message.params.uri))

        async with (
            httpx2.AsyncClient(headers={"Authorization": f"Bearer {tokens['workshop']}"}, timeout=30) as http,
            McpClient(streamable_http_client(f"{secured.base}/mcp", http_client=http), mode="legacy", message_handler=on_message) as client,
        ):
            await client.session.subscribe_resource(LIBRARIES)
            ready.set()
            await anyio.sleep_forever()

    async def until(done: Any) -> None:
        with anyio.fail_after(15):
            while not done():
                await anyio.sleep(0.05)

    async def main() -> None:
        async with anyio.create_task_group() as tasks:
            readies = [anyio.Event() for _ in range(3)]
            tasks.start_soon(listen, "workshop", readies[0])
            tasks.start_soon(listen, "quality", readies[1])
            tasks.start_soon(legacy, readies[2])
            for ready in readies:
                await ready.wait()
            await anyio.sleep(0.5)  # the server reads each watch's links
            await anyio.to_thread.run_sync(add, added[0])
            await until(lambda: heard["quality"])
            await anyio.sleep(2)  # ten notify intervals: anything owed to the workshop would be out
            assert heard["workshop"] == [] and heard["workshop 2025"] == [], heard
            before = len(heard["quality"])
            await anyio.to_thread.run_sync(add, added[1])
            await until(lambda: heard["workshop"] and heard["workshop 2025"])
            await anyio.sleep(2)
            assert len(heard["quality"]) == before, heard
            assert set(heard["workshop"] + heard["workshop 2025"] + heard["quality"]) == {LIBRARIES}
            tasks.cancel_scope.cancel()

    try:
        anyio.run(main)
    finally:
        for relpath in added:
            (house.library / relpath).unlink(missing_ok=True)
            writer.sync_path("shop", relpath)
    subscribed = [json.loads(line) for line in secured.audit.read_text().splitlines() if '"subscribe"' in line]
    assert {entry["client"] for entry in subscribed if entry["outcome"] == "ok"} >= {"workshop-agent", "quality-agent"}


def first_page_event(base: str, token: str) -> dict[str, Any]:
    """The first themes event the page's stream sends this bearer: what the page first shows it."""
    with httpx2.stream("GET", f"{base}/themes/events", headers={"Authorization": f"Bearer {token}"}, timeout=30) as stream:
        for line in stream.iter_lines():
            if line.startswith("data: "):
                return json.loads(line.removeprefix("data: "))
    raise AssertionError("the themes stream ended before its first event")


def test_a_themes_refresh_needs_its_capability(secured: Secured, redis_service: LocalRedis) -> None:
    """Only a grant with `themes-refresh` may ask the workers for a run; the request is a task on
    the broker they read, and the audit names who asked and who was refused."""
    refused = httpx2.post(f"{secured.base}/v1/themes/refresh", headers={"Authorization": f"Bearer {secured.issuer.client_token('workshop-agent')}"}, timeout=30)
    assert refused.status_code == 403 and "'themes-refresh' capability" in refused.json()["error"]
    asked = httpx2.post(f"{secured.base}/v1/themes/refresh", headers={"Authorization": f"Bearer {secured.issuer.client_token('admin-agent')}"}, timeout=30)
    assert asked.status_code == 202, asked.text
    assert take_queued(redis_service.url, asked.json()["task_id"]) == (CHECK_THEMES, {"requested": True})
    # The themes page offers its refresh button to the grant that may use it, and only to it.
    assert [first_page_event(secured.base, secured.issuer.client_token(client))["may_refresh"] for client in ("workshop-agent", "admin-agent")] == [False, True]
    entries = [json.loads(line) for line in secured.audit.read_text().splitlines() if '"themes refresh"' in line]
    assert [(entry["client"], entry["outcome"]) for entry in entries[-2:]] == [("workshop-agent", "denied"), ("admin-agent", "ok")]
