"""Fixtures of the integration tests that serve the tests' lakehouse: the lakehouse itself (a
library, a DuckDB warehouse, a query log and a glossary, loaded, themes run), the environment a
command or a server needs for it, and a `lakegraph serve --mcp http --http` on it."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from neo4j import Driver

from tests import lakehouse
from tests.conftest import Neo4jService
from tests.graph_dump import wipe
from tests.helpers import LAKEGRAPH, clean_env
from tests.integration.test_cli_via_server import LOCAL
from tests.integration.test_mcp_http import Served
from worker.graph import schema
from worker.runtime.processes import stop_pid
from worker.themes.runner import ThemeRunner


@pytest.fixture
def graph(driver: Driver) -> Driver:
    """The test's graph, empty but for its schema (constraints and indexes)."""
    wipe(driver)
    schema.apply(driver, "neo4j")
    return driver


@pytest.fixture(scope="module")
def house(neo4j_service: Neo4jService, driver: Driver, tmp_path_factory: pytest.TempPathFactory) -> lakehouse.Lakehouse:
    built = lakehouse.build(neo4j_service.settings, driver, tmp_path_factory.mktemp("lakehouse"))
    ThemeRunner(built.settings, driver, "neo4j").run(force=True)
    return built


def lakehouse_env(neo4j_service: Neo4jService, house: lakehouse.Lakehouse, state_dir: Path, **more: str) -> dict[str, str]:
    """The environment of a command or a server on the tests' lakehouse, with `more` settings."""
    return clean_env(
        **neo4j_service.env(),
        LAKEGRAPH_STATE_DIR=str(state_dir),
        LAKEGRAPH_WAREHOUSE__DUCKDB_PATH=str(house.warehouse),
        LAKEGRAPH_WAREHOUSE__GLOSSARY_PATH=str(house.settings.warehouse.glossary_path),
        LAKEGRAPH_DOCUMENTS__LIBRARIES=json.dumps([{"name": "shop", "root": str(house.library)}]),
        LAKEGRAPH_LOG_LEVEL="warning",
        **more,
    )


def oidc_env(neo4j_service: Neo4jService, house: lakehouse.Lakehouse, state_dir: Path, issuer: str, resource: str, grants: dict, **more: str) -> dict[str, str]:
    """`lakehouse_env` for a server in oidc mode: tokens of `issuer` for `resource`, `grants` as settings."""
    return lakehouse_env(
        neo4j_service,
        house,
        state_dir,
        LAKEGRAPH_AUTH__MODE="oidc",
        LAKEGRAPH_AUTH__ISSUER=issuer,
        LAKEGRAPH_AUTH__RESOURCE_URL=resource,
        LAKEGRAPH_GRANTS=json.dumps(grants),
        **more,
    )


@pytest.fixture(scope="module")
def env(house: lakehouse.Lakehouse, neo4j_service: Neo4jService, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    # LOCAL: the CLI's own answers; test_cli_mcp_and_http_give_the_same_answer also hands each call to the server
    return lakehouse_env(neo4j_service, house, tmp_path_factory.mktemp("parity-state"), **LOCAL)


@pytest.fixture(scope="module")
def served(env: dict[str, str]) -> Iterator[Served]:
    with serving(env) as server:
        yield server


@contextmanager
def serving(env: dict[str, str]) -> Iterator[Served]:
    """`lakegraph serve` with MCP over HTTP and the HTTP API, on a port of its own; its static
    token when it serves in token mode ("" in oidc mode, where callers bring the issuer's)."""
    process = subprocess.Popen([LAKEGRAPH, "serve", "--mcp", "http", "--http", "--port", "0"], env=env, stdout=subprocess.PIPE, text=True)
    try:
        first = process.stdout.readline() if process.stdout else ""
        assert first.startswith("MCP"), first  # what it said instead is in the test's captured stderr
        token = Path(env["LAKEGRAPH_STATE_DIR"]) / "serve" / "token"
        yield Served(process, first.split()[1].removesuffix("/mcp"), token.read_text().strip() if token.exists() else "")
    finally:
        stop_pid(process.pid, timeout=10)
        process.wait(10)
