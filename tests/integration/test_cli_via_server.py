"""A read command hands its call to a running `lakegraph serve --http` with the same settings and
prints that server's answer — the same text, JSON and refusals as answering itself — and answers
by itself when the server is gone, killed, started with other settings or asks another token.
The server's own call counter (/metrics) shows which process answered."""

from __future__ import annotations

import json
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest
from neo4j import Driver

from tests import lakehouse
from tests.conftest import Neo4jService
from tests.helpers import LAKEGRAPH, clean_env, run_cli, stable
from worker.runtime.processes import stop_pid, wait_until

pytestmark = pytest.mark.timeout(300)
LOCAL = {"LAKEGRAPH_SERVE__CLI_VIA_SERVER": "false"}  # the command answers by itself


@pytest.fixture(scope="module")
def env(neo4j_service: Neo4jService, driver: Driver, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    house = lakehouse.build(neo4j_service.settings, driver, tmp_path_factory.mktemp("lakehouse"))
    return clean_env(
        **neo4j_service.env(),
        LAKEGRAPH_STATE_DIR=str(tmp_path_factory.mktemp("via-server-state")),
        LAKEGRAPH_WAREHOUSE__DUCKDB_PATH=str(house.warehouse),
        LAKEGRAPH_LOG_LEVEL="warning",
    )


def served_calls(base: str, token: str, shape: str, outcome: str = "ok") -> float:
    """A server's count of `shape` calls with `outcome` (0 before the first)."""
    text = httpx2.get(f"{base}/metrics", headers={"Authorization": f"Bearer {token}"}, timeout=30).text
    series = f'lakegraph_shape_calls_total{{outcome="{outcome}",shape="{shape}"}} '
    return next((float(line.removeprefix(series)) for line in text.splitlines() if line.startswith(series)), 0.0)


class Server:
    def __init__(self, env: dict[str, str]) -> None:
        self.process = subprocess.Popen([LAKEGRAPH, "serve", "--http", "--port", "0"], env=env, stdout=subprocess.PIPE, text=True)
        first = self.process.stdout.readline() if self.process.stdout else ""
        assert first.startswith("HTTP API"), first
        self.base = first.split()[2].removesuffix("/v1/...")
        self.record = Path(env["LAKEGRAPH_STATE_DIR"]) / "serve" / "address.json"
        wait_until(self.record.exists, 30, "the server's address published")  # by its app's startup, just after these lines
        self.token = (Path(env["LAKEGRAPH_STATE_DIR"]) / "serve" / "token").read_text().strip()

    def calls(self, shape: str, outcome: str = "ok") -> float:
        return served_calls(self.base, self.token, shape, outcome)

    def stop(self, sig: signal.Signals = signal.SIGTERM) -> None:
        self.process.send_signal(sig)
        self.process.wait(timeout=20)


@pytest.fixture
def server(env: dict[str, str]) -> Iterator[Server]:
    started = Server(env)
    try:
        yield started
    finally:
        stop_pid(started.process.pid, timeout=10)
        started.process.wait(10)


def without_freshness(text: str) -> str:
    """The answer's text without its freshness line, whose ages move between two calls."""
    return "\n".join(line for line in text.splitlines() if not line.startswith("freshness:"))


def test_the_server_answers_a_read_command_as_the_command_would(server: Server, env: dict[str, str]) -> None:
    assert json.loads(server.record.read_text())["pid"] == server.process.pid
    for args in (["outline", "shop", "--depth", "2"], ["search", "coil", "-k", "3", "--under", "shop/manuals"], ["links", "--broken"]):
        shape = args[0]
        before = server.calls(shape)
        served, local = run_cli(*args, env=env), run_cli(*args, env={**env, **LOCAL})
        assert served.returncode == local.returncode == 0, served.stderr + local.stderr
        assert without_freshness(served.stdout) == without_freshness(local.stdout) and served.stdout.strip()
        served_json, local_json = run_cli(*args, "--json", env=env), run_cli(*args, "--json", env={**env, **LOCAL})
        assert stable(json.loads(served_json.stdout)) == stable(json.loads(local_json.stdout))
        assert server.calls(shape) == before + 2, f"{shape}: the server did not answer the command"


def test_a_refusal_only_the_graph_knows_reads_the_same_from_the_server(server: Server, env: dict[str, str]) -> None:
    before = server.calls("outline", "refused")
    served, local = run_cli("outline", "shop/no-such-page", env=env), run_cli("outline", "shop/no-such-page", env={**env, **LOCAL})
    assert served.returncode == local.returncode == 1
    assert served.stderr == local.stderr and "no library, folder, document or section has the URI" in served.stderr
    assert served.stdout == local.stdout == ""
    assert server.calls("outline", "refused") == before + 1


def test_other_settings_or_another_token_answer_by_themselves(server: Server, env: dict[str, str]) -> None:
    before = server.calls("outline")
    paged = run_cli("outline", "shop", "--depth", "3", "--max-tokens", "200", env={**env, "LAKEGRAPH_SHAPES__ANSWER_TOKENS": "300"})
    wrong_token = run_cli("outline", "shop", "--depth", "2", env={**env, "LAKEGRAPH_SERVE__TOKEN": "not-the-token"})
    assert paged.returncode == wrong_token.returncode == 0, paged.stderr + wrong_token.stderr
    assert "cursor=" in paged.stdout and "[Library]" in wrong_token.stdout
    assert server.calls("outline") == before


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_a_stopped_or_killed_server_is_not_asked(sig: signal.Signals, env: dict[str, str]) -> None:
    server = Server(env)
    server.stop(sig)
    assert server.record.exists() == (sig == signal.SIGKILL)  # a graceful stop withdraws the record
    answered = run_cli("outline", "shop", "--depth", "1", env=env)
    assert answered.returncode == 0 and "[Library]" in answered.stdout, answered.stderr
    assert not server.record.exists()  # a dead server's record is removed by the first command that reads it
