"""Document-graph benchmark (not a test): full load, edit-to-search latency, no-op and delete costs,
and PDF and Word against Markdown throughput on one library rendered each way.

    python -m tests.benchmarks.documents [--docs 10000] [--edits 50] [--rendered 300] [--burst 2000] [--formats-only | --real-only | --cold]

Starts its own local Neo4j + GDS and embedded Redis in a temporary state folder, generates a
corpus (about 10 sections and 5 cross-document links per document) and prints each figure with
a ratio against a baseline measured in the same run:
- full load vs loading the same documents one file per transaction (the watcher's path);
- one edit through watcher + Celery vs applying that edit by a full reload;
- reconciles repairing 200 changed files vs repairing 200 one file per transaction;
- loading the rendered library as PDFs and as Word documents vs loading it as Markdown
  (tests/rendered_library.py);
- beat's and the watcher's resident memory vs the Celery worker's;
- a burst of saves to distinct files, applied by two workers vs one;
- with --real-only: the real PowerShell estate loaded once and as three libraries (about 9,000
  pages), and it and the rendered PDFs reloaded unchanged and with every file touched, vs their
  first load;
- with --cold: what a user's first load costs: a fresh Neo4j on the default settings (memory sized
  for the configured libraries), the real estate as three libraries loaded into it, vs the same load
  again on that server, warm (the graph wiped between).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
from pypdf import PdfReader

from tests import rendered_library
from tests.benchmarks.corpus import generate, relpath
from tests.benchmarks.stats import percentile
from tests.graph_dump import wipe
from worker.celery_app import create_app
from worker.documents.loader import load, reconcile
from worker.documents.rules import DocumentRules
from worker.documents.source import build
from worker.documents.sync import DocumentSync
from worker.graph import schema
from worker.graph.connection import connect
from worker.runtime import neo4j_server, redis_server
from worker.runtime.processes import wait_until
from worker.settings import load_settings

SEARCH = "CALL db.index.fulltext.queryNodes('document_text', $q) YIELD node RETURN count(node) AS hits"
BURST_DONE = """
CALL db.index.fulltext.queryNodes('document_text', $q) YIELD node
RETURN count(DISTINCT coalesce(node.doc_uri, node.uri)) AS documents
"""
BASELINE_SAMPLE = 500


def real_estate_costs(settings, driver, database: str, work: Path, rendered: int) -> list[tuple[str, str, str]]:
    """The real Markdown estate loaded as one library and as three (the same files under three
    names), then reloads of an unchanged library and of one whose every file was touched (same
    bytes, new modification time) against its first load: the real estate and rendered PDFs."""
    from tests.corpora import unpack_powershell_docs

    libraries = {
        "PowerShell docs": unpack_powershell_docs(work / "corpora"),
        f"{rendered} rendered PDFs": work / "reload-pdf",
    }
    rendered_library.write(libraries[f"{rendered} rendered PDFs"], "pdf", documents=rendered)
    results = []
    loads = {}
    for copies in (1, 1, 3):  # the first load warms Neo4j up (query plans, JIT) and is not reported
        wipe(driver)
        schema.apply(driver, database)
        named = [{"name": f"ps{copy}", "root": str(libraries["PowerShell docs"])} for copy in range(copies)]
        loads[copies] = load(DocumentSync(settings.with_section("documents", libraries=named), driver, database))
    for copies, report in loads.items():
        results.append(
            (
                f"full load: real estate x{copies}",
                f"{report.sections_per_second:,.0f} sections/s ({report.documents} pages, "
                f"{report.sections} sections, {report.seconds:.1f} s; "
                + ", ".join(f"{stage} {seconds:.1f} s" for stage, seconds in report.stage_seconds.items())
                + ")",
                f"{report.sections_per_second / loads[1].sections_per_second:.2f}x the one-library load",
            )
        )
    for name, root in libraries.items():
        wipe(driver)
        schema.apply(driver, database)
        sync = DocumentSync(settings.with_section("documents", libraries=[{"name": "reload", "root": str(root)}]), driver, database)
        first = load(sync)
        unchanged = load(sync)
        for path in root.rglob("*"):
            if path.is_file():
                os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 1_000_000_000))
        touched = load(sync)
        assert unchanged.written == touched.written == 0 and touched.parsed == 0
        results.append(
            (
                f"reload: {name}",
                f"unchanged {unchanged.seconds:.2f} s ({unchanged.read} files read), "
                f"all touched {touched.seconds:.2f} s ({touched.read} read, {touched.parsed} parsed)",
                f"{unchanged.seconds / first.seconds:.2f}x and {touched.seconds / first.seconds:.2f}x the first load "
                f"({first.documents} documents, {first.seconds:.1f} s)",
            )
        )
    return results


def cold_load(work: Path) -> None:
    """The first load on a fresh runtime with the settings a user gets, then the same load warm."""
    from tests.corpora import unpack_powershell_docs

    root = unpack_powershell_docs(work / "corpora")
    settings = load_settings(state_dir=str(work / "cold-state"), documents={"libraries": [{"name": f"ps{copy}", "root": str(root)} for copy in range(3)]})
    began = time.monotonic()
    neo4j = neo4j_server.start(settings)
    print(f"  fresh Neo4j started in {time.monotonic() - began:.1f} s (heap {neo4j.heap}, page cache {neo4j.pagecache}, the default settings)")
    try:
        settings = settings.with_section("neo4j", uri=neo4j.uri, password=neo4j.password)
        driver, where = connect(settings)
        loads = {}
        for label in ("cold", "warm"):
            wipe(driver)
            began = time.monotonic()
            schema.apply(driver, where.database)
            created = time.monotonic() - began
            loads[label] = report = load(DocumentSync(settings, driver, where.database))
            stages = ", ".join(f"{stage} {seconds:.1f} s" for stage, seconds in report.stage_seconds.items())
            print(
                f"  {label} load: {report.sections_per_second:,.0f} sections/s ({report.documents} pages, {report.sections} sections, "
                f"{report.seconds:.1f} s: {stages}; schema {created:.1f} s before), {report.sections_per_second / loads['cold'].sections_per_second:.2f}x the cold load"
            )
        driver.close()
    finally:
        neo4j_server.stop(settings)


def live_stack(settings, env: dict[str, str], concurrency: int) -> list[subprocess.Popen]:
    """A Celery worker and the watcher as `lakegraph up` starts them, once both are ready."""
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "worker.celery_app", "worker", "--concurrency", str(concurrency), "--loglevel", "warning"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    app = create_app(settings)
    wait_until(lambda: bool(app.control.ping(timeout=0.5)), 60, "celery worker")
    watcher = subprocess.Popen([sys.executable, "-m", "worker.watch"], env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    watcher.stdout.readline()
    time.sleep(2)  # the watcher's start-up reconcile
    return [worker, watcher]


def stop(processes: list[subprocess.Popen]) -> None:
    for process in processes:
        process.terminate()
        process.wait(timeout=30)
    processes.clear()


def process_sizes(settings, env: dict[str, str], stack: list[subprocess.Popen]) -> tuple[str, str, str]:
    """Resident memory of beat and the watcher (which only send task names) against the Celery worker's
    main process (which imports everything), all idle after start-up."""
    schedule = settings.state_path / "bench-beat-schedule"
    beat = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "worker.celery_app:beat_app", "beat", "--schedule", str(schedule)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        time.sleep(5)
        sizes = {name: psutil.Process(process.pid).memory_info().rss / 2**20 for name, process in (("beat", beat), ("watcher", stack[1]), ("worker", stack[0]))}
    finally:
        stop([beat])
    return (
        "beat / watcher RSS",
        f"beat {sizes['beat']:.0f} MB, watcher {sizes['watcher']:.0f} MB (target < 120 MB)",
        f"{max(sizes['beat'], sizes['watcher']) / sizes['worker']:.2f}x the worker's main process ({sizes['worker']:.0f} MB)",
    )


def burst(driver, root: Path, docs: int, edits: int, seed: int) -> float:
    """Seconds from the first of `edits` saves (distinct files, written as fast as possible) until
    every one is searchable."""
    token = f"burstseed{seed}x"
    began = time.monotonic()
    for index in random.Random(seed).sample(range(docs), edits):
        path = root / relpath(index)
        path.write_text(path.read_text() + f"\n{token}\n")
    while driver.execute_query(BURST_DONE, q=token).records[0]["documents"] < edits:
        if time.monotonic() - began > 900:
            raise RuntimeError(f"the {edits}-edit burst was not searchable within 15 minutes")
        time.sleep(0.1)
    return time.monotonic() - began


def format_throughput(settings, driver, database: str, work: Path, documents: int) -> list[tuple[str, str, str]]:
    """One library as Markdown, as rendered PDFs and as Word documents: parsing alone (one core)
    and full loads (after a warm-up load, so none pays for cold query plans): sections/s, and
    pages/s for the PDFs."""
    rules = DocumentRules.of(settings.documents)
    figures = {}
    for fmt in ("markdown", "pdf", "docx", "markdown"):  # the first Markdown load warms Neo4j up
        root = work / f"rendered-{fmt}"
        files = rendered_library.write(root, fmt, documents=documents)
        pages = sum(len(PdfReader(path).pages) for path in files) if fmt == "pdf" else 0
        began = time.monotonic()
        for path in files:
            build("rendered", path.relative_to(root).as_posix(), path.read_bytes(), rules)
        parse_seconds = time.monotonic() - began
        wipe(driver)
        schema.apply(driver, database)
        sync = DocumentSync(settings.with_section("documents", libraries=[{"name": "rendered", "root": str(root)}]), driver, database)
        figures[fmt] = (load(sync), pages, parse_seconds)
    (markdown, _, md_parse), (pdf, pages, pdf_parse), (docx, _, docx_parse) = figures["markdown"], figures["pdf"], figures["docx"]
    return [
        (
            "PDF parse",
            f"{pdf.sections / pdf_parse:,.0f} sections/s, {pages / pdf_parse:,.1f} pages/s on one core ({pdf.documents} PDFs, {pages} pages)",
            f"{md_parse / pdf_parse:.2f}x the speed of parsing the same library as Markdown ({markdown.sections / md_parse:,.0f} sections/s)",
        ),
        (
            "DOCX parse",
            f"{docx.sections / docx_parse:,.0f} sections/s on one core ({docx.documents} Word documents)",
            f"{md_parse / docx_parse:.2f}x the speed of parsing the same library as Markdown, {pdf_parse / docx_parse:.1f}x as PDF",
        ),
        (
            "PDF load",
            f"{pdf.sections_per_second:,.0f} sections/s, {pages / pdf.seconds:,.1f} pages/s "
            f"({pdf.sections} sections, {pdf.seconds:.1f} s, {os.cpu_count()} parse workers)",
            f"{pdf.sections_per_second / markdown.sections_per_second:.2f}x the same library as Markdown "
            f"({markdown.sections_per_second:,.0f} sections/s, {markdown.seconds:.1f} s)",
        ),
        (
            "DOCX load",
            f"{docx.sections_per_second:,.0f} sections/s ({docx.sections} sections, {docx.seconds:.1f} s)",
            f"{docx.sections_per_second / markdown.sections_per_second:.2f}x the same library as Markdown, "
            f"{docx.sections_per_second / pdf.sections_per_second:.2f}x as PDF",
        ),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=10_000)
    parser.add_argument("--edits", type=int, default=50)
    parser.add_argument("--heap", default="2g")
    parser.add_argument("--burst", type=int, default=2000, help="saves in the burst run with one worker, then two")
    parser.add_argument("--rendered", type=int, default=300, help="documents in the library loaded as PDF and as Markdown")
    parser.add_argument("--formats-only", action="store_true", help="only the PDF and Word against Markdown figures")
    parser.add_argument("--real-only", action="store_true", help="only the real estate's loads and the reloads of unchanged libraries")
    parser.add_argument("--cold", action="store_true", help="only a first load on a fresh Neo4j with the default settings, against the same load warm")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="lakegraph-bench-"))
    if args.cold:
        cold_load(work)
        return
    root = work / "library"
    settings = load_settings(
        state_dir=str(work / "state"),
        neo4j={"heap_size": args.heap, "pagecache_size": "1g"},
        documents={"libraries": [{"name": "bench", "root": str(root)}]},
    )
    sections = 0
    if not (args.formats_only or args.real_only):
        print(f"generating {args.docs} documents in {root}")
        sections = generate(root, args.docs)
    neo4j = neo4j_server.start(settings)
    redis = redis_server.start(settings)
    processes: list[subprocess.Popen] = []
    try:
        settings = settings.with_section("neo4j", uri=neo4j.uri, password=neo4j.password).with_section("redis", url=redis.url)
        driver, where = connect(settings)
        schema.apply(driver, where.database)
        sync = DocumentSync(settings, driver, where.database)
        if args.real_only:
            for name, figure, ratio in real_estate_costs(settings, driver, where.database, work, args.rendered):
                print(f"  {name:<28} {figure}\n  {'':<28} {ratio}")
            return
        results = format_throughput(settings, driver, where.database, work, args.rendered)
        if args.formats_only:
            for name, figure, ratio in results:
                print(f"  {name:<18} {figure}\n  {'':<18} {ratio}")
            return
        wipe(driver)
        schema.apply(driver, where.database)

        # Baseline: the same documents one file per transaction, as the watcher path writes them.
        sample = [relpath(index) for index in range(min(BASELINE_SAMPLE, args.docs))]
        began = time.monotonic()
        for path in sample:
            sync.sync_path("bench", path)
        per_file = len(sample) * 10 / (time.monotonic() - began)
        wipe(driver)
        schema.apply(driver, where.database)

        report = load(sync)
        rss_self = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        rss_children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        results.append(
            (
                "full load",
                f"{report.sections_per_second:,.0f} sections/s ({report.documents} docs, "
                f"{report.sections} sections, {report.seconds:.1f} s; {report.stage_seconds})",
                f"{report.sections_per_second / per_file:.1f}x the one-file-per-transaction path ({per_file:,.0f} sections/s)",
            )
        )
        results.append(("peak RSS", f"loader {rss_self:.0f} MB, largest parse worker {rss_children:.0f} MB", "target < 400 MB"))

        began = time.monotonic()
        reload = load(sync)
        reload_seconds = time.monotonic() - began
        assert reload.written == 0

        env = {
            **{key: value for key, value in os.environ.items() if not key.startswith("LAKEGRAPH_")},
            "LAKEGRAPH_STATE_DIR": str(settings.state_path),
            "LAKEGRAPH_NEO4J__URI": neo4j.uri,
            "LAKEGRAPH_NEO4J__PASSWORD": neo4j.password,
            "LAKEGRAPH_REDIS__URL": redis.url,
            "LAKEGRAPH_DOCUMENTS__LIBRARIES": json.dumps([{"name": "bench", "root": str(root)}]),
        }
        processes.extend(live_stack(settings, env, concurrency=2))

        def visible(token: str) -> float:
            began = time.monotonic()
            while driver.execute_query(SEARCH, q=token).records[0]["hits"] == 0:
                if time.monotonic() - began > 30:
                    raise RuntimeError(f"{token} never became searchable")
                time.sleep(0.005)
            return time.monotonic() - began

        rng = random.Random(11)
        latencies = []
        for edit in range(args.edits + 1):
            path = root / relpath(rng.randrange(args.docs))
            token = f"benchtoken{edit}x"
            path.write_text(path.read_text().replace("## Section 1\n", f"## Section 1\n\n{token} ", 1))
            elapsed = visible(token)
            if edit:  # the first edit warms the worker's query plans
                latencies.append(elapsed)
        p50, p95 = statistics.median(latencies), percentile(latencies, 0.95)
        results.append(
            (
                "edit → searchable",
                f"p50 {p50 * 1000:.0f} ms, p95 {p95 * 1000:.0f} ms over {len(latencies)} edits (watchdog → closed after writing: at once → Celery → Neo4j)",
                f"a full reload applying the same edit takes {reload_seconds:.1f} s: {reload_seconds / p50:.0f}x slower",
            )
        )

        results.append(process_sizes(settings, env, processes))
        stop(processes)
        bursts = {}
        for concurrency in (1, 2):
            processes.extend(live_stack(settings, env, concurrency))
            bursts[concurrency] = burst(driver, root, args.docs, args.burst, seed=concurrency)
            stop(processes)
        results.append(
            (
                f"{args.burst}-edit burst",
                f"2 workers: {args.burst / bursts[2]:,.0f} edits/s ({bursts[2]:.1f} s to all searchable)",
                f"{bursts[1] / bursts[2]:.2f}x one worker ({args.burst / bursts[1]:,.0f} edits/s, {bursts[1]:.1f} s)",
            )
        )
        unchanged = []
        for index in range(20):
            began = time.monotonic()
            assert sync.sync_path("bench", relpath(index)) == "unchanged"
            unchanged.append(time.monotonic() - began)
        changed_cost = []
        for index in range(20, 40):
            path = root / relpath(index)
            path.write_text(path.read_text() + f"\nappended {index}\n")
            began = time.monotonic()
            sync.sync_path("bench", relpath(index))
            changed_cost.append(time.monotonic() - began)
        deletes = []
        for index in range(40, 60):
            (root / relpath(index)).unlink()
            began = time.monotonic()
            assert sync.sync_path("bench", relpath(index)) == "deleted"
            deletes.append(time.monotonic() - began)
        edit_cost = statistics.median(changed_cost)
        # Reconciles repairing 200 changed files each (the first after the load also plans its
        # queries), against repairing 200 others one file per transaction.
        if args.docs < 1000:
            raise SystemExit("--docs must be at least 1000 (the reconcile figure changes 800 files)")

        def drift(indexes: range) -> None:
            for index in indexes:
                path = root / relpath(index)
                path.write_text(path.read_text() + f"\ndrift {index}\n")

        drift(range(700, 900))
        began = time.monotonic()
        for index in range(700, 900):
            sync.sync_path("bench", relpath(index))
        one_by_one = time.monotonic() - began
        repairs = []
        for start in (100, 300, 500):
            drift(range(start, start + 200))
            repairs.append(reconcile(sync))
            assert repairs[-1].outcomes == {"written": 200}, repairs[-1].outcomes
        steady = statistics.median(repair.seconds for repair in repairs[1:])
        results.append(
            (
                "reconcile",
                f"200 changed files of {repairs[0].files} repaired in {steady:.2f} s (the first after the load: {repairs[0].seconds:.2f} s)",
                f"{steady / one_by_one:.2f}x repairing 200 files one transaction each ({one_by_one:.2f} s)",
            )
        )
        results.append(
            (
                "unchanged save",
                f"{statistics.median(unchanged) * 1000:.1f} ms per sync",
                f"{statistics.median(unchanged) / edit_cost:.2f}x the cost of a real one-section edit ({edit_cost * 1000:.1f} ms)",
            )
        )
        results.append(
            (
                "delete document",
                f"{statistics.median(deletes) * 1000:.1f} ms per sync",
                f"{statistics.median(deletes) / edit_cost:.2f}x the cost of a one-section edit",
            )
        )
        driver.close()

        print(f"\nlakegraph document benchmark: {args.docs} documents, {sections} sections, {os.cpu_count()} cores")
        for name, figure, ratio in results:
            print(f"  {name:<18} {figure}\n  {'':<18} {ratio}")
    finally:
        for process in processes:
            process.kill()
        redis_server.stop(settings)
        neo4j_server.stop(settings)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
