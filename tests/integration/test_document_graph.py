"""The document graph on real Neo4j: determinism, minimal writes, moves, deletes, links, bad input."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from neo4j import Driver

from tests.conftest import Neo4jService
from tests.graph_dump import dump, wipe
from tests.helpers import clean_env, run_cli
from worker import problems
from worker.demo.pdf import make_pdf
from worker.documents.loader import load, reconcile
from worker.documents.prepare import prepare
from worker.documents.source import read
from worker.documents.sync import DocumentSync
from worker.graph import schema

pytestmark = pytest.mark.timeout(180)


def write(root: Path, relpath: str, content: str | bytes) -> Path:
    path = root / relpath
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, str):
        path.write_text(content)
    else:
        path.write_bytes(content)
    return path


def make_sync(service: Neo4jService, driver: Driver, **libraries: Path) -> DocumentSync:
    settings = service.settings.with_section("documents", libraries=[{"name": name, "root": root} for name, root in libraries.items()])
    return DocumentSync(settings, driver, "neo4j")


def library(tmp_path: Path) -> Path:
    root = tmp_path / "technical-library"
    write(
        root,
        "manuals/engine.md",
        (
            "---\ntitle: Engine manual\nid: MAN-ENG\n---\nCovers the V6.\n"
            "# Ignition\n## Coil test\nMeasure primary resistance (P0301).\n"
            "# Fuel\nSee [coil test](#coil-test) and [the bulletin](../bulletins/tsb-21-114.md#cause).\n"
        ),
    )
    write(
        root,
        "bulletins/tsb-21-114.md",
        (
            "---\nid: TSB-21-114\n---\n# TSB 21-114\n## Cause\nCoil failure; test per [manual](doc://MAN-ENG#coil-test).\n"
            "## Parts\nSee the [catalog](/parts/catalog.html#ic-2201-b) and [recall](../recalls/r-22-01.pdf).\n"
        ),
    )
    write(
        root,
        "parts/catalog.html",
        (
            "<html><head><title>Parts catalog</title></head><body><h1>Coils</h1>"
            "<h2 id='ic-2201-b'>IC-2201-B</h2><p>Revised coil. <a href='../manuals/engine.md#fuel'>fuel</a></p></body></html>"
        ),
    )
    write(
        root,
        "recalls/r-22-01.pdf",
        make_pdf(
            pages=[["Recall R-22-01", "Scope", "V6 engines.", "Remedy", "Replace the coil."]],
            outline=[("Scope", 0, 1), ("Remedy", 0, 1)],
            links=[(0, "../bulletins/tsb-21-114.md#parts")],
            title="Recall R-22-01",
        ),
    )
    return root


def links(driver: Driver) -> set[tuple[str, str]]:
    rows = driver.execute_query("MATCH (a)-[:LINKS_TO]->(b) RETURN a.uri AS a, b.uri AS b").records
    return {(row["a"], row["b"]) for row in rows}


def unresolved(driver: Driver) -> set[tuple[str, str]]:
    rows = driver.execute_query("MATCH (u:UnresolvedLink) RETURN u.source AS s, u.reason AS r").records
    return {(row["s"], row["r"]) for row in rows}


def test_three_formats_load_with_links_between_them(neo4j_service: Neo4jService, graph: Driver, tmp_path: Path) -> None:
    sync = make_sync(neo4j_service, graph, **{"technical-library": library(tmp_path)})
    report = load(sync, workers=1)
    assert (report.documents, report.skipped, report.unresolved) == (4, 0, 0)
    lib = "technical-library"
    assert links(graph) == {
        (f"{lib}/manuals/engine#fuel", f"{lib}/manuals/engine#ignition/coil-test"),
        (f"{lib}/manuals/engine#fuel", f"{lib}/bulletins/tsb-21-114#tsb-21-114/cause"),
        (f"{lib}/bulletins/tsb-21-114#tsb-21-114/cause", f"{lib}/manuals/engine#ignition/coil-test"),
        (f"{lib}/bulletins/tsb-21-114#tsb-21-114/parts", f"{lib}/parts/catalog#coils/ic-2201-b"),
        (f"{lib}/bulletins/tsb-21-114#tsb-21-114/parts", f"{lib}/recalls/r-22-01"),
        (f"{lib}/parts/catalog#coils/ic-2201-b", f"{lib}/manuals/engine#fuel"),
        (f"{lib}/recalls/r-22-01#scope", f"{lib}/bulletins/tsb-21-114#tsb-21-114/parts"),
    }
    tree = graph.execute_query(
        "MATCH (:Library {uri: $lib})-[:HAS]->(f:Folder)-[:HAS]->(d:Document) RETURN f.uri AS f, d.displayName AS d ORDER BY f",
        lib=lib,
    ).records
    assert [(row["f"], row["d"]) for row in tree] == [
        (f"{lib}/bulletins", "TSB 21-114"),
        (f"{lib}/manuals", "Engine manual"),
        (f"{lib}/parts", "Parts catalog"),
        (f"{lib}/recalls", "Recall R-22-01"),
    ]
    order = graph.execute_query(
        "MATCH p = (:Section {uri: $first})-[:NEXT_SECTION*]->(last) WHERE NOT (last)-[:NEXT_SECTION]->() RETURN [n IN nodes(p) | n.name] AS names",
        first=f"{lib}/manuals/engine#ignition",
    ).records[0]["names"]
    assert order == ["ignition", "coil-test", "fuel"]
    node = graph.execute_query("MATCH (s:Section {uri: $uri}) RETURN s", uri=f"{lib}/manuals/engine#ignition/coil-test").records[0]["s"]
    assert node["text"] == "Measure primary resistance (P0301)."
    assert node["source_path"].endswith("manuals/engine.md") and node["content_hash"] and node["updated_at"]


def test_loading_the_same_tree_twice_gives_an_identical_graph(neo4j_service: Neo4jService, graph: Driver, tmp_path: Path) -> None:
    sync = make_sync(neo4j_service, graph, **{"technical-library": library(tmp_path)})
    load(sync, workers=1)
    first = dump(graph)
    again = load(sync, workers=1)
    assert (again.written, again.unchanged) == (0, 4)
    wipe(graph)
    load(sync, workers=2)
    assert dump(graph) == first


def test_editing_one_section_changes_only_that_section(neo4j_service: Neo4jService, graph: Driver, tmp_path: Path) -> None:
    root = library(tmp_path)
    sync = make_sync(neo4j_service, graph, **{"technical-library": root})
    load(sync, workers=1)
    stamps = "MATCH (n) WHERE n:Section OR n:Document OR n:Folder RETURN n.uri AS uri, n.updated_at AS at"
    before = {row["uri"]: row["at"] for row in graph.execute_query(stamps).records}
    path = root / "manuals/engine.md"
    path.write_text(path.read_text().replace("Measure primary resistance", "Measure secondary resistance"))
    assert sync.sync_path("technical-library", "manuals/engine.md") == "written"
    after = {row["uri"]: row["at"] for row in graph.execute_query(stamps).records}
    changed = {uri for uri in before if before[uri] != after[uri]}
    assert changed == {"technical-library/manuals/engine#ignition/coil-test"}
    assert sync.sync_path("technical-library", "manuals/engine.md") == "unchanged"


def test_deleting_a_document_unresolves_inbound_links_until_it_returns(neo4j_service: Neo4jService, graph: Driver, tmp_path: Path) -> None:
    root = library(tmp_path)
    sync = make_sync(neo4j_service, graph, **{"technical-library": root})
    load(sync, workers=1)
    with_engine = links(graph)
    content = (root / "manuals/engine.md").read_text()
    (root / "manuals/engine.md").unlink()
    assert sync.sync_path("technical-library", "manuals/engine.md") == "deleted"
    assert graph.execute_query("MATCH (n) WHERE n.uri STARTS WITH 'technical-library/manuals' RETURN count(n) AS c").records[0]["c"] == 0
    assert unresolved(graph) == {
        ("technical-library/bulletins/tsb-21-114#tsb-21-114/cause", "no document with id 'MAN-ENG'"),
        ("technical-library/parts/catalog#coils/ic-2201-b", "no document at technical-library/manuals/engine"),
    }
    write(root, "manuals/engine.md", content)
    assert sync.sync_path("technical-library", "manuals/engine.md") == "written"
    assert unresolved(graph) == set()
    assert links(graph) == with_engine


def test_renaming_a_folder_moves_its_uris_and_links_into_it_still_resolve(neo4j_service: Neo4jService, graph: Driver, tmp_path: Path) -> None:
    root = library(tmp_path)
    write(root, "manuals/brakes.md", "# Brakes\nSee [engine](engine.md#coil-test).\n")
    sync = make_sync(neo4j_service, graph, **{"technical-library": root})
    load(sync, workers=1)
    os.rename(root / "manuals", root / "repair-manuals")
    sync.sync_folder("technical-library", "manuals")
    sync.sync_folder("technical-library", "repair-manuals")
    found = links(graph)
    assert ("technical-library/repair-manuals/brakes#brakes", "technical-library/repair-manuals/engine#ignition/coil-test") in found
    assert ("technical-library/bulletins/tsb-21-114#tsb-21-114/cause", "technical-library/repair-manuals/engine#ignition/coil-test") in found
    assert not graph.execute_query("MATCH (n) WHERE n.uri STARTS WITH 'technical-library/manuals' RETURN n").records
    # the catalog links by path to the old place: truly broken now, and said so
    assert unresolved(graph) == {
        ("technical-library/parts/catalog#coils/ic-2201-b", "no document at technical-library/manuals/engine"),
    }


def test_missing_anchor_ends_at_the_document_and_resolves_when_the_heading_appears(neo4j_service: Neo4jService, graph: Driver, tmp_path: Path) -> None:
    root = tmp_path / "lib"
    write(root, "a.md", "# A\nSee [b later](b.md#later).\n")
    write(root, "b.md", "# B\nnothing yet\n")
    sync = make_sync(neo4j_service, graph, lib=root)
    load(sync, workers=1)
    edge = "MATCH (:Section {uri: 'lib/a#a'})-[l:LINKS_TO]->(t) RETURN t.uri AS t, l.anchor_found AS found"
    assert [tuple(row.values()) for row in graph.execute_query(edge).records] == [("lib/b", False)]
    write(root, "b.md", "# B\n## Later\nnow here\n")
    sync.sync_path("lib", "b.md")
    assert [tuple(row.values()) for row in graph.execute_query(edge).records] == [("lib/b#b/later", True)]


def test_a_fragment_written_with_other_punctuation_reaches_its_section(neo4j_service: Neo4jService, graph: Driver, tmp_path: Path) -> None:
    """Authors slug headings by hand: "A/C Compressor" slugs to `ac-compressor`, written `a-c-compressor`;
    "ECM/PCM" to `ecmpcm`, written `ecm-pcm`. Once punctuation is ignored they meet; an exact match
    still wins, and a fragment two sections match that way ends at the document with the reason."""
    root = tmp_path / "lib"
    write(
        root,
        "hvac.md",
        "## Refrigerant Sub-System Service\n### A/C Compressor Replacement Procedure\nsteps\n"
        "## Lost communication with ECM/PCM\ncheck\n## A-C Unit\none\n## AC Unit\ntwo\n",
    )
    write(
        root,
        "bulletin.md",
        "# Bulletin\n"
        "[replace](hvac.md#refrigerant-sub-system-service/a-c-compressor-replacement-procedure) "
        "[lost](hvac.md#lost-communication-with-ecm-pcm) [exact](hvac.md#ac-unit) [either](hvac.md#a-c-u-n-i-t)\n",
    )
    load(make_sync(neo4j_service, graph, lib=root), workers=1)
    edges = "MATCH (:Section {uri: 'lib/bulletin#bulletin'})-[l:LINKS_TO]->(t) RETURN l.href AS href, t.uri AS target, l.anchor_found AS found, l.anchor_note AS note"
    found = {row["href"]: (row["target"], row["found"], row["note"]) for row in graph.execute_query(edges).records}
    assert found["hvac.md#refrigerant-sub-system-service/a-c-compressor-replacement-procedure"] == (
        "lib/hvac#refrigerant-sub-system-service/ac-compressor-replacement-procedure",
        True,
        "punctuation ignored: #refrigerant-sub-system-service/a-c-compressor-replacement-procedure is "
        "#refrigerant-sub-system-service/ac-compressor-replacement-procedure",
    )
    assert found["hvac.md#lost-communication-with-ecm-pcm"] == (
        "lib/hvac#lost-communication-with-ecmpcm",
        True,
        "punctuation ignored: #lost-communication-with-ecm-pcm is #lost-communication-with-ecmpcm",
    )
    assert found["hvac.md#ac-unit"] == ("lib/hvac#ac-unit", True, None)  # exact, though a-c-unit is the same loosely
    target, anchored, note = found["hvac.md#a-c-u-n-i-t"]
    assert (target, anchored) == ("lib/hvac", False) and "matches 2 sections once punctuation is ignored" in note
    listing = run_cli("links", "--under", "lib/bulletin", env=clean_env(**neo4j_service.env()))
    assert "lib/hvac#a-c-unit, lib/hvac#ac-unit: ends at the document" in listing.stdout, listing.stdout


def test_a_heading_path_gone_stale_lands_on_the_section_its_last_segment_names(neo4j_service: Neo4jService, graph: Driver, tmp_path: Path) -> None:
    """Sections move between parents and old links keep old paths: `#timing-sub-system/variable-valve-
    timing-solenoid-replacement` lands on the section now at the top level, noted in `links` and
    `outline`; a last segment several sections answer to stays at the document, naming them; an
    exact anchor still wins; a fragment of slashes or 10,000 characters never lands on a section it
    does not name. The note goes when the author fixes the path, and `links --fallback` lists what
    is left to fix."""
    root = tmp_path / "lib"
    write(
        root,
        "engine.md",
        "# Engine\n## Variable Valve Timing Solenoid Replacement\nsteps\n## Cam\n### Inspection\ncam\n## Crank\n### Inspection\ncrank\n"
        "## Timing Sub-System\n### Chain\nchain\n",
    )
    bulletin = (
        "# Bulletin\n"
        "[moved](engine.md#engine/timing-sub-system/variable-valve-timing-solenoid-replacement) "
        "[two](engine.md#timing/inspection) [exact](engine.md#engine/timing-sub-system/chain) "
        f"[slashes](engine.md#////) [long](engine.md#{'a/' * 5000}) [none](engine.md#timing/nowhere) [gone](missing.md)\n"
    )
    write(root, "bulletin.md", bulletin)
    sync = make_sync(neo4j_service, graph, lib=root)
    load(sync, workers=1)
    edges = "MATCH (:Section {uri: 'lib/bulletin#bulletin'})-[l:LINKS_TO]->(t) RETURN l.text AS text, t.uri AS target, l.anchor_found AS found, l.anchor_note AS note"
    found = {row["text"]: (row["target"], row["found"], row["note"]) for row in graph.execute_query(edges).records}
    assert found["moved"] == (
        "lib/engine#engine/variable-valve-timing-solenoid-replacement",
        True,
        "path moved: #engine/timing-sub-system/variable-valve-timing-solenoid-replacement is now #engine/variable-valve-timing-solenoid-replacement",
    )
    target, anchored, note = found["two"]
    assert (target, anchored) == ("lib/engine", False) and note.startswith("path moved: #timing/inspection names no section, and #inspection names 2")
    assert found["exact"] == ("lib/engine#engine/timing-sub-system/chain", True, None)
    assert found["slashes"][:2] == found["long"][:2] == ("lib/engine", False)
    assert found["none"] == ("lib/engine", False, None)
    env = clean_env(**neo4j_service.env())
    outline = run_cli("outline", "lib/bulletin", env=env)
    assert "path moved: #engine/timing-sub-system/variable-valve-timing-solenoid-replacement is now" in outline.stdout, outline.stdout
    fallback = run_cli("links", "--fallback", "--under", "lib/bulletin", env=env)
    assert "6 resolved links, 1 unresolved; 5 landed by a fallback" in fallback.stdout, fallback.stdout
    assert (
        "(path moved: #engine/timing-sub-system/variable-valve-timing-solenoid-replacement is now #engine/variable-valve-timing-solenoid-replacement)"
        in fallback.stdout
    )
    assert "lib/engine#engine/timing-sub-system/chain" not in fallback.stdout
    to_fix = run_cli("links", "--fallback", "--broken", "--under", "lib/bulletin", env=env).stdout.splitlines()
    assert to_fix[0] == "6 resolved links, 1 unresolved; 5 landed by a fallback" and len(to_fix[1:7]) == 6 and not to_fix[7], "\n".join(to_fix)
    assert to_fix[1].startswith("lib/bulletin#bulletin  missing.md  (") and "path moved" in to_fix[2], to_fix
    write(root, "bulletin.md", bulletin.replace("#engine/timing-sub-system/variable-valve", "#engine/variable-valve"))  # the author fixes it
    sync.sync_path("lib", "bulletin.md")
    left = run_cli("links", "--fallback", "--under", "lib/bulletin", env=env).stdout
    assert "4 landed by a fallback" in left and "variable-valve" not in left, left


def test_bad_input_is_recorded_and_never_stops_the_load(neo4j_service: Neo4jService, graph: Driver, tmp_path: Path) -> None:
    root = tmp_path / "lib"
    write(root, "good.md", "# Good\n[dup](doc://DUP)\n")
    write(root, "latin1.md", "# Caf\xe9\nna\xefve\n".encode("latin-1"))
    write(root, "binary.md", b"\x00\x01\x02binary")
    write(root, "big.md", "# Big\n" + "x" * 5000)
    write(root, "front.md", "---\ntitle: [broken\n---\n# Still loaded\n")
    write(root, "dup-a.md", "---\nid: DUP\n---\n# A\n")
    write(root, "dup-b.md", "---\nid: DUP\n---\n# B\n")
    write(root, "broken.pdf", b"%PDF-1.4 not really")
    write(root, ".hidden/secret.md", "# hidden\n")
    write(root, "notes.md.swp", "swap")
    (root / "loop").mkdir()
    os.symlink(root, root / "loop" / "back")
    sync = make_sync(neo4j_service, graph, lib=root)
    sync.settings = sync.settings.with_section("documents", max_file_bytes=4000)
    report = load(sync, workers=1)
    assert report.documents == 5 and report.skipped == 3
    found = {(problem.key, problem.kind) for problem in problems.listing(graph, "neo4j", "documents")}
    assert {
        ("lib:latin1.md", "warning"),
        ("lib:binary.md", "skipped"),
        ("lib:big.md", "skipped"),
        ("lib:front.md", "warning"),
        ("lib:broken.pdf", "skipped"),
        ("lib:loop/back", "skipped"),
        ("id:dup", "conflict"),
    } <= found
    titles = {row["t"] for row in graph.execute_query("MATCH (d:Document) RETURN d.displayName AS t").records}
    assert titles == {"Good", "Caf\ufffd", "Still loaded", "A", "B"}
    assert links(graph) == {("lib/good#good", "lib/dup-a")}  # a duplicated id goes to the lowest URI

    result = run_cli("errors", env=clean_env(**neo4j_service.env(), LAKEGRAPH_STATE_DIR=str(tmp_path / "state")))
    assert result.returncode == 0 and "lib:binary.md" in result.stdout and "binary content" in result.stdout

    write(root, "binary.md", "# Fixed\n")
    sync.sync_path("lib", "binary.md")
    assert ("lib:binary.md", "skipped") not in {(problem.key, problem.kind) for problem in problems.listing(graph, "neo4j", "documents")}


def test_a_file_past_max_sections_is_refused_and_the_load_goes_on(neo4j_service: Neo4jService, graph: Driver, tmp_path: Path) -> None:
    root = tmp_path / "lib"
    write(root, "ordinary.md", "# Ordinary\n[huge](huge.md)\n")
    write(root, "huge.md", "# Huge\n" + "".join(f"## Step {i}\nDo step {i} with care.\n" for i in range(3000)))
    sync = make_sync(neo4j_service, graph, lib=root)
    sync.settings = sync.settings.with_section("documents", max_sections=2000)
    report = load(sync, workers=1)
    assert (report.written, report.skipped, report.unresolved) == (1, 1, 1)
    (refused,) = [problem for problem in problems.listing(graph, "neo4j", "documents") if problem.key == "lib:huge.md"]
    assert (refused.kind, refused.reason) == ("skipped", "3,001 sections, over documents.max_sections (2,000)")
    assert load(sync, workers=1).read == 0  # refused until the file or the limit changes
    sync.settings = sync.settings.with_section("documents", max_sections=80_000)
    assert load(sync, workers=1).written == 1


def test_links_broken_lists_each_unresolved_link_with_its_reason(neo4j_service: Neo4jService, graph: Driver, tmp_path: Path) -> None:
    root = tmp_path / "lib"
    write(root, "a.md", "# A\n[gone](missing.md) [up](../../x.md) [here](#nowhere) [web](https://example.com)\n")
    load(make_sync(neo4j_service, graph, lib=root), workers=1)
    result = run_cli("links", "--broken", env=clean_env(**neo4j_service.env(), LAKEGRAPH_STATE_DIR=str(tmp_path / "s")))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.split("\n\n")[0].splitlines()  # the listing, then its freshness
    assert lines[0] == "0 resolved links, 3 unresolved"
    assert lines[1:] == [
        "lib/a#a  missing.md  (no document at lib/missing)",
        "lib/a#a  ../../x.md  (points outside library 'lib')",
        "lib/a#a  #nowhere  (no heading or id #nowhere in this document)",
    ]
    external = graph.execute_query("MATCH (s:Section {uri: 'lib/a#a'}) RETURN s.external_links AS e").records[0]["e"]
    assert external == ["https://example.com"]
    assert graph.execute_query("MATCH (d:Document) RETURN count(d) AS c").records[0]["c"] == 1  # no fake documents


def test_reconcile_repairs_every_kind_of_drift(neo4j_service: Neo4jService, graph: Driver, tmp_path: Path) -> None:
    root = library(tmp_path)
    sync = make_sync(neo4j_service, graph, **{"technical-library": root})
    load(sync, workers=1)
    (root / "parts/catalog.html").unlink()
    write(root, "manuals/new.md", "# New\n[engine](engine.md)\n")
    path = root / "bulletins/tsb-21-114.md"
    path.write_text(path.read_text() + "\n## Added\ntext\n")
    report = reconcile(sync)
    assert report.outcomes == {"written": 2, "deleted": 1}
    repaired = dump(graph)
    wipe(graph)
    load(sync, workers=1)
    assert dump(graph) == repaired


def test_two_workers_creating_the_same_document_at_once_both_succeed(neo4j_service: Neo4jService, graph: Driver, tmp_path: Path) -> None:
    root = tmp_path / "lib"
    write(root, "a.md", "# A\n## B\n## C\ntext\n")
    sync = make_sync(neo4j_service, graph, lib=root)
    document = prepare(read(sync.library("lib"), "a.md", sync.rules), sync.rules.id_schemes, str(root / "a.md"))
    for _ in range(5):
        wipe(graph)
        schema.apply(graph, "neo4j")
        with ThreadPoolExecutor(max_workers=2) as pool:
            reports = list(pool.map(lambda _: sync.writer.write([document]), range(2)))
        assert sorted(len(report.written) for report in reports) in ([0, 1], [1, 1])
        count = "MATCH (s:Section {doc_uri: 'lib/a'}) RETURN count(s) AS c"
        assert graph.execute_query(count).records[0]["c"] == 3
