"""A library of real Office files (../shared/corpora/office-samples), Word documents rendered from
the test library and the hostile files of tests/hostile_office.py, loaded as a user would:
`lakegraph load docs` exits 0 with a quiet terminal, every sample loads or is refused with its
reason in `lakegraph errors`, refusals are not read again until their file changes, a macro-
enabled file loads with its note, and links between Word documents land on their sections, by
heading and by bookmark."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from neo4j import Driver

from tests import hostile_office
from tests.conftest import Neo4jService
from tests.corpora import OFFICE_SAMPLES
from tests.helpers import clean_env, run_cli
from tests.integration.test_document_graph import make_sync
from tests.rendered_library import write as write_rendered
from worker import problems
from worker.demo.docx import Paragraph, Run, make_docx
from worker.documents import uris
from worker.documents.formats import FORMATS
from worker.documents.loader import load

pytestmark = [pytest.mark.corpus, pytest.mark.timeout(300)]
SAMPLES = OFFICE_SAMPLES


def documents(driver: Driver) -> set[str]:
    return {row["uri"] for row in driver.execute_query("MATCH (d:Document) RETURN d.uri AS uri").records}


def test_office_samples_and_hostile_files_load_or_are_refused_with_reasons(neo4j_service: Neo4jService, graph: Driver, tmp_path: Path) -> None:
    root = tmp_path / "lib"
    shutil.copytree(SAMPLES, root / "samples")
    hostile = hostile_office.write(root / "hostile")
    write_rendered(root / "rendered", "docx", documents=9)
    target = sorted((root / "rendered" / "bulletins").glob("*.docx"))[0]
    bookmarked = f"../rendered/bulletins/{target.name}#_Toc1002"  # the bookmark around its third heading
    (root / "linking").mkdir()
    (root / "linking" / "index.docx").write_bytes(make_docx([Paragraph([Run("Index")], heading=1), Paragraph([Run("step", bookmarked)])]))
    samples = sorted(path.name for path in SAMPLES.iterdir() if path.suffix.lower() in FORMATS)
    refused = {f"hostile/{item.name}": item.reason for item in hostile if item.reason}
    loads = [f"samples/{name}" for name in samples] + [f"hostile/{item.name}" for item in hostile if not item.reason]
    loads += [path.relative_to(root).as_posix() for path in (root / "rendered").rglob("*.docx")] + ["linking/index.docx"]

    env = clean_env(**neo4j_service.env(), LAKEGRAPH_STATE_DIR=str(tmp_path / "state"))
    result = run_cli("load", "docs", f"lib={root}", "--json", env=env, timeout=240)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    report = json.loads(result.stdout)
    assert (report["documents"], report["skipped"]) == (len(loads), len(refused))
    assert documents(graph) == {uris.document_uri("lib", relpath) for relpath in loads}

    recorded = {problem.key: problem for problem in problems.listing(graph, "neo4j", "documents")}
    for relpath, reason in refused.items():
        assert recorded[f"lib:{relpath}"].kind == "skipped" and reason in recorded[f"lib:{relpath}"].reason
    for name in ("macro-document.docm", "macro-deck.pptm"):
        assert "were not read or run" in recorded[f"lib:hostile/{name}"].reason
    listing = run_cli("errors", env=env, timeout=60)
    assert listing.returncode == 0 and "encrypted: needs a password to open" in listing.stdout and "zip bomb" in listing.stdout

    sync = make_sync(neo4j_service, graph, lib=root)
    again = load(sync, workers=2)
    assert (again.read, again.skipped, again.written) == (0, len(refused), 0), "a refusal holds while its file is unchanged"
    assert sync.sync_path("lib", "hostile/encrypted.docx") == "skipped", "the watcher's path refuses the same way"
    (root / "hostile" / "encrypted.docx").write_bytes(hostile_office.plain_docx("Decrypted by its owner"))
    fixed = load(sync, workers=2)
    assert (fixed.read, fixed.skipped) == (1, len(refused) - 1)

    landed = graph.execute_query(
        "MATCH (a)-[l:LINKS_TO]->(b:Section) WHERE a.uri STARTS WITH 'lib/rendered/' RETURN count(l) AS n, count(DISTINCT b.uri) AS targets"
    ).records[0]
    unresolved = graph.execute_query("MATCH (u:UnresolvedLink) WHERE u.source STARTS WITH 'lib/rendered/' RETURN count(u) AS n").records[0]["n"]
    assert landed["n"] >= 9 * 6 and unresolved == 0
    third = graph.execute_query(
        "MATCH (:Document {uri: $doc})-[:HAS*]->(s:Section {sort_pos: 2}) RETURN s.uri AS uri",
        doc=uris.document_uri("lib", target.relative_to(root).as_posix()),
    ).records[0]["uri"]
    by_bookmark = graph.execute_query("MATCH (:Section {uri: 'lib/linking/index#index'})-[:LINKS_TO]->(t) RETURN t.uri AS uri").records
    assert [row["uri"] for row in by_bookmark] == [third], "a #bookmark in another Word file lands on the section that holds it"
