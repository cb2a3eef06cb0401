"""Themes on a Neo4j whose open transactions may hold 20 MB together (`dbms.memory.transaction.
total.max`), over a library whose themes write is larger than that in one transaction:

- a run is written in batches sized from the server's limit, and readers (the themes shape, and
  naive Cypher over `Theme`) see one run's whole themes at every moment, never a mixture;
- a run killed between its batches leaves the previous run served, and the next run clears up;
- a command that meets the limit anyway prints one line naming the setting to change, records it
  for `lakegraph errors`, and the previous themes stay served;
- a library larger than the limit is forgotten in batches;
- a document whose sections alone are larger than the limit is refused with the reason, by a load
  and by a live sync, its stored version kept and the files beside it written.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from neo4j import Driver, GraphDatabase
from neo4j.exceptions import TransientError

from shapes.themes import ThemesShape
from tests.benchmarks.corpus import generate
from tests.conftest import runtime_settings
from tests.helpers import LAKEGRAPH, assert_one_line_error, clean_env, run_cli
from worker import problems
from worker.documents.loader import load
from worker.documents.sync import DocumentSync
from worker.documents.writer import DocumentWriter
from worker.graph.setup import apply_schema
from worker.runtime import neo4j_server, redis_server
from worker.runtime.processes import wait_until
from worker.settings import Settings
from worker.themes.runner import ThemeRunner

pytestmark = pytest.mark.timeout(600)
LIMIT = "20m"
DOCUMENTS, SPARE = 6000, 1500
NAIVE = "MATCH (t:Theme {level: 0}) RETURN collect([t.id, t.size]) AS themes"
DRAFTS = "MATCH (t:ThemeDraft) RETURN count(t) AS n"
LEFTOVERS = "MATCH (n:ThemeDraft|ThemeRunDraft) RETURN count(n) AS n"
MEMORY_ERROR = "Neo.TransientError.General.MemoryPoolOutOfMemoryError"
SECTIONS_OF_HUGE = "MATCH (s:Section {doc_uri: 'huge/huge'}) RETURN count(s) AS n"


@dataclass(frozen=True)
class Tiny:
    settings: Settings
    driver: Driver

    def env(self, **extra: str) -> dict[str, str]:
        neo4j = self.settings.neo4j
        return clean_env(
            LAKEGRAPH_STATE_DIR=str(self.settings.state_path),
            LAKEGRAPH_NEO4J__URI=neo4j.uri,
            LAKEGRAPH_NEO4J__PASSWORD=neo4j.password.get_secret_value(),
            **extra,
        )


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tiny]:
    work = tmp_path_factory.mktemp("tiny-memory")
    generate(work / "lib", DOCUMENTS, sections=5)
    generate(work / "spare", SPARE, seed=3, sections=5)
    libraries = [{"name": name, "root": str(work / name)} for name in ("lib", "spare")]
    local = runtime_settings(work / "state", neo4j={"server_config": {"dbms.memory.transaction.total.max": LIMIT}}, documents={"libraries": libraries})
    running = neo4j_server.start(local)
    try:
        settings = local.with_section("neo4j", uri=running.uri, password=running.password)
        with GraphDatabase.driver(running.uri, auth=(neo4j_server.LOCAL_USER, running.password)) as driver:
            apply_schema(settings, driver, "neo4j")
            load(DocumentSync(settings, driver, "neo4j"), workers=2)
            yield Tiny(settings, driver)
    finally:
        neo4j_server.stop(local)


def answer(tiny: Tiny) -> tuple[str, frozenset]:
    """The themes shape as a fresh reader gets it: the run it read at, and that run's themes."""
    result = ThemesShape(tiny.driver, "neo4j")(0, None)
    return result.run["id"] if result.run else "", frozenset((view.id, view.size) for view in result.themes)


def naive(tiny: Tiny) -> frozenset:
    return frozenset(map(tuple, tiny.driver.execute_query(NAIVE).records[0]["themes"]))


def one_transaction_fails(driver: Driver, query: str) -> bool:
    """Whether `query` alone, in one transaction committed (the driver's retries left out), passes
    the limit; the control of the tests, so a query that fits is a failure left for the test to see."""
    with driver.session() as session:
        tx = session.begin_transaction()
        try:
            tx.run(query).consume()
            tx.commit()
        except TransientError as error:
            return error.code == MEMORY_ERROR
        finally:
            tx.close()
    return False


def test_a_run_larger_than_the_limit_is_written_in_batches_and_readers_see_one_run(tiny: Tiny) -> None:
    runner = ThemeRunner(tiny.settings, tiny.driver, "neo4j")
    first = runner.run()
    assert first.ran and first.themes > 10
    memberships = tiny.driver.execute_query("MATCH (:Document)-[m:IN_THEME]->(:Theme) RETURN count(m) AS n").records[0]["n"]
    assert memberships >= 2 * DOCUMENTS
    # The control: the run's memberships alone, written in one transaction, pass the limit.
    assert one_transaction_fails(tiny.driver, "CREATE (x:Scratch) WITH x MATCH (d:Document)-[:IN_THEME]->(:Theme) CREATE (d)-[:COPY]->(x)")

    before_answer, before_naive = answer(tiny), naive(tiny)
    seen: list[tuple[tuple[str, frozenset], frozenset]] = []
    done = threading.Event()

    def read() -> None:
        while not done.is_set():
            seen.append((answer(tiny), naive(tiny)))

    reader = threading.Thread(target=read)
    reader.start()
    try:
        report = runner.run(rebuild=True, gamma=2.0)  # Leiden from scratch at another resolution: every theme changes
    finally:
        done.set()
        reader.join()
    after_answer, after_naive = answer(tiny), naive(tiny)
    assert report.ran and after_answer[0] == report.run_id and after_answer[1] != before_answer[1]
    assert len(seen) > 10 and any(shape == before_answer for shape, _ in seen)
    for shape, cypher in seen:
        assert shape in (before_answer, after_answer), "the shape answered a mixture of two runs"
        assert cypher in (before_naive, after_naive), "naive Cypher over Theme saw a mixture of two runs"
    assert tiny.driver.execute_query(LEFTOVERS).records[0]["n"] == 0


def test_a_run_killed_between_batches_leaves_the_previous_themes_served(tiny: Tiny) -> None:
    ThemeRunner(tiny.settings, tiny.driver, "neo4j").run(rebuild=True, gamma=1.0)
    before_answer, before_naive = answer(tiny), naive(tiny)
    command = [LAKEGRAPH, "themes", "--refresh", "--rebuild", "--gamma", "3", "--json"]
    process = subprocess.Popen(command, env=tiny.env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        wait_until(lambda: tiny.driver.execute_query(DRAFTS).records[0]["n"] > 0, 120, "the run staging its themes", alive=lambda: process.poll() is None)
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    assert tiny.driver.execute_query(DRAFTS).records[0]["n"] > 0  # killed with its drafts written
    assert answer(tiny) == before_answer and naive(tiny) == before_naive

    report = ThemeRunner(tiny.settings, tiny.driver, "neo4j").run(rebuild=True, gamma=3.0)
    assert report.ran and answer(tiny)[0] == report.run_id
    assert tiny.driver.execute_query(LEFTOVERS).records[0]["n"] == 0


def test_a_command_that_meets_the_limit_says_so_in_one_line_and_records_it(tiny: Tiny, redis_service: redis_server.LocalRedis) -> None:
    """Another transaction holds nearly all the memory the limit allows while `themes --refresh`
    runs: the run cannot take its share, and the previous themes stay served. The failure is
    recorded (in the graph, or held in Redis while the graph cannot take it); the next run that
    succeeds ends it."""
    before = answer(tiny)
    env = tiny.env(LAKEGRAPH_REDIS__URL=redis_service.url)
    with tiny.driver.session() as session, session.begin_transaction() as hog:
        pad = "x" * 1024
        while not one_transaction_fails(tiny.driver, "UNWIND range(1, 100000) AS i WITH collect(i) AS held RETURN size(held)"):
            hog.run("UNWIND range(1, 500) AS i CREATE (:Hog {pad: $pad})", pad=pad).consume()
        result = run_cli("themes", "--refresh", "--rebuild", "--gamma", "4", env={**env, "LAKEGRAPH_NEO4J__RETRY_SECONDS": "1"})
        hog.rollback()
    assert_one_line_error(
        result, "Neo4j ran out of memory", "dbms.memory.transaction.total.max", "raise neo4j.heap_size", "the previous themes are still served"
    )
    assert answer(tiny) == before
    listed = json.loads(run_cli("errors", "--json", "--source", "themes", env=env).stdout)
    assert [(problem["key"], problem["kind"]) for problem in listed] == [("run", "failed")]
    assert "Neo4j ran out of memory" in listed[0]["reason"]

    assert run_cli("themes", "--refresh", env=env).returncode == 0  # memory free again: the run succeeds and ends the record
    assert json.loads(run_cli("errors", "--json", "--source", "themes", env=env).stdout) == []


def test_doctor_shows_the_memory_neo4j_runs_with(tiny: Tiny) -> None:
    statuses = {status["engine"]: status for status in json.loads(run_cli("doctor", "--json", env=tiny.env()).stdout)}
    assert "heap 768m, transaction memory 20m" in statuses["neo4j"]["detail"]


def test_a_library_larger_than_the_limit_is_forgotten_in_batches(tiny: Tiny) -> None:
    assert one_transaction_fails(tiny.driver, "MATCH (d:Document {library: 'spare'}) OPTIONAL MATCH (s:Section {doc_uri: d.uri}) DETACH DELETE d, s")
    began = time.monotonic()
    report = DocumentWriter(tiny.driver, "neo4j", {}).forget_library("spare")
    assert len(report.deleted) == SPARE, time.monotonic() - began
    left = tiny.driver.execute_query("MATCH (n) WHERE n.uri STARTS WITH 'spare' RETURN count(n) AS n").records[0]["n"]
    assert left == 0


def test_a_document_larger_than_the_limit_is_refused_and_the_load_goes_on(tiny: Tiny, tmp_path: Path) -> None:
    root = tmp_path / "huge"
    root.mkdir()
    (root / "ordinary.md").write_text("# Ordinary\n[huge](huge.md)\n")
    (root / "huge.md").write_text("# Huge\n## Step 0\nfirst\n")
    settings = tiny.settings.with_section("documents", libraries=[{"name": "huge", "root": str(root)}])
    sync = DocumentSync(settings, tiny.driver, "neo4j")
    load(sync, workers=1)
    (root / "huge.md").write_text("# Huge\n" + "".join(f"## Step {i}\nDo step {i} with care, then check it.\n" for i in range(6000)))
    (root / "other.md").write_text("# Other\n")
    report = load(sync, workers=1)
    assert (report.written, report.skipped) == (1, 1)
    (refused,) = [problem for problem in problems.listing(tiny.driver, "neo4j", "documents") if problem.key == "huge:huge.md"]
    assert refused.kind == "skipped" and refused.reason.startswith(
        "its 6,001 sections do not fit one write; the graph keeps its stored version: Neo4j ran out of memory"
    ), refused.reason
    assert "dbms.memory.transaction.total.max" in refused.reason
    assert tiny.driver.execute_query(SECTIONS_OF_HUGE).records[0]["n"] == 2
    assert sync.sync_path("huge", "huge.md") == "skipped"
    assert sync.sync_path("huge", "other.md") == "unchanged"
    assert tiny.driver.execute_query(SECTIONS_OF_HUGE).records[0]["n"] == 2
    DocumentWriter(tiny.driver, "neo4j", {}).forget_library("huge")
