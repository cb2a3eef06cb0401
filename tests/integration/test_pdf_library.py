"""The same library as Markdown, as rendered PDFs, as bookmarked PDFs and as Word documents loads
into one graph: the same documents, section URIs, names, reading order and links."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from neo4j import Driver

from tests.conftest import Neo4jService
from tests.graph_dump import wipe
from tests.integration.test_document_graph import make_sync
from tests.rendered_library import FORMATS, PUBLISHER, Format, write
from worker.demo.pdf import make_pdf
from worker.documents.loader import load

pytestmark = pytest.mark.timeout(300)

DOCUMENTS = "MATCH (d:Document) RETURN d.uri AS uri, d.displayName AS title, d.doc_id AS id ORDER BY uri"
SECTIONS = """
MATCH (s:Section)
RETURN s.uri AS uri, s.displayName AS name, s.level AS level, s.sort_pos AS position, s.text AS text
ORDER BY uri
"""
LINKS = """
MATCH (a)-[l:LINKS_TO]->(b)
RETURN a.uri AS source, b.uri AS target, l.anchor_found AS found ORDER BY source, target
"""
UNRESOLVED = "MATCH (u:UnresolvedLink) RETURN u.href AS href, u.reason AS reason"
FRAGMENT_LINKS = "MATCH ()-[l:LINKS_TO]->(t) WHERE l.href CONTAINS '#' RETURN l.href AS href, t:Section AS to_section"


@dataclass(frozen=True)
class Loaded:
    documents: list[tuple]
    sections: list[tuple]
    texts: dict[str, str]
    links: list[tuple]
    unresolved: list[tuple]
    fragments: list[tuple[str, bool]]  # (href, whether it lands on a Section) of every link with a fragment


def loaded(service: Neo4jService, driver: Driver, root: Path) -> Loaded:
    wipe(driver)
    report = load(make_sync(service, driver, library=root))
    assert report.skipped == 0
    records = driver.execute_query(SECTIONS).records
    return Loaded(
        documents=[tuple(record.values()) for record in driver.execute_query(DOCUMENTS).records],
        sections=[(record["uri"], record["name"], record["level"], record["position"]) for record in records],
        texts={record["uri"]: record["text"] for record in records},
        links=[tuple(record.values()) for record in driver.execute_query(LINKS).records],
        unresolved=[tuple(record.values()) for record in driver.execute_query(UNRESOLVED).records],
        fragments=[(record["href"], record["to_section"]) for record in driver.execute_query(FRAGMENT_LINKS).records],
    )


def test_markdown_pdf_bookmarked_pdf_and_docx_give_one_graph(neo4j_service: Neo4jService, graph: Driver, tmp_path: Path) -> None:
    graphs: dict[Format, Loaded] = {}
    for fmt in FORMATS:
        write(tmp_path / fmt, fmt, documents=15)
        graphs[fmt] = loaded(neo4j_service, graph, tmp_path / fmt)
    markdown = graphs["markdown"]
    assert len(markdown.documents) == 15 and len(markdown.sections) == 15 * 7
    assert not markdown.unresolved and len(markdown.links) >= 15 * 6
    assert all(found for *_, found in markdown.links)
    for fmt in FORMATS:  # every fragment form (#anchor, #heading/path) reaches its section in every format
        fragments = graphs[fmt].fragments
        assert len(fragments) == len(markdown.links) and all(to_section for _, to_section in fragments), fmt
        assert sum("/" in href.partition("#")[2] for href, _ in fragments) >= 15 * 2, fmt
    for fmt in ("pdf", "pdf-outline", "docx"):
        assert graphs[fmt].documents == markdown.documents, fmt
        assert graphs[fmt].sections == markdown.sections, fmt
        assert graphs[fmt].links == markdown.links, fmt
        assert graphs[fmt].unresolved == markdown.unresolved, fmt
        texts = graphs[fmt].texts
        assert not any(PUBLISHER in text or "- Page " in text for text in texts.values()), "running header or footer in text"
        for uri, text in markdown.texts.items():  # each section's own text, wrapped differently
            assert " ".join(texts[uri].split())[:80] == " ".join(text.split())[:80], (fmt, uri)


def test_fragments_name_a_section_by_path_anchor_number_or_page_in_every_format(
    neo4j_service: Neo4jService,
    graph: Driver,
    tmp_path: Path,
) -> None:
    root = tmp_path / "fragments"
    root.mkdir()
    (root / "target.pdf").write_bytes(
        make_pdf(pages=[["Target manual", "1 Condition", "The symptoms.", "2 Procedure", "The steps."], ["2.1 Coil identification", "The coil."]])
    )
    forms = ("procedure/coil-identification", "coil-identification", "2.1", "page=2")
    (root / "source.md").write_text("# Source\n" + " ".join(f"[{form}](doc://target#{form})" for form in forms) + "\n")
    (root / "numbered.md").write_text("# Guide\n## 2.1 Coil identification\nThe coil.\n## Links\n[by number](#2.1) [by path](#guide/21-coil-identification)\n")
    load(make_sync(neo4j_service, graph, lib=root))
    landed = {(record["source"], record["target"]) for record in graph.execute_query(LINKS).records}
    assert landed == {
        ("lib/source#source", "lib/target#procedure/coil-identification"),
        ("lib/numbered#guide/links", "lib/numbered#guide/21-coil-identification"),
    }
    assert graph.execute_query("MATCH ()-[l:LINKS_TO]->() RETURN count(l) AS n").records[0]["n"] == len(forms) + 2


def test_id_links_match_declared_ids_before_file_names_ignoring_case_and_punctuation(
    neo4j_service: Neo4jService,
    graph: Driver,
    tmp_path: Path,
) -> None:
    root = tmp_path / "ids"
    for relpath, text in {
        "guide.md": "# Guide\n[a](doc://Shared_Name) [b](doc://man-falcon-engine#fuel) [c](doc://tsb.20.501)\n",
        "declared.md": "---\ndocument_id: SHARED-NAME\n---\n# Declared\n",
        "shared-name.md": "# Merely named so\n",
        "manuals/MAN-FALCON-ENGINE.md": "# Fuel\n",
        "bulletin.html": '<html><head><meta name="DC.Identifier" content="TSB-20-501"></head><body><h1>B</h1></body></html>',
    }.items():
        path = root / relpath
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    load(make_sync(neo4j_service, graph, lib=root))
    targets = [record["target"] for record in graph.execute_query(LINKS).records]
    assert targets == ["lib/bulletin", "lib/declared", "lib/manuals/man-falcon-engine#fuel"]
