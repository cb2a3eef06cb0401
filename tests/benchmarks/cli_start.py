"""How long a `lakegraph` command takes from the shell (not a test): `--version`, `--help`, a
shape call and a refused call, against `python -c pass` measured in the same run; then the same
shape call handed to a running `serve --http` (shapes/serving/running_server.py).

    python -m tests.benchmarks.cli_start [--calls 15]

Each command alternates with `python -c pass`, its baseline. Starts its own local Neo4j + GDS in
a temporary state folder, with the tests' small lakehouse loaded (a library of a few documents),
for the shape call. Targets (p50):
`--version` and `--help` under 0.3 s, a shape call under 0.6 s.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from shapes.serving import running_server
from tests import lakehouse
from tests.benchmarks.stats import percentile
from tests.helpers import LAKEGRAPH, clean_env
from worker.graph.connection import connect
from worker.runtime import neo4j_server
from worker.runtime.processes import stop_pid, wait_until
from worker.settings import load_settings

TARGETS = {"--version": 300, "--help": 300, "outline --depth 1": 600, "outline --depth=-1 (refused)": 300, "outline --depth 1 (serve --http up)": 600}


def seconds(command: list[str], env: dict[str, str], calls: int) -> tuple[list[float], list[float]]:
    """The command's times and `python -c pass`'s, taken alternately so both see the same machine
    (a busy two-core machine moves both by half; their ratio moves far less)."""
    floor, samples = [], []
    for index in range(calls + 2):  # two untimed: the file cache
        for sink, words in ((floor, [sys.executable, "-c", "pass"]), (samples, command)):
            began = time.perf_counter()
            subprocess.run(words, env=env, capture_output=True, check=False)
            if index >= 2:
                sink.append((time.perf_counter() - began) * 1000)
    return samples, floor


def report(name: str, samples: list[float], floor: list[float]) -> None:
    p50, p95, base = percentile(samples, 0.5), percentile(samples, 0.95), percentile(floor, 0.5)
    verdict = "met" if p50 < TARGETS[name] else "MISSED"
    print(f"{name:<36}{p50:>8.0f}{p95:>8.0f}  {base:>11.0f} ms  {p50 / base:>9.1f}x  < {TARGETS[name]} ms: {verdict}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=15)
    args = parser.parse_args()
    state = Path(tempfile.mkdtemp(prefix="lakegraph-cli-bench-"))
    settings = load_settings(state_dir=str(state))
    running = neo4j_server.start(settings)
    try:
        settings = settings.with_section("neo4j", uri=running.uri, password=running.password)
        driver, _ = connect(settings)
        (state / "lakehouse").mkdir()
        with driver:
            lakehouse.build(settings, driver, state / "lakehouse")
        env = clean_env(LAKEGRAPH_STATE_DIR=str(state), LAKEGRAPH_NEO4J__URI=running.uri, LAKEGRAPH_NEO4J__PASSWORD=running.password)
        print(f"{'command':<36}{'p50 ms':>8}{'p95 ms':>8}  {'python -c pass':>14}  {'p50 / pass':>10}  target p50")
        commands = {
            "--version": ["--version"],
            "--help": ["--help"],
            "outline --depth 1": ["outline", "--depth", "1"],
            "outline --depth=-1 (refused)": ["outline", "--depth=-1"],
        }
        for name, words in commands.items():
            report(name, *seconds([LAKEGRAPH, *words], env, args.calls))
        server = subprocess.Popen([LAKEGRAPH, "serve", "--http", "--port", "0"], env=env, stdout=subprocess.DEVNULL)
        try:
            wait_until(running_server.address_file(settings).exists, 60, "serve --http published its address")
            report("outline --depth 1 (serve --http up)", *seconds([LAKEGRAPH, "outline", "--depth", "1"], env, args.calls))
        finally:
            stop_pid(server.pid, timeout=10)
            server.wait(10)
    finally:
        neo4j_server.stop(settings)


if __name__ == "__main__":
    main()
