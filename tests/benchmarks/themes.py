"""Themes benchmark (not a test): repeatability, stability under small edits, and timing.

    python -m tests.benchmarks.themes [--sizes 10000,50000] [--powershell]

Starts its own local Neo4j + GDS in a temporary state folder. For each size it writes a document
link graph shaped like a real estate: topics of power-law sizes, links with power-law in-degrees
inside a topic, one hub page per topic and a few index pages linking across everything, families
of near-duplicate versions of a page (citing what their original cites and each other), and a few
isolated documents. `--powershell` adds the real 3,088-page estate from ../shared/corpora.

Per estate, in one run: a first themes run (the baseline, Leiden from scratch), a rebuild (from
scratch again, the engine warm), 5 forced runs on the unchanged graph (identical?), the "unchanged,
skip" check, and three edits each of 1 % and 2 % of the document links
(share of theme ids kept, documents moved, refresh time) with their reversal (same themes back?),
ten one-link edits (refresh time), and the themes answer itself (p95 of 20 calls, size).
Figures print as ratios against the first run.
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from pathlib import Path

from shapes.serving.service import Shapes
from tests import themes_properties as props
from tests.graph_dump import wipe
from worker.documents import link_version
from worker.documents.loader import load
from worker.documents.sync import DocumentSync
from worker.graph.connection import connect
from worker.graph.setup import apply_schema
from worker.runtime import neo4j_server
from worker.settings import Settings, load_settings
from worker.themes.runner import ThemeRunner

CREATE_DOCUMENTS = "UNWIND $uris AS uri CREATE (:Document {uri: uri, displayName: uri})"
CREATE_LINKS = """
UNWIND $rows AS r
MATCH (a:Document {uri: r[0]}) MATCH (b:Document {uri: r[1]})
CREATE (a)-[:LINKS_TO {ordinal: 0}]->(b)
"""
BATCH = 10_000


def estate(size: int, rng: random.Random) -> tuple[list[str], list[list[str]]]:
    """Documents and directed links with the structure of a real documentation estate."""
    topics, left = [], size
    while left > 0:
        topic = min(left, max(5, int(rng.paretovariate(1.3) * 20)))
        topics.append(topic)
        left -= topic
    uris, links = [], []
    for number, topic_size in enumerate(topics):
        members = [f"bench/topic-{number}/d{index}" for index in range(topic_size)]
        uris += members
        hub, weights = members[0], [1.0 / (rank + 1) for rank in range(topic_size)]  # power-law in-degree
        for position, uri in enumerate(members[1:], start=1):
            if rng.random() < 0.01:
                continue  # an isolated page
            links.append([hub, uri])  # the topic's table of contents
            for target in rng.choices(members, weights=weights, k=4):
                if target != uri:
                    links.append([uri, target])
            if rng.random() < 0.08:  # one link out of the topic
                links.append([uri, rng.choice(uris)])
            if position % 10 == 0:  # a family of versions of this page
                for version in range(3):
                    copy = f"{uri}-v{version}"
                    uris.append(copy)
                    links += [[copy, target] for _, target in (link for link in links[-5:] if link[0] == uri)]
                    links.append([copy, uri])
    for index in range(3):  # index pages linking across everything
        page = f"bench/index-{index}"
        uris.append(page)
        links += [[page, uri] for uri in rng.sample(uris, min(len(uris) - 1, 500))]
    return uris, [link for link in links if link[0] != link[1]]


def write_estate(driver, database: str, uris: list[str], links: list[list[str]]) -> None:
    for start in range(0, len(uris), BATCH):
        driver.execute_query(CREATE_DOCUMENTS, uris=uris[start : start + BATCH], database_=database)
    for start in range(0, len(links), BATCH):
        driver.execute_query(CREATE_LINKS, rows=links[start : start + BATCH], database_=database)
    with driver.session(database=database) as session:  # signed as the document writer signs them
        for start in range(0, len(uris), BATCH):
            session.execute_write(link_version.resign, set(uris[start : start + BATCH]))


def timed(call):
    began = time.perf_counter()
    result = call()
    return time.perf_counter() - began, result


def measure(name: str, settings: Settings, driver, database: str) -> None:
    runner = ThemeRunner(settings, driver, database)
    first, report = timed(lambda: runner.run(force=True))
    rebuild, _ = timed(lambda: runner.run(rebuild=True))  # from scratch again, the engine warm
    base = props.snapshot(driver)
    repeats = []
    for _ in range(5):
        took, _ = timed(lambda: runner.run(force=True))
        repeats.append((props.snapshot(driver) == base, took))
    skip, skipped = timed(runner.run)
    unchanged = max(took for _, took in repeats)
    line = [
        f"{name:<12}{report.documents:>8,}{report.themes:>7}{first:>8.2f}s",
        f"rebuild {rebuild:.2f}s ({rebuild / first:.2f}x)",
        f"{sum(same for same, _ in repeats)}/5 identical, forced {unchanged:.2f}s ({unchanged / first:.2f}x)",
        f"skip {skip * 1000:.0f} ms ({skip / first:.2f}x)",
    ]
    before = props.level0(base)
    for fraction in (0.01, 0.02):
        kept, moved, times, restored = [], [], [], []
        for trial in range(3):
            edit = props.edit_links(driver, fraction, random.Random(f"{name}-{fraction}-{trial}"))
            took, _ = timed(runner.run)
            after = props.level0(props.snapshot(driver))
            kept.append(props.kept_share(before, after))
            moved.append(props.moved(before, after))
            times.append(took)
            props.revert(driver, edit)
            runner.run()
            now = props.level0(props.snapshot(driver))
            restored.append(set(now.values()) == set(before.values()))
            before = now
        line.append(
            f"{fraction:.0%}: ids kept {min(kept):.2f}–{max(kept):.2f}, moved ≤{max(moved)}, refresh {max(times):.2f}s "
            f"({max(times) / first:.2f}x), reversal {sum(restored)}/3"
        )
    single = []
    for trial in range(10):  # an author's edit: one link removed, one added
        edit = props.edit_links(driver, 0.0, random.Random(f"{name}-one-{trial}"))
        took, _ = timed(runner.run)
        single.append(took)
        props.revert(driver, edit)
        runner.run()
    single.sort()
    line.append(f"one edit: refresh p50 {single[len(single) // 2]:.2f}s, max {single[-1]:.2f}s ({single[-1] / first:.2f}x)")
    shapes = Shapes(settings, driver, database)
    for _ in range(10):  # warm: the first calls compile their queries
        shapes.ask("themes")
    answers = sorted((timed(lambda: shapes.ask("themes")) for _ in range(20)), key=lambda pair: pair[0])
    took, answer = answers[-2]
    line.append(f"themes answer p95 {took * 1000:.0f} ms, {len(json.dumps(answer.data())) / 1000:.0f} KB JSON, {len(answer.text()) / 1000:.0f} KB text")
    assert not skipped.ran
    print("  ".join(line), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10000,50000")
    parser.add_argument("--powershell", action="store_true", help="also the real 3,088-page estate")
    parser.add_argument("--heap", default="2g")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="lakegraph-themes-bench-"))
    settings = load_settings(state_dir=str(work / "state"), neo4j={"heap_size": args.heap, "pagecache_size": "1g"})
    neo4j = neo4j_server.start(settings)
    try:
        settings = settings.with_section("neo4j", uri=neo4j.uri, password=neo4j.password)
        driver, where = connect(settings)
        print(f"{'estate':<12}{'docs':>8}{'themes':>7}{'first':>9}")
        if args.powershell:
            from tests.corpora import unpack_powershell_docs

            wipe(driver)
            root = unpack_powershell_docs(work / "corpora")
            real = settings.with_section("documents", libraries=[{"name": "ps", "root": root}])
            apply_schema(real, driver, where.database)
            load(DocumentSync(real, driver, where.database))
            measure("powershell", real, driver, where.database)
        for size in (int(value) for value in args.sizes.split(",") if value):
            wipe(driver)
            apply_schema(settings, driver, where.database)
            write_estate(driver, where.database, *estate(size, random.Random(size)))
            measure("generated", settings, driver, where.database)
        driver.close()
    finally:
        neo4j_server.stop(settings)


if __name__ == "__main__":
    main()
