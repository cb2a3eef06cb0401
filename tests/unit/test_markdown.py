"""The Markdown parser: structure, text per section, links and anchors, bad front matter."""

from __future__ import annotations

from worker.documents.parsers.markdown import parse

DOC = """\
---
title: Ignition coil bulletin
id: TSB-21-114
---
Preamble with [engine manual](../manuals/engine.md#coil-test) and <https://example.com/a>.

# Cause #

Cause text, see [the part][coil] and [coil] and [Coil].

## Coil failure
Inline `[not a link](code.md)` stays text.

```md
# not a heading
[not a link](fenced.md)
```

~~~~
## nor this
~~~~

    # indented code, not a heading

Setext one
==========

Setext two
----------
<a id="explicit"></a><a name="named"></a> See <a href="doc://MAN-1#x">the manual</a> or https://bare.example.org/p.

[coil]: /parts/ignition-coil.md "Coil"
"""


def test_front_matter_and_headings_in_reading_order() -> None:
    parsed = parse(DOC)
    assert parsed.front_matter == {"title": "Ignition coil bulletin", "id": "TSB-21-114"}
    assert [(block.level, block.title) for block in parsed.headings] == [
        (1, "Cause"),
        (2, "Coil failure"),
        (1, "Setext one"),
        (2, "Setext two"),
    ]
    assert parsed.problems == []


def test_text_belongs_to_its_own_section_only() -> None:
    parsed = parse(DOC)
    cause, failure, setext_one, _ = parsed.headings
    assert cause.text == "Cause text, see the part and coil and Coil."
    assert "Inline [not a link](code.md) stays text." in failure.text
    assert "# not a heading" in failure.text and "## nor this" in failure.text
    assert "# indented code, not a heading" in failure.text
    assert setext_one.text == ""
    assert parsed.preamble.text.startswith("Preamble with engine manual and https://example.com/a")


def test_links_of_every_kind_and_none_from_code() -> None:
    parsed = parse(DOC)
    preamble, cause, failure, _, setext_two = parsed.blocks
    assert [(link.href, link.kind) for link in preamble.links] == [
        ("../manuals/engine.md#coil-test", "inline"),
        ("https://example.com/a", "autolink"),
    ]
    assert [(link.href, link.text, link.kind) for link in cause.links] == [
        ("/parts/ignition-coil.md", "the part", "reference"),
        ("/parts/ignition-coil.md", "coil", "reference"),
        ("/parts/ignition-coil.md", "Coil", "reference"),
    ]
    assert failure.links == []
    assert [(link.href, link.kind) for link in setext_two.links] == [
        ("doc://MAN-1#x", "html"),
        ("https://bare.example.org/p", "autolink"),
    ]
    assert setext_two.ids == ["explicit", "named"]


def test_images_are_not_cross_references_but_linked_images_are() -> None:
    parsed = parse("![diagram](img/coil.png)\n\n[![thumb](t.png)](../manuals/coil.md)\n")
    assert [link.href for link in parsed.preamble.links] == ["../manuals/coil.md"]


def test_malformed_front_matter_is_recorded_and_the_body_still_parses() -> None:
    parsed = parse("---\ntitle: [unclosed\n---\n# Body\ntext\n")
    assert parsed.front_matter == {}
    assert len(parsed.problems) == 1 and "malformed front matter at line 3" in parsed.problems[0]
    assert [block.title for block in parsed.headings] == ["Body"]


def test_thematic_break_first_line_is_not_front_matter() -> None:
    parsed = parse("---\n# Title\ntext\n")
    assert parsed.front_matter == {} and [block.title for block in parsed.headings] == ["Title"]


def test_list_item_above_dashes_is_not_a_setext_heading() -> None:
    parsed = parse("- item\n---\n")
    assert parsed.headings == []


def test_html_comments_hide_links() -> None:
    parsed = parse("before <!-- [x](hidden.md)\n[y](also-hidden.md) --> after [z](shown.md)\n")
    assert [link.href for link in parsed.preamble.links] == ["shown.md"]
