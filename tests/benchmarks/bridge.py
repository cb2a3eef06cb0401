"""Bridge benchmark (not a test): a full bridge build and the extra cost it puts on every edit.

    python -m tests.benchmarks.bridge [--docs 10000] [--values 100000] [--edits 100]

Starts its own local Neo4j + GDS in a temporary state folder, generates a library (about 10
sections per document; every tenth section names two part numbers) and a DuckDB warehouse whose
parts.part_numbers holds `--values` part numbers (a key column) and whose parts.fitted carries
them in the field (a foreign key: a second column of the same values). Prints:
- the full bridge build (scan, values, every value's mentions over the whole library), against
  the same library's document load in the same run (target < 30 s at 10k x 100k);
- one document edit with the bridge in place, against the same edits before any value existed —
  the difference is the bridge's cost per edit (target < 20 ms at 100k values); and the one-off
  reload of the edit side's matcher after the values changed;
- a refresh with nothing changed, and one after a single new part number appears.
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from pathlib import Path

import duckdb

from tests.benchmarks.corpus import generate, relpath
from tests.benchmarks.stats import percentile
from worker.bridge.refresh import BridgeRefresh
from worker.documents.loader import load
from worker.documents.sync import DocumentSync
from worker.graph.connection import connect
from worker.graph.setup import apply_schema
from worker.runtime import neo4j_server
from worker.settings import load_settings
from worker.warehouse.sync import WarehouseSync


def part_number(index: int) -> str:
    return f"PN-{index:06d}"


def plant_part_numbers(root: Path, docs: int, values: int, rng: random.Random) -> int:
    """Every tenth section of every document names two part numbers; returns how many were planted."""
    planted = 0
    for index in range(docs):
        path = root / relpath(index)
        sections = path.read_text().split("\n\n")
        for position in range(2, len(sections), 10):
            sections[position] += f" Fit {part_number(rng.randrange(values))} or {part_number(rng.randrange(values))}."
            planted += 2
        path.write_text("\n\n".join(sections))
    return planted


def make_part_numbers(path: Path, values: int) -> None:
    """parts.part_numbers (a key of `values` part numbers) and parts.fitted (3 rows per value, a foreign key)."""
    with duckdb.connect(str(path)) as con:
        con.execute("CREATE SCHEMA IF NOT EXISTS parts")
        con.execute("CREATE TABLE parts.part_numbers (part_no VARCHAR PRIMARY KEY, name VARCHAR)")
        con.execute("CREATE TABLE parts.fitted (id INTEGER PRIMARY KEY, part_no VARCHAR REFERENCES parts.part_numbers (part_no))")
        con.execute(f"INSERT INTO parts.part_numbers SELECT printf('PN-%06d', i), 'part ' || i FROM range({values}) t(i)")
        con.execute(f"INSERT INTO parts.fitted SELECT i, printf('PN-%06d', (i * 7919) % {values}) FROM range({values * 3}) t(i)")


def timed_edits(sync: DocumentSync, root: Path, indexes: list[int], token: str) -> list[float]:
    samples = []
    for index in indexes:
        path = root / relpath(index)
        path.write_text(path.read_text() + f"\n\n## Note {token}\nFit {part_number(index)} now.\n")
        began = time.perf_counter()
        sync.sync_path("bench", relpath(index))
        samples.append((time.perf_counter() - began) * 1000)
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=10_000)
    parser.add_argument("--values", type=int, default=100_000)
    parser.add_argument("--edits", type=int, default=100)
    parser.add_argument("--heap", default="2g")
    args = parser.parse_args()
    rng = random.Random(5)

    work = Path(tempfile.mkdtemp(prefix="lakegraph-bridge-bench-"))
    library, warehouse = work / "library", work / "warehouse.duckdb"
    sections = generate(library, args.docs)
    planted = plant_part_numbers(library, args.docs, args.values, rng)
    make_part_numbers(warehouse, args.values)
    print(f"{args.docs} documents ({sections} sections, {planted} part numbers named); {args.values} part numbers, {args.values * 3} fitted rows")
    settings = load_settings(
        state_dir=str(work / "state"),
        neo4j={"heap_size": args.heap, "pagecache_size": "1g"},
        documents={"libraries": [{"name": "bench", "root": str(library)}]},
        warehouse={"engine": "duckdb", "duckdb_path": str(warehouse), "sql_dialect": "duckdb"},
        bridge={"max_values": 2 * args.values},  # room for the part number added at the end
    )
    neo4j = neo4j_server.start(settings)
    try:
        settings = settings.with_section("neo4j", uri=neo4j.uri, password=neo4j.password)
        driver, where = connect(settings)
        database = where.database
        apply_schema(settings, driver, database)
        WarehouseSync(settings, driver, database).sync_all()
        loaded = load(DocumentSync(settings, driver, database))
        print(f"documents loaded in {loaded.seconds:.1f} s ({loaded.sections_per_second:,.0f} sections/s)\n")

        edited = rng.sample(range(args.docs), 2 * args.edits)
        sync = DocumentSync(settings, driver, database)
        timed_edits(sync, library, edited[:10], "warm")  # plans and caches warm
        before = timed_edits(sync, library, edited[: args.edits], "before")

        began = time.perf_counter()
        build = BridgeRefresh(settings, driver, database).refresh()
        build_seconds = time.perf_counter() - began
        print(f"{'figure':<34}{'value':>14}  baseline (same run)")
        verdict = "met" if build_seconds < 30 else "MISSED"
        print(
            f"{'full bridge build':<34}{build_seconds:>12.1f} s  {build_seconds / loaded.seconds:.2f}x the document load; "
            f"{build.values_added} column values, {build.mentions} mentions of {build.mentions_for} values (< 30 s: {verdict})"
        )
        print(f"{'':<34}{'':>14}  " + ", ".join(f"{stage} {seconds:.1f} s" for stage, seconds in build.stage_seconds.items()))

        began = time.perf_counter()
        timed_edits(sync, library, edited[args.edits : args.edits + 1], "reload")
        print(f"{'first edit after values changed':<34}{(time.perf_counter() - began) * 1000:>11.0f} ms  (reloads the matcher of every value once)")
        after = timed_edits(sync, library, edited[args.edits + 1 : 2 * args.edits], "after")
        extra50 = percentile(after, 0.5) - percentile(before, 0.5)
        extra_mean = statistics.mean(after) - statistics.mean(before)
        verdict = "met" if max(extra50, extra_mean) < 20 else "MISSED"
        print(
            f"{'one edit, bridge in place':<34}{percentile(after, 0.5):>11.1f} ms  p50 (p95 {percentile(after, 0.95):.1f}); without values "
            f"p50 {percentile(before, 0.5):.1f} (p95 {percentile(before, 0.95):.1f}): extra p50 {extra50:+.1f} ms, mean {extra_mean:+.1f} ms "
            f"(< 20 ms: {verdict})"
        )

        began = time.perf_counter()
        idle_report = BridgeRefresh(settings, driver, database).refresh()
        idle = time.perf_counter() - began
        print(f"{'refresh, nothing changed':<34}{idle:>12.1f} s  {idle / build_seconds:.2f}x the full build")
        print(f"{'':<34}{'':>14}  " + ", ".join(f"{stage} {seconds:.1f} s" for stage, seconds in idle_report.stage_seconds.items()))
        with duckdb.connect(str(warehouse)) as con:
            con.execute(f"INSERT INTO parts.part_numbers VALUES ('{part_number(args.values)}', 'new part')")
        path = library / relpath(edited[0])
        path.write_text(path.read_text() + f"\n\nFit {part_number(args.values)} from now on.\n")
        sync.sync_path("bench", relpath(edited[0]))
        began = time.perf_counter()
        one = BridgeRefresh(settings, driver, database).refresh()
        seconds = time.perf_counter() - began
        print(f"{'refresh, one new part number':<34}{seconds:>12.1f} s  {seconds / build_seconds:.2f}x the full build ({one.mentions} mentions written)")
    finally:
        neo4j_server.stop(settings)


if __name__ == "__main__":
    main()
