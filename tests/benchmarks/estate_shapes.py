"""Shapes on a large real estate (not a test): the PowerShell-Docs corpus loaded under many library
names, and the shapes whose cost used to grow with the estate — deep outlines, a subtree's links,
coverage — timed in-process against a `RETURN 1` round trip measured in the same run.

    python -m tests.benchmarks.estate_shapes [--copies 3] [--calls 30] [--heap 2g]

`--copies 32` is the 100,000-document tier (98,816 documents, about 2.1M sections): its load takes
tens of minutes on two cores. Starts its own local Neo4j + GDS in a temporary state folder.
Targets (p95): every figure below 1 s whatever the copies, outline depth 2 at the root, a
subtree's links and coverage under 100 ms.
"""

from __future__ import annotations

import argparse
import tempfile
from collections.abc import Callable
from pathlib import Path

from shapes.links import KEPT_LISTINGS
from shapes.service import Shapes
from shapes.versioned import Versioned
from tests.benchmarks.stats import percentile, timed
from tests.corpora import unpack_powershell_docs
from worker.components import Components
from worker.documents.loader import load
from worker.graph.setup import apply_schema
from worker.runtime import neo4j_server
from worker.settings import load_settings

TERMS = [
    "Get-Process",
    "Invoke-Command",
    "Set-Location",
    "about_Scopes",
    "New-PSSession",
    "Get-ChildItem",
    "Write-Host",
    "Start-Job",
    "Test-Path",
    "No-SuchCmdlet",
]
SUBTREE = "reference/7.4/microsoft.powershell.core"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--copies", type=int, default=3)
    parser.add_argument("--calls", type=int, default=30)
    parser.add_argument("--heap", default="2g")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="lakegraph-estate-bench-"))
    corpus = unpack_powershell_docs(work)
    names = [f"ps{index:02d}" for index in range(1, args.copies + 1)]
    settings = load_settings(
        state_dir=str(work / "state"),
        neo4j={"heap_size": args.heap},
        documents={"libraries": [{"name": name, "root": str(corpus)} for name in names]},
    )
    neo4j = neo4j_server.start(settings)
    try:
        settings = settings.with_section("neo4j", uri=neo4j.uri, password=neo4j.password)
        with Components.open(settings) as components:
            apply_schema(settings, components.driver, components.database)
            report = load(components.documents)
            print(
                f"{report.documents:,} documents, {report.sections:,} sections loaded in {report.seconds:.0f} s ({report.sections_per_second:,.0f} sections/s)"
            )
            shapes = Shapes(settings, components.driver, components.database)
            floor = percentile(timed(lambda: components.driver.execute_query("RETURN 1", database_=components.database), args.calls, warmup=3), 0.95)
            last = names[-1]
            calls: dict[str, Callable[[], object]] = {
                "outline, the libraries, depth 2": lambda: shapes.ask("outline", depth=2),
                "outline, the libraries, depth 20": lambda: shapes.ask("outline", depth=20),
                f"outline {last}, depth 20": lambda: shapes.ask("outline", uri=last, depth=20),
                "links under one folder": lambda: shapes.ask("links", under=f"{last}/{SUBTREE}"),
                "links --broken under one folder": lambda: shapes.ask("links", broken=True, under=f"{last}/{SUBTREE}"),
                f"coverage of {len(TERMS)} terms in one library": lambda: shapes.ask("coverage", terms=TERMS, under=f"{last}/"),
                f"coverage of {len(TERMS)} terms, everywhere": lambda: shapes.ask("coverage", terms=TERMS),
                "search, k=10": lambda: shapes.ask("search", query="remote session"),
            }
            print(f"baseline: RETURN 1 round trip p95 {floor:.1f} ms")

            def uncached() -> None:  # the links listing as the first call after a change computes it
                shapes.links.listings = Versioned(KEPT_LISTINGS)

            for name, call in calls.items():
                p95 = percentile(timed(call, args.calls, warmup=3, before=uncached), 0.95)
                print(f"{name:45s} p95 {p95:8.1f} ms  ({p95 / floor:,.0f}x the round trip)")
    finally:
        neo4j_server.stop(settings)


if __name__ == "__main__":
    main()
