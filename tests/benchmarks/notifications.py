"""Edit -> notification (not a test): how long after a file is written a subscribed MCP client hears
that its outline changed, on the whole stack a user runs, against how long the graph itself takes
to show the edit, measured in the same run.

    python -m tests.benchmarks.notifications [--edits 15] [--subscribers 1 10 100]

Starts `lakegraph up --serve` (Neo4j + GDS, the embedded Redis, the Celery worker, the file
watcher and a serve process) on a temporary state folder with the tests' small library, and a
second `lakegraph serve --mcp http` replica beside it; the subscribers (official SDK clients,
`subscriptions/listen`) are split between the two replicas and all watch one document's outline.
Each edit appends a section to that document's file. For each edit: the graph's time is when a
direct Cypher read (polled every 10 ms) first sees the new section; a subscriber's time is when
its notification arrives. Goal: notification p95 under 1 s on this machine.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import tempfile
import time
from pathlib import Path

import anyio

from shapes.serving import running_server
from shapes.serving.resources import outline_uri
from tests import lakehouse
from tests.benchmarks.stats import percentile
from tests.helpers import LAKEGRAPH, clean_env, mcp_listening
from worker.graph.connection import connect
from worker.graph.schema import Label
from worker.runtime.processes import PidRecord, stop_pid, wait_until
from worker.settings import load_settings

RELPATH = "manuals/ignition.md"
DOCUMENT = "shop/manuals/ignition"
SECTION_SHOWN = f"MATCH (s:{Label.SECTION} {{doc_uri: $uri}}) WHERE s.displayName = $name RETURN count(s) AS n"
GAP_SECONDS = 1.5  # between edits: each one's notifications are apart from the next one's
WARM_UP_EDITS = 3  # untimed: the worker's first writes plan their queries (over a second each, in the graph itself)


def start(command: list[str], env: dict[str, str], ready: str) -> tuple[subprocess.Popen, str]:
    """The process, once it printed the line holding `ready` (and that line)."""
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    for line in process.stdout or ():
        if ready in line:
            return process, line
    raise RuntimeError(f"{' '.join(command)} exited before {ready!r}")


async def measure(bases: list[str], token: str, subscribers: int, edits: int, library: Path, settings: object) -> tuple[list[float], list[float]]:
    driver, _ = connect(settings)  # type: ignore[arg-type]
    uri = outline_uri(DOCUMENT)
    heard: list[list[float]] = [[] for _ in range(subscribers)]
    graph: list[float] = []
    written: list[float] = []

    async def subscriber(index: int, ready: anyio.Event) -> None:
        async with mcp_listening(bases[index % len(bases)], token, [uri], timeout=60) as stream:
            ready.set()
            async for _ in stream:
                heard[index].append(time.monotonic())

    def graph_shows(name: str) -> float:
        deadline = time.monotonic() + 60
        while not driver.execute_query(SECTION_SHOWN, uri=DOCUMENT, name=name).records[0]["n"]:
            if time.monotonic() > deadline:
                raise RuntimeError(f"the graph did not show section {name!r} within 60 s")
            time.sleep(0.01)
        return time.monotonic()

    async with anyio.create_task_group() as tasks:
        readies = [anyio.Event() for _ in range(subscribers)]
        for index in range(subscribers):
            tasks.start_soon(subscriber, index, readies[index])
        for ready in readies:
            await ready.wait()
        await anyio.sleep(2.0)  # the replicas have read the watched outline once
        for index in range(subscribers):
            heard[index].clear()
        for step in range(-WARM_UP_EDITS, edits):
            name = f"Bench step {step} {time.time_ns()}"
            path = library / RELPATH
            began = time.monotonic()
            path.write_text(path.read_text() + f"## {name}\nMeasured.\n")
            shown = await anyio.to_thread.run_sync(graph_shows, name) - began
            await anyio.sleep(GAP_SECONDS)
            if step < 0:
                for times in heard:
                    times.clear()
                continue
            written.append(began)
            graph.append(shown)
        tasks.cancel_scope.cancel()
    driver.close()
    latencies = []
    for times in heard:
        for began, ending in zip(written, [*written[1:], float("inf")], strict=True):
            after = [moment for moment in times if began <= moment < ending]
            if after:
                latencies.append(after[0] - began)
    missing = subscribers * edits - len(latencies)
    if missing:
        print(f"  {missing} of {subscribers * edits} (edit, subscriber) pairs heard nothing")
    return latencies, graph


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--edits", type=int, default=15)
    parser.add_argument("--subscribers", type=int, nargs="+", default=[1, 10, 100])
    parser.add_argument("--each", action="store_true", help="also print every latency, in ms")
    args = parser.parse_args()
    state = Path(tempfile.mkdtemp(prefix="lakegraph-notify-bench-"))
    library = state / "library"
    for relpath, text in lakehouse.DOCUMENTS.items():
        (library / relpath).parent.mkdir(parents=True, exist_ok=True)
        (library / relpath).write_text(text)
    env = clean_env(
        LAKEGRAPH_STATE_DIR=str(state / "state"),
        LAKEGRAPH_DOCUMENTS__LIBRARIES=json.dumps([{"name": "shop", "root": str(library)}]),
        LAKEGRAPH_SERVE__PORT="0",
        LAKEGRAPH_LOG_LEVEL="warning",
    )
    settings = load_settings(state_dir=str(state / "state"))
    up, _ = start([LAKEGRAPH, "up", "--serve"], env, "ready in")
    replica = None
    try:
        subprocess.run([LAKEGRAPH, "load", "docs"], env=env, check=True, capture_output=True)
        wait_until(running_server.address_file(settings).exists, 60, "serve published its address")
        found = PidRecord.read(running_server.address_file(settings))
        assert found is not None, "the serve process of `up --serve` is not running"
        first = found.address
        replica, line = start([LAKEGRAPH, "serve", "--mcp", "http", "--port", "0"], env, "MCP ")
        second = line.split()[1].removesuffix("/mcp")
        token = (state / "state" / "serve" / "token").read_text().strip()
        print(f"{'subscribers':>11} {'graph p50':>10} {'notify p50':>11} {'notify p95':>11} {'p50 / graph':>12}  goal p95 < 1 s")
        for count in args.subscribers:
            latencies, graph = anyio.run(measure, [first, second], token, count, args.edits, library, settings)
            g50, n50, n95 = percentile(graph, 0.5), percentile(latencies, 0.5), percentile(latencies, 0.95)
            if args.each:
                print(
                    "  graph:",
                    " ".join(f"{value * 1000:.0f}" for value in graph),
                    "| notified:",
                    " ".join(f"{value * 1000:.0f}" for value in sorted(latencies)),
                )
            print(f"{count:>11} {g50 * 1000:>8.0f}ms {n50 * 1000:>9.0f}ms {n95 * 1000:>9.0f}ms {n50 / g50:>11.2f}x  {'met' if n95 < 1 else 'MISSED'}")
    finally:
        if replica is not None:
            stop_pid(replica.pid, timeout=10)
        stop_pid(up.pid, timeout=30)
        up.wait(30)


if __name__ == "__main__":
    main()
