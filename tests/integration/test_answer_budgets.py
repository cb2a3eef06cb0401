"""Answers sized for an agent on real size: the PowerShell documentation estate (3,088 real pages)
and a generated library of 3,000 documents (10,000 under --full) in one graph. Every shape at its
defaults stays within its budget, and walking any answer's cursor reassembles exactly the
unbounded answer."""

from __future__ import annotations

import json
import re
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

import anyio
import jsonschema
import pytest
from mcp.client import Client
from mcp_types import ResourceLink
from neo4j import Driver

from shapes.outline import MAX_NODES, outline
from shapes.serving.change_feed import ChangeFeed, stream_client
from shapes.serving.identity import Caller
from shapes.serving.mcp_server import LakegraphMCP
from shapes.serving.service import Shapes
from shapes.spec import MAX_TOKENS
from shapes.spec.budget import rows_of, with_rows
from shapes.spec.exceptions import Denied, NotFound
from shapes.spec.registry import SPECS
from tests.benchmarks.corpus import generate
from tests.conftest import Neo4jService
from tests.graph_dump import wipe
from tests.helpers import clean_env, cli_args, run_cli
from tests.paging import reassembled, walk
from worker.documents.loader import load
from worker.documents.sync import DocumentSync
from worker.graph.schema import Label
from worker.graph.setup import apply_schema
from worker.settings import Settings
from worker.shared.grants import EVERYTHING, Grant
from worker.themes.runner import ThemeRunner

pytestmark = pytest.mark.timeout(1200)
GENERATED, FULL_GENERATED = 3_000, 10_000
CMDLETS = [
    "Get-Process",
    "Get-ChildItem",
    "Set-Location",
    "Invoke-Command",
    "Start-Job",
    "Get-Help",
    "Where-Object",
    "ForEach-Object",
    "Select-Object",
    "Get-Content",
    "Out-File",
    "Import-Module",
    "New-Item",
    "Remove-Item",
    "No-SuchCmdlet",
]


@pytest.fixture(scope="module")
def estate(
    neo4j_service: Neo4jService, driver: Driver, powershell_docs: Path, tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Shapes:
    wipe(driver)
    bench = tmp_path_factory.mktemp("bench")
    generated = FULL_GENERATED if request.config.getoption("--full") else GENERATED
    generate(bench, generated)
    settings: Settings = neo4j_service.settings.with_section(
        "documents",
        libraries=[{"name": "ps", "root": powershell_docs}, {"name": "bench", "root": bench}],
    )
    apply_schema(settings, driver, "neo4j")
    report = load(DocumentSync(settings, driver, "neo4j"))
    assert report.documents > generated + 3000
    ThemeRunner(settings, driver, "neo4j").run(force=True)
    return Shapes(settings, driver, "neo4j")


def largest_theme(shapes: Shapes) -> str:
    return shapes.ask("themes", max_tokens=MAX_TOKENS).result.themes[0].id


# Calls an agent makes with nothing but the required parameters (the shapes a docs-only graph offers).
AT_DEFAULTS: list[tuple[str, dict[str, Any]]] = [
    ("outline", {}),
    ("outline", {"uri": "ps"}),
    ("outline", {"uri": "bench"}),
    ("outline", {"uri": "bench/manuals/engine"}),
    ("outline", {"uri": "ps", "depth": 20}),
    ("search", {"query": "process"}),
    ("search", {"query": "coil", "k": 200}),
    ("coverage", {"terms": CMDLETS}),
    ("links", {}),
    ("links", {"broken": True}),
    ("themes", {}),
    ("theme_changes", {}),
    ("schema", {}),
    ("freshness", {}),
    ("cypher", {"query": "MATCH (d:Document) RETURN d.uri AS uri, d.displayName AS name ORDER BY uri"}),
    ("joins", {}),
]
# Calls whose whole answer fits MAX_TOKENS, walked a small page at a time.
WALKS: list[tuple[str, dict[str, Any]]] = [
    ("outline", {"uri": "ps", "depth": 2}),
    ("outline", {"uri": "bench", "depth": 2}),
    ("outline", {"uri": "ps/docs-conceptual", "depth": 3}),
    ("search", {"query": "coil", "k": 200}),
    ("coverage", {"terms": CMDLETS}),
    ("links", {"under": "ps/reference/7.4/Microsoft.PowerShell.Core"}),
    ("links", {"broken": True}),
    ("themes", {}),
    ("themes", {"level": 1}),
    ("schema", {}),
    ("cypher", {"query": "MATCH (d:Document) WHERE d.uri STARTS WITH 'bench/recalls' RETURN d.uri AS uri ORDER BY uri"}),
]


@pytest.mark.parametrize(("name", "params"), AT_DEFAULTS, ids=[f"{name}{sorted(params)}" for name, params in AT_DEFAULTS])
def test_every_shape_at_its_defaults_fits_its_budget(estate: Shapes, name: str, params: dict[str, Any]) -> None:
    answer = estate.ask(name, **params)
    budget = estate.settings.shapes.answer_tokens * 4
    assert len(json.dumps(answer.data(), default=str)) <= budget and len(answer.text()) <= budget
    assert answer.page.total >= answer.page.shown > 0 or answer.page.total == 0
    if answer.page.truncated:
        assert answer.page.next_cursor and ("cursor=" in answer.text())


@pytest.mark.parametrize(("name", "params"), AT_DEFAULTS, ids=[f"{name}{sorted(params)}" for name, params in AT_DEFAULTS])
def test_every_shape_as_the_command_line_prints_it_fits_its_budget(estate: Shapes, neo4j_service: Neo4jService, name: str, params: dict[str, Any]) -> None:
    """What a user or an agent reads: the command's text, and its --json, measured as printed."""
    spec, budget = SPECS[name], estate.settings.shapes.answer_tokens * 4
    env = clean_env(**neo4j_service.env())
    for printed in ([], ["--json"]):
        result = run_cli(spec.command, *cli_args(spec, params), *printed, env=env)
        assert result.returncode == 0, result.stderr
        assert len(result.stdout.rstrip("\n")) <= budget, f"{spec.command} {' '.join(printed)}: {len(result.stdout)} characters printed"
    assert json.loads(result.stdout)["page"]["budget_tokens"] == estate.settings.shapes.answer_tokens


def test_an_outline_over_budget_reads_like_a_table_of_contents(estate: Shapes) -> None:
    began = time.monotonic()
    answer = estate.ask("outline", uri="ps", depth=20)  # the whole tree is over 50,000 rows
    assert time.monotonic() - began < 5, "read a level at a time, never past MAX_NODES nodes"
    assert answer.result.shown_depth is not None and "not read" in answer.text()
    read = outline(estate.driver, estate.database, "ps", 20, EVERYTHING)  # what the answers show or summarise
    assert answer.page.total == len(read.rows) and read.shown_depth == answer.result.shown_depth
    assert len([row for row in read.rows if row.kind not in ("Link", "Unresolved")]) <= MAX_NODES
    answer = estate.ask("outline", uri="ps", depth=20, max_tokens=1000)  # too big for this budget
    assert answer.page.overview and answer.page.total == len(read.rows)
    rows = answer.result.rows
    assert rows[0].uri == "ps" and max(row.depth for row in rows) >= 1
    summarised = [row for row in rows if "below" in row.note]
    assert summarised and all(any(word in row.note for word in ("document", "section", "folder", "link")) for row in summarised)
    drilled = estate.ask("outline", uri=summarised[0].uri, depth=20)  # its URI drills in
    assert drilled.result.rows[0].uri == summarised[0].uri


def fixed(result: Any, fields: tuple[str, ...]) -> dict[str, Any]:
    """The answer without its rows, and without a query's timing (it differs from call to call)."""
    return {key: value for key, value in asdict(with_rows(result, fields, [])).items() if key != "milliseconds"}


@pytest.mark.parametrize("tokens", [400, 3000])
@pytest.mark.parametrize(("name", "params"), WALKS, ids=[f"{name}{sorted(params.items())}" for name, params in WALKS])
def test_walking_the_cursor_reassembles_the_unbounded_answer(estate: Shapes, name: str, params: dict[str, Any], tokens: int) -> None:
    if name == "themes" and params.get("level") == 1:
        params = {"theme": largest_theme(estate)}
    whole = estate.ask(name, **params, max_tokens=MAX_TOKENS)
    assert not whole.page.truncated and not whole.page.overview
    fields = SPECS[name].rows
    pages = walk(estate, name, **params, max_tokens=tokens)
    assert reassembled(pages) == rows_of(whole.result, fields)  # every row once, in the same order
    assert len(pages) > 1 or len(json.dumps(whole.data(), default=str)) <= tokens * 4  # cut when it must be
    for page in pages:  # the fixed part (counts, the query, the run) is on every page
        assert fixed(page.result, fields) == fixed(whole.result, fields)
        assert page.page.total == whole.page.total


def test_on_the_real_estate_every_answer_validates_against_its_tools_output_schema(estate: Shapes) -> None:
    """Through the official SDK client (in-process transport) on the PowerShell estate: each call at
    its defaults answers structuredContent that its tool's outputSchema accepts, with resource links
    to what it names."""
    served = LakegraphMCP(estate, ChangeFeed(estate, stream_client(estate.settings), estate.settings.serve.notify_interval), local=True)
    served.sync_tools()

    async def check() -> None:
        async with Client(served.server) as client:
            schemas = {tool.name: tool.output_schema for tool in (await client.list_tools()).tools}
            assert {"outline", "search", "coverage", "links", "themes", "theme_changes", "schema", "cypher", "freshness"} <= set(schemas)
            for name, params in AT_DEFAULTS:
                if name not in schemas:  # a warehouse shape: this graph holds documents only
                    continue
                result = await client.call_tool(name, params)
                assert not result.is_error, (name, params, result.content)
                jsonschema.validate(result.structured_content, schemas[name], cls=jsonschema.Draft202012Validator)
                if name in ("outline", "search"):
                    assert any(isinstance(block, ResourceLink) for block in result.content), (name, params)

    anyio.run(check)


# Grants over the real estate's own folders (and one spanning both libraries).
REAL_GRANTS = [
    Grant(("conceptual",), ("ps/docs-conceptual",)),
    Grant(("core",), ("ps/7.4/microsoft.powershell.core",)),  # URIs are the paths lowercased
    Grant(("mixed",), ("bench/manuals", "ps/5.1")),
]
PLACES = f"MATCH (n:{Label.LIBRARY}|{Label.FOLDER}|{Label.DOCUMENT}|{Label.SECTION}) RETURN n.uri AS uri"
URI_LIKE = re.compile(r"(?<![\w/#.-])(?:ps|bench)(?:[/#][^\s\"'«»,;()\[\]]*)?")


@pytest.mark.parametrize("grant", REAL_GRANTS, ids=[grant.names[0] for grant in REAL_GRANTS])
def test_on_the_real_estate_a_grant_shows_nothing_outside_it(estate: Shapes, grant: Grant) -> None:
    """Every call at its defaults, asked twice within a grant over the real PowerShell estate: no
    place outside the grant appears in the JSON or the text, the two answers are one, and each
    fits its budget."""
    places = {row["uri"] for row in estate.driver.execute_query(PLACES, database_="neo4j").records}
    caller = Caller("reader", "", grant)
    budget = estate.settings.shapes.answer_tokens * 4
    assert len(estate.ask("outline", caller, "test").result.rows) > len(grant.libraries)  # the grant's places exist, with folders or documents below
    for name, params in AT_DEFAULTS:
        if name == "cypher":  # a capability this grant does not give
            with pytest.raises(Denied):
                estate.ask(name, caller, "test", **params)
            continue
        try:
            first, again = (estate.ask(name, caller, "test", **params) for _ in range(2))
        except NotFound:  # a place outside the grant is not found, like an absent one
            assert not grant.sees_uri(params.get("uri", "")), (name, params)
            continue
        shown = json.dumps(first.data(), default=str) + "\n" + first.text()
        named = {found.rstrip(".:") for found in URI_LIKE.findall(shown)} & places
        outside = sorted(uri for uri in named if not grant.sees_uri(uri) and not any(prefix.startswith(uri + "/") for prefix in grant.libraries))
        assert outside == [] or outside == [params.get("uri")], (name, params, outside[:5])
        assert _stable(first) == _stable(again), (name, params)
        assert len(first.json()) <= budget, (name, params)


def _stable(answer: Any) -> str:
    """The answer without what moves between two calls a moment apart (freshness, the cursor's snapshot)."""
    data = {key: value for key, value in answer.data().items() if key != "freshness"}
    data["page"] = {key: value for key, value in data["page"].items() if key != "next_cursor"}
    return json.dumps(data, sort_keys=True, default=str)
