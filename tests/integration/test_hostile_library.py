"""A library mixing good files with hostile ones (tests/hostile_pdfs.py: fuzzed real PDFs, pages
needing codecs not installed, an encrypted file, a book past the time limit), loaded as a user
would: `lakegraph load docs` through the parse pool exits 0 with a quiet terminal, every good file
loads, the load equals the files parsed one by one, every refusal is recorded with its reason and
not read again until its file or the limits change — by a load, a reconcile or a watcher's sync."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from neo4j import Driver

from tests import hostile_pdfs
from tests.conftest import Neo4jService
from tests.corpora import PDF_SAMPLES
from tests.helpers import clean_env, run_cli
from tests.integration.test_document_graph import make_sync
from tests.rendered_library import write as write_rendered
from worker import problems
from worker.documents import uris
from worker.documents.loader import load, reconcile
from worker.documents.rules import DocumentRules
from worker.documents.source import Skipped, build

pytestmark = [pytest.mark.corpus, pytest.mark.timeout(400)]
PARSE_SECONDS = 3.0  # the 117-page book takes about 6 s: refused; every other file takes under 1.5 s
SLOW_BOOK = "slow/GeoTopo-komprimiert.pdf"


def hostile_library(root: Path) -> dict[str, bool]:
    """Good and hostile files under `root`; relpath → whether it should load as a document."""
    write_rendered(root / "rendered", "pdf", documents=12)
    write_rendered(root / "markdown", "markdown", documents=12)
    hostile_pdfs.write(root / "hostile")
    (root / "slow").mkdir()
    shutil.copyfile(PDF_SAMPLES / "009-pdflatex-geotopo" / "GeoTopo-komprimiert.pdf", root / SLOW_BOOK)
    rules = DocumentRules.defaults()
    expected = {}
    for path in sorted(root.rglob("*")):
        if path.is_file():
            relpath = path.relative_to(root).as_posix()
            try:
                build("lib", relpath, path.read_bytes(), rules)
                expected[relpath] = relpath != SLOW_BOOK
            except Skipped:
                expected[relpath] = False
    return expected


def documents(driver: Driver) -> set[str]:
    return {row["uri"] for row in driver.execute_query("MATCH (d:Document) RETURN d.uri AS uri").records}


def test_no_single_file_stops_a_load_and_refusals_are_not_read_again(neo4j_service: Neo4jService, graph: Driver, tmp_path: Path) -> None:
    root = tmp_path / "lib"
    expected = hostile_library(root)
    good = {relpath for relpath, loads in expected.items() if loads}
    refused = set(expected) - good
    assert len(expected) > 190 and len(refused) > 50 and all(not relpath.startswith(("rendered/", "markdown/")) for relpath in refused)

    env = clean_env(**neo4j_service.env(), LAKEGRAPH_STATE_DIR=str(tmp_path / "state"), LAKEGRAPH_DOCUMENTS__PARSE_SECONDS=str(PARSE_SECONDS))
    result = run_cli("load", "docs", f"lib={root}", "--json", env=env, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stderr == "", "pypdf's warnings stay off the terminal"
    report = json.loads(result.stdout)
    assert report["documents"] == len(good) and report["skipped"] == len(refused)
    assert report["warned"] > 0
    assert documents(graph) == {uris.document_uri("lib", relpath) for relpath in good}

    recorded = {problem.key: problem for problem in problems.listing(graph, "neo4j", "documents") if problem.kind == "skipped"}
    assert set(recorded) == {f"lib:{relpath}" for relpath in refused}
    assert all(problem.reason.strip() and problem.stamp for problem in recorded.values())
    assert recorded[f"lib:{SLOW_BOOK}"].reason == f"parsing took longer than documents.parse_seconds ({PARSE_SECONDS:g} s)"
    warned = {problem.key for problem in problems.listing(graph, "neo4j", "documents") if problem.kind == "warning"}
    assert len(warned) == report["warned"]

    sync = make_sync(neo4j_service, graph, lib=root)
    sync.settings = sync.settings.with_section("documents", parse_seconds=PARSE_SECONDS)
    again = load(sync, workers=2)
    assert (again.read, again.skipped, again.documents, again.written) == (0, len(refused), len(good), 0), "a refusal holds while its file is unchanged"
    assert reconcile(sync).outcomes == {"skipped": len(refused)}

    fixed = "hostile/jbig2-page.pdf" if "hostile/jbig2-page.pdf" in refused else sorted(refused - {SLOW_BOOK})[0]
    (root / fixed).write_bytes(next((root / "rendered" / "manuals").glob("*.pdf")).read_bytes())
    changed = load(sync, workers=2)
    assert changed.read == 1 and changed.skipped == len(refused) - 1
    assert uris.document_uri("lib", fixed) in documents(graph)

    assert sync.sync_path("lib", "hostile/encrypted.pdf") == "skipped", "the watcher's path refuses the same way"
    sync.settings = sync.settings.with_section("documents", parse_seconds=60)
    relaxed = load(sync, workers=1)
    assert relaxed.read == len(refused) - 1, "limits changed: every refusal is tried again"
    assert uris.document_uri("lib", SLOW_BOOK) in documents(graph)
