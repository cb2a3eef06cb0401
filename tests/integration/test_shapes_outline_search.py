"""The outline and search shapes on a loaded library (real Neo4j, real full-text index)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from neo4j import Driver

from shapes.coverage import MAX_URIS, coverage
from shapes.outline import Outline, outline, render
from shapes.search import search
from shapes.serving.service import Shapes
from shapes.spec.exceptions import ShapeError
from tests.conftest import Neo4jService
from tests.graph_dump import wipe
from tests.helpers import assert_one_line_error, clean_env, run_cli
from tests.integration.test_document_graph import make_sync, write
from worker.documents.loader import load
from worker.graph import schema
from worker.graph.document_text import NODE_TEXT
from worker.shared.grants import EVERYTHING
from worker.shared.tokens import token_pattern

pytestmark = pytest.mark.timeout(180)


@pytest.fixture
def library(neo4j_service: Neo4jService, driver: Driver, tmp_path: Path) -> Path:
    wipe(driver)
    schema.apply(driver, "neo4j")
    root = tmp_path / "lib"
    write(
        root,
        "manuals/engine.md",
        "# Engine\n## Ignition\nCoil test for P0301 misfire.\n## Fuel\nSee [bulletin](../bulletins/tsb-1.md#cause) and [gone](gone.md).\n",
    )
    write(root, "bulletins/tsb-1.md", "# TSB 1\n## Cause\nRough idle from a failed coil.\n")
    for index in range(30):  # many strong matches outside the manuals subtree
        write(root, f"recalls/r-{index:02d}.md", f"# Recall {index}\ncoil coil coil coil misfire misfire coil {index}\n")
    write(root, "manuals/brakes.md", "# Brakes\nNo coil here, only one mention: coil.\n")
    load(make_sync(neo4j_service, driver, lib=root), workers=1)
    return root


def test_outline_rows_in_tree_order_with_links_and_cut_counts(library: Path, driver: Driver) -> None:
    shape = outline(driver, "neo4j", "lib/manuals", depth=1, grant=EVERYTHING)
    assert render(shape).splitlines() == [
        "manuals/  [Folder]  lib/manuals",
        "  Brakes  [Document]  lib/manuals/brakes  (+1 section below)",
        "  Engine  [Document]  lib/manuals/engine  (+1 section below)",
    ]
    deep = render(outline(driver, "neo4j", "lib/manuals/engine", depth=3, grant=EVERYTHING)).splitlines()
    assert deep == [
        "Engine  [Document]  lib/manuals/engine",
        "  Engine  [Section]  lib/manuals/engine#engine",
        "    Ignition  [Section]  lib/manuals/engine#engine/ignition",
        "    Fuel  [Section]  lib/manuals/engine#engine/fuel",
        "      → Cause  lib/bulletins/tsb-1#tsb-1/cause",
        "      ✗ gone.md  (no document at lib/manuals/gone)",
    ]
    top = outline(driver, "neo4j", None, depth=1, grant=EVERYTHING)
    assert [(row.kind, row.uri) for row in top.rows] == [
        ("Library", "lib"),
        ("Folder", "lib/bulletins"),
        ("Folder", "lib/manuals"),
        ("Folder", "lib/recalls"),
    ]
    assert top.rows[2].note == "+2 documents below"


def test_an_outline_reads_no_level_past_its_node_cap_and_counts_what_lies_below(library: Path, driver: Driver) -> None:
    whole = outline(driver, "neo4j", "lib", depth=20, grant=EVERYTHING)
    assert whole.shown_depth is None and max(row.depth for row in whole.rows) > 2
    capped = outline(driver, "neo4j", "lib", depth=20, grant=EVERYTHING, max_nodes=4)  # the library and its three folders
    assert capped.shown_depth == 1
    assert [(row.depth, row.uri, row.note) for row in capped.rows if row.kind in ("Library", "Folder")] == [
        (0, "lib", ""),
        (1, "lib/bulletins", "+1 document below"),
        (1, "lib/manuals", "+2 documents below"),
        (1, "lib/recalls", "+30 documents below"),
    ]
    assert "levels 2–20 not read" in render(capped).splitlines()[-1]


def test_a_kept_outline_follows_every_change_of_the_documents(library: Path, driver: Driver, neo4j_service: Neo4jService) -> None:
    """A server keeps outlines per version of the documents: an edit, a new link and a deletion
    each show in the next call, which equals a fresh read."""
    shapes = Shapes(neo4j_service.settings, driver, "neo4j")
    sync = make_sync(neo4j_service, driver, lib=library)

    def ask() -> Outline:
        return shapes.ask("outline", uri="lib/manuals", depth=3).result

    first = ask()
    assert ask() == first
    for edit in (
        lambda: write(library, "manuals/brakes.md", "# Brakes\n## Pads\nSee [engine](engine.md).\n"),
        lambda: write(library, "manuals/clutch.md", "# Clutch\n"),
        lambda: (library / "manuals/clutch.md").unlink(),
    ):
        edit()
        for relpath in ("manuals/brakes.md", "manuals/clutch.md"):
            sync.sync_path("lib", relpath)
        assert ask() == outline(driver, "neo4j", "lib/manuals", depth=3, grant=EVERYTHING) != first
    assert any(row.kind == "Link" and row.uri == "lib/manuals/engine" for row in ask().rows)


def test_outline_refuses_unknown_uris_and_bad_depths(library: Path, driver: Driver) -> None:
    with pytest.raises(ShapeError, match="no library, folder, document or section has the URI"):
        outline(driver, "neo4j", "lib/nowhere", depth=1, grant=EVERYTHING)
    with pytest.raises(ShapeError, match="depth must be between"):
        outline(driver, "neo4j", "lib", depth=-1, grant=EVERYTHING)


def test_scoped_search_returns_k_hits_where_rank_then_filter_would_not(library: Path, driver: Driver) -> None:
    k = 2
    global_top = [hit.uri for hit in search(driver, "neo4j", "coil", None, k, [], EVERYTHING).hits]
    assert not any(uri.startswith("lib/manuals") for uri in global_top)  # the manuals rank below the recalls
    scoped = search(driver, "neo4j", "coil", "lib/manuals", k, [], EVERYTHING)
    assert len(scoped.hits) == k and all(hit.uri.startswith("lib/manuals") for hit in scoped.hits)
    assert {hit.kind for hit in search(driver, "neo4j", "coil", None, 50, [], EVERYTHING).hits} <= {"Document", "Section"}


def test_an_unscoped_search_ranked_inside_the_index_gives_the_best_k(library: Path, driver: Driver) -> None:
    """Lucene keeps the best k itself when nothing filters after it: every k's scores are the first
    k of the whole ranking's, and every hit is one the whole ranking has."""
    ranked = search(driver, "neo4j", "coil misfire", None, 200, [], EVERYTHING).hits
    assert len(ranked) > 30
    for k in (1, 2, 5, 13):
        best = search(driver, "neo4j", "coil misfire", None, k, [], EVERYTHING).hits
        assert [hit.score for hit in best] == [hit.score for hit in ranked[:k]] and set(best) <= set(ranked)


def test_expansion_terms_are_or_ed_and_hits_carry_breadcrumbs_and_snippets(library: Path, driver: Driver) -> None:
    plain = search(driver, "neo4j", "shudder", None, 5, [], EVERYTHING)
    assert plain.hits == []
    expanded = search(driver, "neo4j", "shudder", None, 5, ["rough idle"], EVERYTHING)
    [hit] = expanded.hits
    assert hit.uri == "lib/bulletins/tsb-1#tsb-1/cause"
    assert hit.breadcrumb == "lib › bulletins › TSB 1 › tsb-1 › cause"
    assert "«Rough» «idle»" in hit.snippet


@pytest.mark.parametrize("query", ["coil AND (misfire", 'P0301: "unclosed', "title:coil~2 OR *", "a || b && !c ^ [x TO y]", "\\"])
def test_lucene_syntax_in_user_text_is_escaped_never_an_error(library: Path, driver: Driver, query: str) -> None:
    search(driver, "neo4j", query, None, 3, [], EVERYTHING)


def test_search_refuses_empty_and_huge_queries(library: Path, driver: Driver) -> None:
    with pytest.raises(ShapeError, match="empty query"):
        search(driver, "neo4j", "   ", None, 10, [], EVERYTHING)
    with pytest.raises(ShapeError, match="too long"):
        search(driver, "neo4j", "coil " * 500, None, 10, [], EVERYTHING)


def test_cli_outline_and_search(library: Path, neo4j_service: Neo4jService, tmp_path: Path) -> None:
    env = clean_env(LAKEGRAPH_STATE_DIR=str(tmp_path / "state"), **neo4j_service.env())
    result = run_cli("search", "P0301", "--under", "lib/manuals", "--json", env=env)
    assert result.returncode == 0, result.stderr
    assert [hit["uri"] for hit in json.loads(result.stdout)["hits"]] == ["lib/manuals/engine#engine/ignition"]
    text = run_cli("outline", "lib/bulletins", "--depth", "2", env=env).stdout
    assert "TSB 1  [Document]  lib/bulletins/tsb-1" in text
    assert_one_line_error(run_cli("outline", "lib/nowhere", env=env), "no library, folder, document or section")


def test_a_scope_narrowed_inside_lucene_keeps_every_node_in_scope(library: Path, driver: Driver) -> None:
    """Every prefix of every uri (cut anywhere, mid-word too) as the scope: search and coverage give
    exactly the unscoped answer's nodes under it (the uri phrase may only narrow, never drop)."""
    rows = driver.execute_query(f"MATCH (n:Document|Section) RETURN n.uri AS uri, {NODE_TEXT.format(node='n')} AS text").records
    mentions = sorted(row["uri"] for row in rows if token_pattern("coil").search(row["text"]))  # coverage's truth, from a scan
    everywhere = {hit.uri for hit in search(driver, "neo4j", "coil misfire", None, 200, [], EVERYTHING).hits}
    assert len(everywhere) > 30 and len(mentions) > 30
    for under in sorted({row["uri"][:cut] for row in rows for cut in range(1, len(row["uri"]) + 1)}):
        scoped = {hit.uri for hit in search(driver, "neo4j", "coil misfire", under, 200, [], EVERYTHING).hits}
        assert scoped == {uri for uri in everywhere if uri.startswith(under)}, under
        expected = [uri for uri in mentions if uri.startswith(under)]
        found = coverage(driver, "neo4j", ["coil"], under, EVERYTHING).found
        assert (found[0].mentions, found[0].uris) == (len(expected), expected[:MAX_URIS]) if expected else not found, under


def test_words_are_matched_in_the_text_not_in_the_uri(library: Path, driver: Driver) -> None:
    """The index holds each uri for scoping; a word only a path has ('recalls', 'bulletins') finds nothing."""
    assert search(driver, "neo4j", "recalls", None, 10, [], EVERYTHING).hits == []
    assert coverage(driver, "neo4j", ["bulletins"], None, EVERYTHING).missing == ["bulletins"]
    assert search(driver, "neo4j", "recall", None, 50, [], EVERYTHING).hits  # the titles say "Recall"


def test_a_text_index_of_an_older_version_is_rebuilt_with_the_scope_field(library: Path, driver: Driver) -> None:
    driver.execute_query(f"DROP INDEX {schema.DOCUMENT_TEXT_INDEX}")
    driver.execute_query(f"CREATE FULLTEXT INDEX {schema.DOCUMENT_TEXT_INDEX} FOR (n:Document|Section) ON EACH [n.displayName, n.name, n.text]")
    report = schema.apply(driver, "neo4j")
    assert report.created == [schema.DOCUMENT_TEXT_INDEX]
    [row] = driver.execute_query(f"SHOW FULLTEXT INDEXES YIELD name, properties WHERE name = '{schema.DOCUMENT_TEXT_INDEX}' RETURN properties").records
    assert tuple(row["properties"]) == (*schema.DOCUMENT_TEXT_FIELDS, schema.DOCUMENT_SCOPE_FIELD)
    assert {hit.uri for hit in search(driver, "neo4j", "coil", "lib/manuals/", 10, [], EVERYTHING).hits} == {
        "lib/manuals/engine#engine/ignition",
        "lib/manuals/brakes#brakes",
    }
    assert schema.apply(driver, "neo4j").created == []
