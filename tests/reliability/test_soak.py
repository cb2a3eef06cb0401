"""A soak of the whole product: `lakegraph demo` (Neo4j + GDS, Redis, worker, beat, watcher, the
Pub/Sub subscriber, MCP + HTTP) while documents are edited continuously, audit events are
published to Pub/Sub continuously, and agents query over MCP — all on loopback, bounded in time
(60 s; 10 minutes under `--full`) and count. It reports throughput, errors, edit → searchable lag
and the memory of every process in the first and last third of the run, and fails on any error,
any lost or double-counted event, lag that degrades, or memory that keeps growing."""

from __future__ import annotations

import json
import random
import statistics
import time
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import anyio
import httpx2
import psutil
import pytest
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client

from tests.integration.test_demo import Demo, start_demo, stop_demo
from worker.demo.query_log import ANALYSTS, QUERIES, entry
from worker.runtime.processes import free_port, wait_until

pytestmark = [pytest.mark.timeout(1200), pytest.mark.reliability, pytest.mark.slow]
SHORT_SECONDS, FULL_SECONDS = 60, 600
EDIT_EVERY, PUBLISH_EVERY, AGENT_PAUSE, SAMPLE_EVERY = 0.5, 0.1, 0.1, 2.0
VISIBLE_WITHIN = 10.0
PROJECT = "lakegraph-demo"
RUNS = "MATCH (r:QueryRun) RETURN count(r) AS n"
FAILED = "MATCH (p:Problem {kind: 'failed'}) RETURN count(p) AS n"
ROLES = (  # (role, a piece of its command line), first match wins
    ("neo4j", "CommunityEntryPoint"),
    ("redis", "redis-server"),
    ("worker", "celery -A worker.celery_app worker"),
    ("beat", "celery -A worker.celery_app:beat_app beat"),
    ("watch", "-m worker.watch"),
    ("subscribe", "worker.cli subscribe"),
    ("serve", "worker.cli serve"),
    ("supervisor", "lakegraph demo"),
)
PYTHON_ROLES = ("worker", "beat", "watch", "subscribe", "serve", "supervisor")


@dataclass
class Soak:
    """What happened, each with the monotonic time it happened at."""

    began: float = field(default_factory=time.monotonic)
    lags: list[tuple[float, float]] = field(default_factory=list)  # (at, edit → searchable seconds)
    calls: list[tuple[float, float]] = field(default_factory=list)  # (at, MCP call seconds)
    memory: list[tuple[float, dict[str, float]]] = field(default_factory=list)  # (at, MB per role)
    published: list[float] = field(default_factory=list)
    errors: dict[str, int] = field(default_factory=lambda: defaultdict(int))

    def window(self, rows: list, third: int, duration: float) -> list:
        low, high = self.began + duration * third / 3, self.began + duration * (third + 1) / 3
        return [row for row in rows if low <= (row[0] if isinstance(row, tuple) else row) < high]


def rss_by_role(root: psutil.Process) -> dict[str, float]:
    found: dict[str, float] = defaultdict(float)
    for process in [root, *root.children(recursive=True)]:
        try:
            command = " ".join(process.cmdline())
            rss = process.memory_info().rss / 2**20
        except psutil.Error:
            continue
        role = next((name for name, piece in ROLES if piece in command), None)
        if role is not None:
            found[role] += rss
    return dict(found)


def graph_count(demo: Demo, query: str) -> int:
    answer = httpx2.post(f"{demo.base}/v1/cypher", json={"query": query}, headers={"Authorization": f"Bearer {demo.token}"}, timeout=30)
    answer.raise_for_status()
    return answer.json()["rows"][0][0]


async def edit_continuously(demo: Demo, soak: Soak, until: float) -> None:
    """Rewrite one document's last line with a new token, then time until search finds it."""
    documents = sorted((demo.folder / "library").rglob("*.md"))
    originals = {path: path.read_text() for path in documents}
    headers = {"Authorization": f"Bearer {demo.token}"}
    async with httpx2.AsyncClient(headers=headers, timeout=30) as http:
        number = 0
        while time.monotonic() < until:
            path = documents[number % len(documents)]
            token = f"soaktok{number}"
            path.write_text(f"{originals[path]}\nSoak note {token}.\n")
            written = time.monotonic()
            while True:
                hits = (await http.get(f"{demo.base}/v1/search", params={"query": token})).json()["hits"]
                if hits:
                    soak.lags.append((written, time.monotonic() - written))
                    break
                if time.monotonic() - written > VISIBLE_WITHIN:
                    soak.errors["edit not searchable in 10 s"] += 1
                    break
                await anyio.sleep(0.02)
            number += 1
            await anyio.sleep(max(0.0, EDIT_EVERY - (time.monotonic() - written)))


async def publish_continuously(soak: Soak, until: float, futures: list) -> None:
    from google.cloud import pubsub_v1

    publisher = pubsub_v1.PublisherClient()
    topic = publisher.topic_path(PROJECT, "soak-audit")
    rng = random.Random(11)
    number = 0
    while time.monotonic() < until:
        log = entry(f"soak_job_{number:06d}", rng.choice(QUERIES), rng.choice(ANALYSTS), datetime.now(UTC))
        futures.append(publisher.publish(topic, json.dumps(log).encode()))
        soak.published.append(time.monotonic())
        number += 1
        await anyio.sleep(PUBLISH_EVERY)


async def agent(demo: Demo, soak: Soak, until: float, seed: int) -> None:
    """An agent's loop of tool calls: search, outline, table context, join path, freshness."""
    rng = random.Random(seed)
    calls = [
        ("search", {"query": "P0301 misfire", "expand": ["cylinder 1 misfire"]}),
        ("outline", {"uri": "technical-library/bulletins/tsb-24-017", "depth": 2}),
        ("table_context", {"question": "comeback ratio by part"}),
        ("join_path", {"table_a": "work_orders", "table_b": "parts"}),
        ("freshness", {}),
    ]
    headers = {"Authorization": f"Bearer {demo.token}"}
    async with httpx2.AsyncClient(headers=headers, timeout=60) as http, Client(streamable_http_client(f"{demo.base}/mcp", http_client=http)) as client:
        while time.monotonic() < until:
            name, arguments = rng.choice(calls)
            began = time.monotonic()
            try:
                result = await client.call_tool(name, arguments)
            except Exception as error:  # counted, and the soak goes on: an agent would retry
                soak.errors[f"MCP {name}: {type(error).__name__}"] += 1
                continue
            soak.calls.append((began, time.monotonic() - began))
            if result.is_error:
                soak.errors[f"MCP {name} answered an error"] += 1
            await anyio.sleep(AGENT_PAUSE)


async def sample_memory(demo: Demo, soak: Soak, until: float) -> None:
    root = psutil.Process(demo.process.pid)
    while time.monotonic() < until:
        soak.memory.append((time.monotonic(), rss_by_role(root)))
        await anyio.sleep(SAMPLE_EVERY)


@pytest.fixture
def soak_demo(pubsub_host: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Demo]:
    monkeypatch.setenv("PUBSUB_EMULATOR_HOST", pubsub_host)
    from google.cloud import pubsub_v1

    publisher, subscriber = pubsub_v1.PublisherClient(), pubsub_v1.SubscriberClient()
    topic = publisher.topic_path(PROJECT, "soak-audit")
    publisher.create_topic(name=topic)
    subscriber.create_subscription(name=subscriber.subscription_path(PROJECT, "soak-audit-sub"), topic=topic)
    subscriber.close()
    demo = start_demo(
        tmp_path / "lakegraph-demo",
        free_port(),
        LAKEGRAPH_PUBSUB__PROJECT=PROJECT,
        LAKEGRAPH_PUBSUB__SUBSCRIPTION="soak-audit-sub",
        LAKEGRAPH_PUBSUB__EMULATOR_HOST=pubsub_host,
    )
    try:
        yield demo
    finally:
        if demo.process.poll() is None:
            stop_demo(demo)


def _p(values: list[float], quantile: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[quantile - 1] if len(values) > 1 else (values or [0.0])[0]


def test_soak(soak_demo: Demo, full: bool) -> None:
    demo = soak_demo
    duration = FULL_SECONDS if full else SHORT_SECONDS
    runs_before, failed_before = graph_count(demo, RUNS), graph_count(demo, FAILED)
    soak, futures = Soak(), []
    until = soak.began + duration

    async def main() -> None:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(edit_continuously, demo, soak, until)
            tasks.start_soon(publish_continuously, soak, until, futures)
            tasks.start_soon(agent, demo, soak, until, 1)
            tasks.start_soon(agent, demo, soak, until, 2)
            tasks.start_soon(sample_memory, demo, soak, until)

    anyio.run(main)
    for future in futures:
        future.result(timeout=60)
    expected = runs_before + len(futures)
    wait_until(lambda: graph_count(demo, RUNS) >= expected, 60, f"{len(futures)} published audit events absorbed")
    time.sleep(2.0)
    runs_after, failed_after = graph_count(demo, RUNS), graph_count(demo, FAILED)

    first, last = 0, 2
    report = [f"\nsoak {duration} s: {len(soak.lags)} edits, {len(futures)} audit events published, {len(soak.calls)} MCP calls"]
    figures = {}
    for label, third in (("start", first), ("end", last)):
        lags = [lag for _, lag in soak.window(soak.lags, third, duration)]
        calls = [seconds for _, seconds in soak.window(soak.calls, third, duration)]
        memory = soak.window(soak.memory, third, duration)
        mean_rss = {role: statistics.fmean(sample[1].get(role, 0.0) for sample in memory) for role in memory[0][1]}
        span = duration / 3
        figures[label] = {"lag_p50": _p(lags, 50), "lag_p95": _p(lags, 95), "call_p95": _p(calls, 95), "rss": mean_rss}
        report.append(
            f"  {label:5} third: edits {len(lags) / span:.1f}/s, audit events {len(soak.window(soak.published, third, duration)) / span:.1f}/s, "
            f"MCP {len(calls) / span:.1f} calls/s (p50 {_p(calls, 50) * 1000:.0f} ms, p95 {_p(calls, 95) * 1000:.0f} ms), "
            f"edit → searchable p50 {_p(lags, 50) * 1000:.0f} ms, p95 {_p(lags, 95) * 1000:.0f} ms"
        )
        report.append("        RSS MB: " + ", ".join(f"{role} {mb:.0f}" for role, mb in sorted(mean_rss.items())))
    report.append(
        f"  errors: {dict(soak.errors) or 0}; audit events counted {runs_after - runs_before} of {len(futures)}; parked failures {failed_after - failed_before}"
    )
    print("\n".join(report))

    assert dict(soak.errors) == {}
    assert runs_after - runs_before == len(futures)  # every event counted, none twice
    assert failed_after == failed_before
    start, end = figures["start"], figures["end"]
    assert end["lag_p95"] < max(3 * start["lag_p95"], 1.5), "edit → searchable lag degrades"
    for role in PYTHON_ROLES:  # the JVM's and Redis's RSS are reported; Python's must not trend up
        if role in start["rss"]:
            assert end["rss"][role] <= start["rss"][role] * 1.25 + 30, f"{role} memory grows: {start['rss'][role]:.0f} → {end['rss'][role]:.0f} MB"
