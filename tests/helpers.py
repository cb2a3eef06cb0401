"""Running the real `lakegraph` console script the way a user does, and comparing its answers."""

from __future__ import annotations

import base64
import json
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from worker.commands.shapes import flag

if TYPE_CHECKING:
    from shapes.spec import ShapeSpec

LAKEGRAPH = str(Path(sys.executable).parent / "lakegraph")
VOLATILE = {"freshness", "milliseconds", "as_of", "age_seconds"}  # what differs between two calls a moment apart
CELERY_WORKER = [sys.executable, "-m", "celery", "-A", "worker.celery_app", "worker", "--concurrency", "2", "--loglevel", "warning"]


@asynccontextmanager
async def mcp_listening(base: str, token: str, uris: list[str], timeout: float = 30) -> AsyncIterator[Any]:
    """The official MCP client's listen stream on the resources `uris` of the server at `base`,
    as the bearer of `token` (imported here: most tests never speak MCP)."""
    import httpx2
    from mcp.client import Client
    from mcp.client.streamable_http import streamable_http_client

    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=timeout) as http,
        Client(streamable_http_client(f"{base}/mcp", http_client=http)) as client,
        client.listen(resource_subscriptions=uris) as stream,
    ):
        yield stream


def take_queued(redis_url: str, task_id: str) -> tuple[str, dict[str, Any]]:
    """The task `task_id` waiting on the broker at `redis_url` (Celery's default queue) as its name
    and keyword arguments, taken off it: no worker reads that broker in the test asking."""
    from worker.runtime import redis_server

    broker = redis_server.client(redis_url, 5)
    for raw in cast(list, broker.lrange("celery", 0, -1)):
        message = json.loads(raw)
        if message["headers"]["id"] == task_id:
            broker.lrem("celery", 1, raw)
            return message["headers"]["task"], json.loads(base64.b64decode(message["body"]))[1]
    raise AssertionError(f"task {task_id} is not on the broker at {redis_url}")


def start_worker(env: dict[str, str]) -> subprocess.Popen:
    """A real Celery worker (2 pool processes) in a session of its own, so it can be crashed whole."""
    return subprocess.Popen(CELERY_WORKER, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)


def crash(process: subprocess.Popen) -> None:
    """SIGKILL to the process and its children (a prefork pool too): a crash, not a shutdown."""
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def clean_env(**extra: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("LAKEGRAPH_")}
    env.update(extra)
    return env


def run_cli(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None, timeout: float = 180) -> subprocess.CompletedProcess:
    return subprocess.run([LAKEGRAPH, *args], capture_output=True, text=True, env=env or clean_env(), cwd=cwd, timeout=timeout)


def assert_one_line_error(result: subprocess.CompletedProcess, *fragments: str) -> None:
    """A user-facing failure: non-zero exit, no traceback, one line naming the problem."""
    assert result.returncode != 0, result.stdout
    assert "Traceback" not in result.stderr, result.stderr
    lines = [line for line in result.stderr.strip().splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


def pubsub_topic(project: str, topic_id: str, subscription_id: str) -> tuple[Any, str, str]:
    """A new topic and its subscription in the emulator PUBSUB_EMULATOR_HOST names: (a publisher,
    the topic path, the subscription's id)."""
    from google.cloud import pubsub_v1

    from worker.pubsub_stream import create_topic_with_subscription

    publisher = pubsub_v1.PublisherClient()
    return publisher, create_topic_with_subscription(publisher, project, topic_id, subscription_id), subscription_id


def stable(answer: Any) -> Any:
    """The answer without what differs between two calls a moment apart (freshness, timings, and
    the id of the snapshot a serving process keeps for the cursor's walk)."""
    if isinstance(answer, dict):
        return {
            key: cursor_without_snapshot(value) if key == "next_cursor" and value else stable(value) for key, value in answer.items() if key not in VOLATILE
        }
    return [stable(item) for item in answer] if isinstance(answer, list) else answer


def cursor_without_snapshot(cursor: str) -> dict:
    state = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    return {key: value for key, value in state.items() if key != "s"}


def cli_args(spec: ShapeSpec, params: dict[str, Any]) -> list[str]:
    """The parameters as the shape's command line, by the same rules the command is made with."""
    args: list[str] = []
    for name in spec.arguments:
        value = params.get(name)
        args += [str(item) for item in value] if isinstance(value, list) else [] if value is None else [str(value)]
    for name, value in params.items():
        if name in spec.arguments:
            continue
        option = flag(name)
        if isinstance(value, bool):
            args += [option] if value else []
        elif isinstance(value, list):
            args += [part for item in value for part in (option, str(item))]
        else:
            args += [option, json.dumps(value) if isinstance(value, dict) else str(value)]
    return args
