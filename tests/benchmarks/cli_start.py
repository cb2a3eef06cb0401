"""How long a `lakegraph` command takes from the shell (not a test): `--version`, `--help`, a
shape call and a refused call, against `python -c pass` measured in the same run.

    python -m tests.benchmarks.cli_start [--calls 15]

Starts its own local Neo4j + GDS in a temporary state folder for the shape call. Targets (p50):
`--version` and `--help` under 0.3 s, a shape call under 0.6 s.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.benchmarks.stats import percentile
from tests.helpers import LAKEGRAPH, clean_env
from worker.graph.connection import connect
from worker.graph.setup import apply_schema
from worker.runtime import neo4j_server
from worker.settings import load_settings

TARGETS = {"--version": 300, "--help": 300, "outline --depth 1": 600, "outline --depth=-1 (refused)": 300}


def seconds(command: list[str], env: dict[str, str], calls: int) -> list[float]:
    samples = []
    for _ in range(calls + 2):  # two untimed: the file cache
        began = time.perf_counter()
        subprocess.run(command, env=env, capture_output=True, check=False)
        samples.append((time.perf_counter() - began) * 1000)
    return samples[2:]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=15)
    args = parser.parse_args()
    state = Path(tempfile.mkdtemp(prefix="lakegraph-cli-bench-"))
    settings = load_settings(state_dir=str(state))
    running = neo4j_server.start(settings)
    try:
        settings = settings.with_section("neo4j", uri=running.uri, password=running.password)
        driver, where = connect(settings)
        with driver:
            apply_schema(settings, driver, where.database)
        env = clean_env(LAKEGRAPH_STATE_DIR=str(state), LAKEGRAPH_NEO4J__URI=running.uri, LAKEGRAPH_NEO4J__PASSWORD=running.password)
        floor = percentile(seconds([sys.executable, "-c", "pass"], env, args.calls), 0.5)
        print(f"baseline: python -c pass p50 {floor:.0f} ms\n")
        print(f"{'command':<30}{'p50 ms':>8}{'p95 ms':>8}  {'p50 / baseline':>14}  target p50")
        commands = {
            "--version": ["--version"],
            "--help": ["--help"],
            "outline --depth 1": ["outline", "--depth", "1"],
            "outline --depth=-1 (refused)": ["outline", "--depth=-1"],
        }
        for name, words in commands.items():
            samples = seconds([LAKEGRAPH, *words], env, args.calls)
            p50, p95 = percentile(samples, 0.5), percentile(samples, 0.95)
            verdict = "met" if p50 < TARGETS[name] else "MISSED"
            print(f"{name:<30}{p50:>8.0f}{p95:>8.0f}  {p50 / floor:>13.1f}x  < {TARGETS[name]} ms: {verdict}")
    finally:
        neo4j_server.stop(settings)


if __name__ == "__main__":
    main()
