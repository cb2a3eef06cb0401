"""Parity from the registry: every shape, called with the same parameters from the CLI, over MCP
and over HTTP, gives the same answer — the same rows, page and cursor — and refuses the same bad
input in the same words. Then every `--json` command of `lakegraph`, walked from the CLI's own
command tree, prints exactly one JSON document."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import anyio
import click
import pytest
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client

from shapes.spec import ShapeSpec
from shapes.spec.registry import SPECS
from tests import lakehouse
from tests.helpers import LAKEGRAPH, cli_args, run_cli, stable
from tests.integration.test_cli_via_server import LOCAL, served_calls
from tests.integration.test_mcp_http import Served, _tool_text
from worker.cli import cli

pytestmark = pytest.mark.timeout(600)
# One call per shape on the test lakehouse; a small max_tokens where the answer has rows to cut.
SAMPLES: dict[str, dict[str, Any]] = {
    "outline": {"uri": "shop/manuals", "depth": 3, "max_tokens": 300},
    "search": {"query": "coil", "k": 5, "max_tokens": 250},
    "coverage": {"terms": ["P0301", "U0140", "P9999"], "under": "shop"},
    "bridge": {"value": "12345-AB", "max_tokens": 200},
    "links": {"broken": False, "max_tokens": 200},
    "themes": {"level": 0},
    "theme_changes": {"since": "2000-01-01"},
    "table_context": {"question": "repeat repair rate", "k": 2},
    "table": {"table": "warehouse.service.work_orders"},
    "join_path": {"table_a": "vehicles", "table_b": "parts", "max_hops": 4},
    "joins": {"min_confidence": 0.0, "max_tokens": 200},
    "run_sql": {"sql": "SELECT vin, model FROM service.vehicles ORDER BY vin"},
    "schema": {"max_tokens": 300},
    "cypher": {"query": "MATCH (t:Table) WHERE t.name STARTS WITH $p RETURN t.id AS id ORDER BY id", "parameters": {"p": "w"}},
    "freshness": {},
}
# One refusal per shape that has a bound or a type to break.
REFUSALS: dict[str, dict[str, Any]] = {
    "outline": {"depth": 21},
    "search": {"query": "coil", "k": 0},
    "table_context": {"question": "x", "k": 51},
    "table": {"table": " "},
    "join_path": {"table_a": "a", "table_b": "b", "max_hops": 7},
    "joins": {"min_confidence": 2},
    "themes": {"level": 10},
    "freshness": {"max_tokens": 5},
    "bridge": {"value": "P0301", "cursor": "not one a page gave"},
}
REPORT_BY_EXIT_CODE = {("doctor",), ("neo4j", "status")}  # their exit code says an engine is off; their JSON says which


def over_http(served: Served, spec: ShapeSpec, params: dict[str, Any]) -> tuple[int, Any]:
    async def call() -> tuple[int, Any]:
        async with served.client() as http:
            if spec.method == "POST":
                response = await http.post(f"{served.base}{spec.path}", json=params)
            else:
                query = [
                    (name, str(item).lower() if isinstance(item, bool) else str(item))
                    for name, value in params.items()
                    for item in (value if isinstance(value, list) else [value])
                ]
                response = await http.get(f"{served.base}{spec.path}", params=query)
            return response.status_code, response.json()

    return anyio.run(call)


def over_mcp(served: Served, name: str, params: dict[str, Any]) -> tuple[bool, str]:
    async def call() -> tuple[bool, str]:
        async with served.client() as http, Client(streamable_http_client(f"{served.base}/mcp", http_client=http)) as client:
            return await _tool_text(client, name, {**params, "format": "json"})

    return anyio.run(call)


def test_every_shape_has_a_sample_call() -> None:
    assert set(SAMPLES) == set(SPECS)


@pytest.mark.parametrize("name", list(SPECS))
def test_cli_mcp_and_http_give_the_same_answer(name: str, served: Served, env: dict[str, str]) -> None:
    spec, params = SPECS[name], SAMPLES[name]
    done = run_cli(spec.command, *cli_args(spec, params), "--json", env=env)
    assert done.returncode == 0, done.stderr
    by_cli = json.loads(done.stdout)
    failed, text = over_mcp(served, name, params)
    assert not failed, text
    status, by_http = over_http(served, spec, params)
    assert status == 200, by_http
    assert stable(by_cli) == stable(json.loads(text)) == stable(by_http)
    handed_before = served_calls(served.base, served.token, name)
    handed = run_cli(spec.command, *cli_args(spec, params), "--json", env={key: value for key, value in env.items() if key not in LOCAL})
    assert handed.returncode == 0 and stable(json.loads(handed.stdout)) == stable(by_cli), handed.stderr
    assert served_calls(served.base, served.token, name) == handed_before + 1, "the command did not hand its call to the server"
    assert by_cli["page"]["shown"] > 0
    if by_cli["page"]["next_cursor"]:  # the cursor one surface gives continues on another
        following = {**params, "cursor": by_cli["page"]["next_cursor"]}
        status, rest = over_http(served, spec, following)
        assert status == 200 and rest["page"]["offset"] == (0 if by_cli["page"]["overview"] else by_cli["page"]["shown"])
        failed, text = over_mcp(served, name, following)
        assert not failed and stable(json.loads(text)) == stable(rest)


@pytest.mark.parametrize("name", list(REFUSALS))
def test_cli_mcp_and_http_refuse_a_bad_parameter_in_the_same_words(name: str, served: Served, env: dict[str, str]) -> None:
    spec, params = SPECS[name], REFUSALS[name]
    done = run_cli(spec.command, *cli_args(spec, params), env=env)
    assert done.returncode != 0 and done.stderr.startswith("error: "), done.stdout + done.stderr
    by_cli = done.stderr.removeprefix("error: ").strip()
    failed, by_mcp = over_mcp(served, name, params)
    status, by_http = over_http(served, spec, params)
    assert failed and status == 400
    by_mcp = by_mcp.removeprefix(f"Error executing tool {name}: ")  # how the MCP SDK frames a tool's refusal
    assert by_cli == by_http["error"] == by_mcp, (by_cli, by_http, by_mcp)
    assert by_cli.startswith(f"{name}: ")


def json_commands(group: click.Group, prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    context = click.Context(group)
    for name in group.list_commands(context):  # the shape commands are made when first listed
        command = group.get_command(context, name)
        if isinstance(command, click.Group):
            yield from json_commands(command, (*prefix, name))
        elif any(param.name == "as_json" for param in command.params):
            yield (*prefix, name)


def test_every_json_command_prints_one_json_document(house: lakehouse.Lakehouse, env: dict[str, str], tmp_path: Path) -> None:
    queries = tmp_path / "queries.jsonl"
    queries.write_text(json.dumps({"id": "1", "sql": "SELECT * FROM service.work_orders w JOIN service.vehicles v ON w.vin = v.vin"}) + "\n")
    spare = tmp_path / "spare"
    spare.mkdir()
    (spare / "note.md").write_text("# Note\n\nA page of its own.\n")
    ordered: dict[tuple[str, ...], list[list[str]]] = {  # in this order: the spare library is loaded, then forgotten
        ("config",): [[]],
        ("doctor",): [[]],
        ("errors",): [[]],
        ("audit",): [[]],
        ("neo4j", "status"): [[]],
        ("load", "docs"): [[], [f"spare={spare}"]],
        ("forget",): [["spare"]],
        ("load", "warehouse"): [[]],
        ("extract-joins",): [["--queries", str(queries), "--dialect", "duckdb"]],
        ("themes",): [[], ["--refresh"], ["--refresh", "--rebuild"]],
    }
    reads = {(spec.command,): [cli_args(spec, SAMPLES[name])] for name, spec in SPECS.items() if spec.command != "themes"}
    assert set(json_commands(cli)) == set(ordered) | set(reads), "a --json command without an invocation here, or one gone"

    def run(command: tuple[str, ...], args: list[str]) -> None:
        done = subprocess.run([LAKEGRAPH, *command, *args, "--json"], env=env, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
        assert done.returncode == 0 or command in REPORT_BY_EXIT_CODE, (command, args, done.stderr)
        json.loads(done.stdout)  # exactly one document: anything before or after it fails here

    for command, calls in ordered.items():
        for args in calls:
            run(command, args)
    with ThreadPoolExecutor(max_workers=2) as pool:  # the shapes only read: two at a time
        for finished in [pool.submit(run, command, args) for command, calls in reads.items() for args in calls]:
            finished.result()
