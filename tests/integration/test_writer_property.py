"""The same library from any writer gives the same graph: a real Markdown estate (PowerShell-Docs)
and the project's generated libraries (the test library and the demo's), written again by pandoc into Word, OpenDocument and AsciiDoc,
by python-docx saving pandoc's Word files again, and as Word converted from pandoc's OpenDocument,
each load into the Markdown's section URIs, and every link lands on the section (or document) the
Markdown's link lands on — compared link by link: each source's links and where each lands (not
by href: pandoc's Word writer renames a bookmark longer than Word's 40 characters, `#x7c51…`).

CI renders one PowerShell module (212 pages) with pandoc's three writers, and the generated
libraries with every writer; `--full` renders all 3,088 pages with every writer but ODT->DOCX
(see ESTATE_WRITERS). Pages whose
code holds a line that is exactly an AsciiDoc listing delimiter are left out of the AsciiDoc
comparison, counted: pandoc writes them so that Asciidoctor too ends the listing there
(`writers.unfaithful`).
"""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import pytest
from neo4j import Driver

from tests import writers
from tests.conftest import Neo4jService
from tests.corpora import unpack_powershell_docs
from tests.graph_dump import wipe
from tests.integration.test_document_graph import make_sync
from tests.rendered_library import write as write_generated
from worker.demo.library import write_library
from worker.documents import uris
from worker.documents.loader import load
from worker.graph import schema

pytestmark = [pytest.mark.corpus, pytest.mark.timeout(3600)]
if not writers.available() and not os.environ.get("CI"):  # CI installs it (.ci/run), and fails without it
    pytestmark.append(pytest.mark.skip(reason="needs pandoc (apt-get install pandoc)"))

LIBRARY = "library"  # make_sync's library name
CI_FOLDER = "7.5/Microsoft.PowerShell.Core"  # one PowerShell module: 212 pages, its about_ pages the most cross-linked
SECTIONS = "MATCH (s:Section) RETURN s.uri AS uri"
LINKS = """
MATCH (a)-[l:LINKS_TO]->(b)
RETURN a.uri AS source, b.uri AS target, l.anchor_found AS found, l.href AS href
"""


Graph = tuple[set[str], Counter]


def _graph(service: Neo4jService, driver: Driver, root: Path) -> Graph:
    """Section URIs and links (source, target, anchor found, written with a fragment)."""
    wipe(driver)
    report = load(make_sync(service, driver, library=root))
    assert report.skipped == 0, root
    sections = {record["uri"] for record in driver.execute_query(SECTIONS).records}
    links = Counter((record["source"], record["target"], record["found"], "#" in record["href"]) for record in driver.execute_query(LINKS).records)
    return sections, links


def _without(loaded: Graph, left_out: frozenset[str]) -> Graph:
    """The graph without the sections of the documents `left_out` and the links written in them or
    into them (their anchors are what the writer lost)."""

    def kept(uri: str) -> bool:
        return uri.partition("#")[0] not in left_out

    sections, links = loaded
    return {uri for uri in sections if kept(uri)}, Counter({link: count for link, count in links.items() if kept(link[0]) and kept(link[1])})


def _left_out(source: Path, writer: str) -> frozenset[str]:
    """The document URIs of the Markdown files the writer cannot carry."""
    return frozenset(
        uris.document_uri(LIBRARY, path.relative_to(source).as_posix())
        for path in source.rglob("*.md")
        if writers.unfaithful(path.read_text(encoding="utf-8", errors="replace"), writer)
    )


def _mismatches(markdown: Counter, rendered: Counter) -> list[str]:
    missing = markdown - rendered
    extra = rendered - markdown
    return [f"only in Markdown: {link}" for link in sorted(missing)][:10] + [f"only rendered: {link}" for link in sorted(extra)][:10]


@pytest.fixture(scope="module")
def estate(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Path:
    root = unpack_powershell_docs(tmp_path_factory.mktemp("powershell"))
    if request.config.getoption("--full"):
        return root
    return root / CI_FOLDER


@pytest.fixture(scope="module")
def estate_graph(neo4j_service: Neo4jService, driver: Driver, estate: Path) -> Graph:
    """The Markdown's own graph, read once for every writer."""
    schema.apply(driver, "neo4j")
    return _graph(neo4j_service, driver, estate)


CI_WRITERS = ("docx", "odt", "asciidoc")
# pandoc reading back its own OpenDocument names some headings by its default identifiers, not the
# Markdown's GitHub ones, and its links do not follow (measured on all of PowerShell-Docs: 300 of
# 64,938 sections, `2. Lexical Structure` as `#lexical-structure`; 416 of 22,417 links): a fault of
# that converter the reader cannot see, so ODT->DOCX is held to the property on the generated
# libraries only.
ESTATE_WRITERS = tuple(writer for writer in writers.WRITERS if writer != "docx-from-odt")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "estate_writer" in metafunc.fixturenames:
        metafunc.parametrize("estate_writer", ESTATE_WRITERS if metafunc.config.getoption("--full") else CI_WRITERS)


def test_powershell_docs_from_any_writer_land_every_link_where_the_markdown_does(
    neo4j_service: Neo4jService,
    graph: Driver,
    estate: Path,
    estate_graph: Graph,
    tmp_path: Path,
    estate_writer: str,
) -> None:
    writer = estate_writer
    left_out = _left_out(estate, writer)
    assert len(left_out) <= 0.06 * sum(1 for _ in estate.rglob("*.md")), sorted(left_out)
    markdown_sections, markdown_links = _without(estate_graph, left_out)
    section_links = sum(count for (_, target, _, _), count in markdown_links.items() if "#" in target)
    assert len(markdown_sections) > 2_000 and section_links >= 30
    rendered = tmp_path / writer
    writers.render(estate, rendered, writer)
    sections, links = _without(_graph(neo4j_service, graph, rendered), left_out)
    assert not sections ^ markdown_sections, sorted(sections ^ markdown_sections)[:10]
    assert not links - markdown_links, _mismatches(markdown_links, links)  # no link lands where the Markdown's does not
    assert not markdown_links - links, _mismatches(markdown_links, links)


def _generated(kind: str, root: Path) -> Path:
    """A generated library's Markdown files alone (the writers render only those)."""
    if kind == "test library":
        write_generated(root, "markdown", documents=40)
    else:
        write_library(root, seed=7)
        for path in [path for path in root.rglob("*") if path.is_file() and path.suffix != ".md"]:
            path.unlink()
    return root


@pytest.mark.parametrize("kind", ["test library", "demo library"])
@pytest.mark.parametrize("writer", writers.WRITERS)
def test_the_generated_libraries_from_pandoc_land_every_link_where_the_markdown_does(
    neo4j_service: Neo4jService,
    graph: Driver,
    tmp_path: Path,
    writer: str,
    kind: str,
) -> None:
    source = _generated(kind, tmp_path / "markdown")
    markdown_sections, markdown_links = _graph(neo4j_service, graph, source)
    on_sections = sum(count for (_, target, _, fragment), count in markdown_links.items() if fragment and "#" in target)
    assert markdown_links.total() >= 100 and (on_sections >= 40 or kind == "demo library")
    writers.render(source, tmp_path / writer, writer)
    sections, links = _graph(neo4j_service, graph, tmp_path / writer)
    assert not sections ^ markdown_sections, sorted(sections ^ markdown_sections)[:10]
    assert not links - markdown_links and not markdown_links - links, _mismatches(markdown_links, links)
