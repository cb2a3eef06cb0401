"""The HTML parser gives the same model as Markdown."""

from __future__ import annotations

from worker.documents.parsers import html
from worker.documents.rules import DocumentRules
from worker.documents.source import build

RULES = DocumentRules.defaults()

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
    record = build("lib", "parts/catalog.html", PAGE.encode(), RULES)
    assert record.display_name == "Parts catalog" and record.doc_id == "PARTS-1"
    assert record.sections[0].anchors == ("ignition-coils", "coils")
