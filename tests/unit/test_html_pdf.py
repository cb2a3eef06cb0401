"""The HTML and PDF parsers give the same model as Markdown."""

from __future__ import annotations

from worker.demo.pdf import make_pdf
from worker.documents.parsers import html, pdf
from worker.documents.source import build

PAGE = """<!doctype html><html><head><title>Parts catalog</title><meta name="id" content="PARTS-1">
<style>h1 { color: red }</style><script>var x = "<h2>no</h2>";</script></head><body>
<p>Intro <a href="../manuals/engine.md#coil-test">engine</a>.</p>
<h1 id="coils">Ignition <em>coils</em></h1><p>Coil text.</p>
<h2>IC-2201-B</h2><p id="rev-b">Revised part, see <a href="#coils">coils</a> and <a href='https://oem.example'>OEM</a>.</p>
<h1>Plugs</h1><p>Plug text <a name="plug-anchor"></a></p>
</body></html>"""


def test_html_headings_text_links_and_anchors() -> None:
    parsed = html.parse(PAGE)
    assert parsed.front_matter["title"] == "Parts catalog" and parsed.front_matter["id"] == "PARTS-1"
    assert [(block.level, block.title) for block in parsed.headings] == [(1, "Ignition coils"), (2, "IC-2201-B"), (1, "Plugs")]
    coils, part, plugs = parsed.headings
    assert coils.ids == ["coils"] and coils.text == "Coil text."
    assert [(link.href, link.text) for link in parsed.preamble.links] == [("../manuals/engine.md#coil-test", "engine")]
    assert [link.href for link in part.links] == ["#coils", "https://oem.example"]
    assert part.ids == ["rev-b"] and plugs.ids == ["plug-anchor"]
    assert "var x" not in parsed.preamble.text and "color" not in parsed.preamble.text


def test_html_record_uses_title_and_meta_id() -> None:
    record = build("lib", "parts/catalog.html", PAGE.encode())
    assert record.display_name == "Parts catalog" and record.doc_id == "PARTS-1"
    assert record.sections[0].anchors == ("ignition-coils", "coils")


def test_pdf_headings_from_the_outline_with_links() -> None:
    data = make_pdf(
        pages=[["Recall R-22-01", "Scope: vehicles built 2021.", "Remedy", "Replace coil IC-2201-B."], ["Parts", "See catalog."]],
        outline=[("Scope", 0, 1), ("Remedy", 0, 1), ("Parts", 1, 2)],
        links=[(0, "../bulletins/tsb-21-114.md#cause"), (1, "https://oem.example/parts")],
        title="Recall R-22-01",
    )
    parsed = pdf.parse(data)
    assert parsed.front_matter["title"] == "Recall R-22-01"
    assert [(block.level, block.title) for block in parsed.headings] == [(1, "Scope"), (1, "Remedy"), (2, "Parts")]
    assert "Replace coil IC-2201-B." in parsed.headings[1].text
    assert [link.href for block in parsed.blocks for link in block.links] == [
        "../bulletins/tsb-21-114.md#cause", "https://oem.example/parts",
    ]


def test_pdf_numbered_headings_without_an_outline() -> None:
    data = make_pdf(pages=[["Brake service", "1 Overview", "Pads and rotors.", "1.1 Pad wear", "Measure pads.", "2 Bleeding", "Use DOT 4."]])
    parsed = pdf.parse(data)
    assert [(block.level, block.title) for block in parsed.headings] == [(1, "1 Overview"), (2, "1.1 Pad wear"), (1, "2 Bleeding")]
    assert parsed.headings[1].text == "Measure pads."
