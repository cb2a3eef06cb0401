"""PDF structure as publishers write it: numbered headings and their guards, running furniture,
link annotations (wrapped, across page breaks, internal jumps), titles and ids."""

from __future__ import annotations

import io

from pypdf import PdfReader, PdfWriter
from pypdf.annotations import Link
from pypdf.xmp import XmpInformation

from tests.rendered_library import PUBLISHER
from tests.rendered_library import build as build_library
from tests.rendered_library import pdf as render_pdf
from worker.demo.pdf import make_pdf
from worker.documents.parsers import pdf
from worker.documents.rules import DocumentRules
from worker.documents.source import build

RULES = DocumentRules.defaults()
TOP, LEADING = 720, 14  # where make_pdf writes its first baseline, and the line spacing


def line_rect(line: int, width: int = 300) -> tuple[float, float, float, float]:
    baseline = TOP - LEADING * line
    return (72, baseline - 3, 72 + width, baseline + 10)


def with_links(data: bytes, links: list[tuple[int, int, dict]]) -> bytes:
    """Add link annotations: (page, line, Link keyword arguments) with the line's rectangle."""
    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(data)))
    for page, line, target in links:
        writer.add_annotation(page, Link(rect=line_rect(line), **target))
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()


def headings(data: bytes) -> list[tuple[int, str, str]]:
    return [(block.level, block.number, block.title) for block in pdf.parse(data, RULES.patterns).headings]


def test_numbered_headings_keep_their_number_apart_from_name_and_anchor() -> None:
    data = make_pdf(pages=[["Brake service", "1 Overview", "Pads and rotors.", "1.1 Pad wear", "Measure pads.", "2 Bleeding", "Use DOT 4."]])
    record = build("lib", "brakes.pdf", data, RULES)
    assert [(s.level, s.number, s.title, s.anchor, s.path) for s in record.sections] == [
        (1, "1", "Overview", "overview", "overview"),
        (2, "1.1", "Pad wear", "pad-wear", "overview/pad-wear"),
        (1, "2", "Bleeding", "bleeding", "bleeding"),
    ]
    assert record.sections[1].text == "Measure pads."
    assert record.display_name == "Brake service"


def test_list_items_table_rows_dates_part_numbers_and_page_numbers_are_not_headings() -> None:
    lines = [
        "Brake service",
        "1 Overview",
        "Steps:",
        "1 Remove the wheel.",
        "2 fitted bolts on the hub",
        "3 12 V 15 A",
        "4 Wheel",
        "12.05 Revision",
        "2201 Brake pad kit",
        "2 Bleeding",
        "5 March 2021 Revision B",
        "Use DOT 4.",
        "2.1 Bleeder screw",
        "2.3 Skipped number",
        "3 Reassembly",
    ]
    assert headings(make_pdf(pages=[lines])) == [
        (1, "1", "Overview"),
        (1, "2", "Bleeding"),
        (2, "2.1", "Bleeder screw"),
        (1, "3", "Reassembly"),
    ]


def test_a_table_of_contents_is_not_a_run_of_headings() -> None:
    contents = ["Contents", "1 Overview 2", "2 Bleeding 3", "2.1 Bleeder screw 3", "3 Reassembly .... 4"]
    body = ["1 Overview", "Text.", "2 Bleeding", "Text.", "2.1 Bleeder screw", "Text.", "3 Reassembly", "Text."]
    parsed = pdf.parse(make_pdf(pages=[contents, body]), RULES.patterns)
    assert [block.title for block in parsed.headings] == ["Overview", "Bleeding", "Bleeder screw", "Reassembly"]
    assert "1 Overview 2" in parsed.preamble.text


def test_running_headers_footers_and_page_numbers_are_not_text() -> None:
    names = ["Overview", "Bleeding", "Reassembly"]
    pages = [
        ["ACME MOTORS", f"{page} {names[page - 1]}", f"Body text of page {page}.", "", "", f"TSB-20-501 rev 2 - Page {page} of 3", str(page)]
        for page in (1, 2, 3)
    ]
    parsed = pdf.parse(make_pdf(pages=pages), RULES.patterns)
    text = "\n".join(block.text for block in parsed.blocks)
    assert "ACME MOTORS" not in text and "Page" not in text
    assert [block.title for block in parsed.headings] == names
    assert [block.text for block in parsed.headings] == ["Body text of page 1.", "Body text of page 2.", "Body text of page 3."]


def test_a_wrapped_link_is_one_link_in_the_section_above_it_across_a_page_break() -> None:
    page_one = ["Coil bulletin", "1 Condition", "Misfire.", "2 Correction", "Text.", "See the coil", "identification section."]
    page_two = ["More correction text.", "And the engine manual.", "3 Parts", "None."]
    coil = {"url": "doc://TSB-20-501#coil-identification"}
    data = with_links(
        make_pdf(pages=[page_one, page_two]),
        [
            (0, 5, coil),
            (0, 6, coil),  # one link drawn on two lines
            (1, 1, {"url": "../manuals/engine.pdf#fuel"}),  # on page 2, still under "2 Correction"
            (1, 3, {"target_page_index": 0}),  # a jump to the top of page 1
        ],
    )
    parsed = pdf.parse(data, RULES.patterns)
    _condition, correction, parts = parsed.headings
    assert [link.href for link in correction.links] == ["doc://TSB-20-501#coil-identification", "../manuals/engine.pdf#fuel"]
    assert [link.href for link in parts.links] == ["#page=1"]
    assert "page=1" in parsed.preamble.ids and "page=2" in correction.ids


def test_bookmarks_give_the_tree_and_place_sections_where_they_point() -> None:
    data = make_pdf(
        pages=[["Recall R-22-01", "Scope: vehicles built 2021.", "Remedy", "Replace coil IC-2201-B."], ["Parts", "See catalog."]],
        outline=[("1 Scope", 0, 1), ("2 Remedy", 0, 1), ("2.1 Parts", 1, 2)],
        links=[(0, "../bulletins/tsb-21-114.md#cause"), (1, "https://oem.example/parts")],
        title="Recall R-22-01",
    )
    parsed = pdf.parse(data, RULES.patterns)
    assert parsed.front_matter["title"] == "Recall R-22-01"
    assert [(block.level, block.number, block.title) for block in parsed.headings] == [(1, "1", "Scope"), (1, "2", "Remedy"), (2, "2.1", "Parts")]
    _scope, remedy, parts = parsed.headings
    assert "Replace coil IC-2201-B." in remedy.text and "Remedy" not in remedy.text and parts.text == "See catalog."
    assert [link.href for block in parsed.blocks for link in block.links] == [
        "../bulletins/tsb-21-114.md#cause",
        "https://oem.example/parts",
    ]


def test_titles_come_from_meaningful_metadata_else_the_most_prominent_opening_text() -> None:
    doc = build_library(documents=3)[0]
    rendered = pdf.parse(render_pdf(doc, outline=False), RULES.patterns)  # /Title is reportlab's "untitled"
    assert rendered.front_matter["title"] == doc.title  # the large title, not the running header above it
    assert PUBLISHER not in rendered.preamble.text
    lines = [["Body text."]]
    assert pdf.parse(make_pdf(pages=lines, title="Microsoft Word - Brake Report.docx")).front_matter["title"] == "Brake Report"
    assert pdf.parse(make_pdf(pages=lines, title="untitled")).front_matter["title"] == "Body text."


def test_ids_and_titles_from_xmp_metadata() -> None:
    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(make_pdf(pages=[["Body text."]]))))
    xmp = XmpInformation.create()
    xmp.dc_identifier, xmp.dc_title = "MAN-XMP-9", {"x-default": "Engine handbook"}
    writer.xmp_metadata = xmp
    buffer = io.BytesIO()
    writer.write(buffer)
    assert pdf.parse(buffer.getvalue(), RULES.patterns).front_matter == {"id": "MAN-XMP-9", "title": "Engine handbook"}


def test_ids_from_a_metadata_line_else_an_id_shaped_title() -> None:
    doc = build_library(documents=3)[0]
    assert pdf.parse(render_pdf(doc, outline=False), RULES.patterns).front_matter["id"] == doc.doc_id
    by_title = pdf.parse(make_pdf(pages=[["Ignition coil misfire", "Text."]], title="TSB-20-501"), RULES.patterns)
    assert by_title.front_matter == {"id": "TSB-20-501", "title": "Ignition coil misfire"}
    record = build("lib", "bulletins/x.pdf", make_pdf(pages=[["Doc ID: MAN-ENG-7", "Text."]]), RULES)
    assert record.doc_id == "MAN-ENG-7"
