"""A reload opens only the files whose size or modification time moved, parses only those whose
bytes changed, and leaves the same graph as a fresh load; the reconcile skips the same way."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import pytest
from neo4j import Driver

from tests.conftest import Neo4jService
from tests.graph_dump import differences_from_files, dump
from tests.integration.test_document_graph import make_sync, write
from worker.documents.loader import load, reconcile
from worker.documents.prepare import prepare
from worker.documents.source import read
from worker.documents.sync import REHEARSAL_HASH

pytestmark = pytest.mark.timeout(180)


def library(root: Path, count: int = 12) -> None:
    for index in range(count):
        write(root, f"guide/page-{index}.md", f"# Page {index}\nSee [next](page-{(index + 1) % count}.md).\n\n## Details\nText {index}.\n")


def test_a_reload_reads_only_what_moved_and_parses_only_what_changed(neo4j_service: Neo4jService, graph: Driver, tmp_path: Path) -> None:
    library(tmp_path)
    sync = make_sync(neo4j_service, graph, lib=tmp_path)
    first = load(sync, workers=1)
    assert (first.read, first.parsed, first.written) == (12, 12, 12)

    again = load(sync, workers=1)  # nothing moved: no file is even opened
    assert (again.documents, again.unchanged, again.read, again.parsed, again.written) == (12, 12, 0, 0, 0)

    touched = tmp_path / "guide/page-3.md"
    os.utime(touched, ns=(touched.stat().st_atime_ns, touched.stat().st_mtime_ns + 5_000_000_000))
    edited = tmp_path / "guide/page-5.md"
    before = edited.stat()
    edited.write_text(edited.read_text().replace("Text 5.", "Text V."))  # the same size, another mtime
    assert edited.stat().st_size == before.st_size
    third = load(sync, workers=1)
    assert (third.read, third.parsed, third.written, third.unchanged) == (2, 1, 1, 11)
    assert load(sync, workers=1).read == 0  # the touched file's new stamp was kept

    assert differences_from_files(graph, sync.settings) == (12, 0)


def test_the_reconcile_skips_unchanged_stamps_and_repairs_the_rest(neo4j_service: Neo4jService, graph: Driver, tmp_path: Path) -> None:
    library(tmp_path)
    sync = make_sync(neo4j_service, graph, lib=tmp_path)
    load(sync, workers=1)
    touched = tmp_path / "guide/page-1.md"
    os.utime(touched, ns=(touched.stat().st_atime_ns, touched.stat().st_mtime_ns + 5_000_000_000))
    (tmp_path / "guide/page-2.md").write_text("# Page 2\nRewritten.\n")
    report = reconcile(sync)
    assert report.files == 12 and report.outcomes == {"written": 1}
    assert load(sync, workers=1).read == 0  # the reconcile kept both new stamps
    assert differences_from_files(graph, sync.settings) == (12, 0)


def test_a_warm_up_rehearses_edits_and_changes_nothing(neo4j_service: Neo4jService, graph: Driver, tmp_path: Path) -> None:
    library(tmp_path)
    sync = make_sync(neo4j_service, graph, lib=tmp_path)
    assert sync.warm_up() is False  # nothing stored yet: nothing to rehearse
    load(sync, workers=1)
    before = dump(graph)
    assert sync.warm_up() is True
    every = [
        replace(prepare(read(library_, relpath, sync.rules), sync.rules.id_schemes, library_.where(relpath)), file_hash=REHEARSAL_HASH)
        for library_ in sync.libraries.values()
        for relpath in library_.walk(on_loop=lambda path: None)
    ]
    sync.writer.rehearse(every)  # all twelve rewritten, links and folders included, then rolled back
    assert dump(graph) == before
    assert load(sync, workers=1).read == 0
