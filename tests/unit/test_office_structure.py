"""Office and AsciiDoc structure as authors write it: Word headings from styles, outline levels
and numbering; bookmarks and `_Toc` links, HYPERLINK and REF fields; what is not text (tracked
deletions, field codes); slides as sections with jumps between them (decks written by
python-pptx); OpenDocument headings and package-relative links (documents written by odfpy);
AsciiDoc sections, anchors and cross-references; and every hostile file refused with its reason."""

from __future__ import annotations

import io
from dataclasses import replace

import pytest

from tests.hostile_office import DOCUMENT, _document, _replace, files, plain_docx
from worker.demo.docx import Paragraph, Run, make_docx
from worker.documents.rules import DocumentRules
from worker.documents.source import DocumentRecord, Skipped, build

RULES = DocumentRules.defaults()


def _record(name: str, data: bytes, rules: DocumentRules = RULES) -> DocumentRecord:
    return build("lib", name, data, rules)


def _links(record: DocumentRecord) -> dict[str, list[str]]:
    return {section.path: [link.href for link in section.links] for section in record.sections if section.links}


def test_word_headings_numbers_bookmarks_and_links() -> None:
    data = make_docx(
        [
            Paragraph([Run("Coil service")], title=True),
            Paragraph([Run("Document: TSB-21-114")]),
            Paragraph([Run("Contents: "), Run("Cause", "#_Toc1"), Run(" "), Run("Fit", "#_Toc2")]),
            Paragraph([Run("1 Cause")], heading=1, bookmark="_Toc1"),
            Paragraph([Run("The coil fails. See "), Run("the manual", "../manuals/engine.docx#fuel-system"), Run(".")]),
            Paragraph([Run("2.1 Fit the coil")], heading=2, bookmark="_Toc2"),
            Paragraph([Run("Torque to spec; "), Run("parts", "https://parts.example/c#x"), Run(" and "), Run("TSB", "doc://TSB-20-001#cause")]),
        ],
        title="Untitled",
    )
    record = _record("bulletins/coil.docx", data)
    assert record.display_name == "Coil service"  # "Untitled" in the core properties means nothing; the Title paragraph does
    assert record.doc_id == "TSB-21-114"
    assert [(section.path, section.number, section.title) for section in record.sections] == [
        ("cause", "1", "Cause"),
        ("cause/fit-the-coil", "2.1", "Fit the coil"),
    ]
    assert "_toc1" in record.sections[0].anchors and "2.1" in record.sections[1].anchors
    assert [link.href for link in record.links] == ["#_Toc1", "#_Toc2"]
    assert _links(record) == {
        "cause": ["../manuals/engine.docx#fuel-system"],
        "cause/fit-the-coil": ["https://parts.example/c#x", "doc://TSB-20-001#cause"],
    }
    assert record.sections[0].text == "The coil fails. See the manual."
    assert "Coil service" not in record.text  # the title is not text


def _styled(body: str, styles: str) -> bytes:
    w = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
    return _replace(plain_docx(), {DOCUMENT: _document(body), "word/styles.xml": f'<w:styles xmlns:w="{w}">{styles}</w:styles>'.encode()})


def test_word_heading_levels_come_from_outline_levels_styles_and_their_bases() -> None:
    styles = (
        '<w:style w:type="paragraph" w:default="1" w:styleId="Normal"><w:name w:val="Normal"/></w:style>'
        '<w:style w:type="paragraph" w:styleId="Kapitel"><w:name w:val="Kapitel"/><w:pPr><w:outlineLvl w:val="0"/></w:pPr></w:style>'
        '<w:style w:type="paragraph" w:styleId="Chapter"><w:name w:val="Chapter"/><w:basedOn w:val="Kapitel"/></w:style>'
        '<w:style w:type="paragraph" w:styleId="Sub"><w:name w:val="heading 2"/></w:style>'
        '<w:style w:type="paragraph" w:styleId="TOCHeading"><w:name w:val="TOC Heading"/><w:basedOn w:val="Kapitel"/>'
        '<w:pPr><w:outlineLvl w:val="9"/></w:pPr></w:style>'
        '<w:style w:type="paragraph" w:styleId="Numbered"><w:name w:val="heading 1"/><w:pPr><w:numPr><w:numId w:val="3"/></w:numPr></w:pPr></w:style>'
    )

    def p(style: str, text: str, extra: str = "") -> str:
        return f'<w:p><w:pPr><w:pStyle w:val="{style}"/>{extra}</w:pPr><w:r><w:t>{text}</w:t></w:r></w:p>'

    body = (
        p("TOCHeading", "Contents")
        + p("Chapter", "Based on a chapter style")
        + p("Sub", "Named heading two")
        + p("Normal", "Outline level in the paragraph", '<w:outlineLvl w:val="2"/>')
        + p("Numbered", "Auto one")
        + p("Numbered", "Auto two")
        + p("Sub", "Direct body text", '<w:outlineLvl w:val="9"/>')
    )
    record = _record("styles.docx", _styled(body, styles))
    assert [(section.level, section.title, section.number) for section in record.sections] == [
        (1, "Based on a chapter style", ""),
        (2, "Named heading two", ""),
        (3, "Outline level in the paragraph", ""),
        (1, "Auto one", "1"),
        (1, "Auto two", "2"),
    ]
    assert record.text == "Contents"
    assert record.sections[-1].text == "Direct body text"


def test_word_fields_deletions_tables_lists_and_text_boxes() -> None:
    w = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
    styles = (
        '<w:style w:type="paragraph" w:default="1" w:styleId="Normal"><w:name w:val="Normal"/></w:style>'
        '<w:style w:type="paragraph" w:styleId="Heading1"><w:name w:val="heading 1"/></w:style>'
    )
    field = (
        '<w:r><w:fldChar w:fldCharType="begin"/></w:r><w:r><w:instrText> HYPERLINK "../parts/coil.docx" \\l "stock" </w:instrText></w:r>'
        '<w:r><w:fldChar w:fldCharType="separate"/></w:r><w:r><w:t>coil stock</w:t></w:r><w:r><w:fldChar w:fldCharType="end"/></w:r>'
    )
    body = (
        '<w:p><w:pPr><w:pStyle w:val="Heading1"/></w:pPr><w:bookmarkStart w:id="1" w:name="_Ref42"/><w:r><w:t>Parts</w:t></w:r></w:p>'
        f'<w:p>{field}<w:r><w:t xml:space="preserve"> kept </w:t></w:r><w:del><w:r><w:delText>removed</w:delText></w:r></w:del></w:p>'
        '<w:p><w:fldSimple w:instr=" REF _Ref42 \\h "><w:r><w:t>see Parts</w:t></w:r></w:fldSimple></w:p>'
        '<w:p><w:pPr><w:numPr><w:numId w:val="5"/></w:numPr></w:pPr><w:r><w:t>first item</w:t></w:r></w:p>'
        "<w:tbl><w:tr><w:tc><w:p><w:r><w:t>Part</w:t></w:r></w:p></w:tc><w:tc><w:p><w:r><w:t>Torque</w:t></w:r></w:p></w:tc></w:tr>"
        "<w:tr><w:tc><w:p><w:r><w:t>IC-2201</w:t></w:r></w:p></w:tc><w:tc><w:p><w:r><w:t>8 Nm</w:t></w:r></w:p></w:tc></w:tr></w:tbl>"
        '<w:p><w:r><w:drawing><w:txbxContent xmlns:w="' + w + '"><w:p><w:r><w:t>boxed note</w:t></w:r></w:p></w:txbxContent></w:drawing></w:r></w:p>'
    )
    record = _record("fields.docx", _styled(body, styles))
    (parts,) = record.sections
    assert "_ref42" in parts.anchors
    assert [(link.href, link.text) for link in parts.links] == [("../parts/coil.docx#stock", "coil stock"), ("#_Ref42", "see Parts")]
    assert parts.text.splitlines() == ["coil stock kept", "see Parts", "- first item", "Part | Torque", "IC-2201 | 8 Nm", "boxed note"]
    assert "HYPERLINK" not in parts.text and "removed" not in parts.text


def _deck() -> bytes:
    from pptx import Presentation

    deck = Presentation()
    intro = deck.slides.add_slide(deck.slide_layouts[0])
    intro.shapes.title.text = "Coil training"
    intro.placeholders[1].text = "Document: TRN-7"
    body = deck.slides.add_slide(deck.slide_layouts[1])
    body.shapes.title.text = "Removal"
    frame = body.placeholders[1].text_frame
    frame.text = "Disconnect the battery."
    run = frame.add_paragraph().add_run()
    run.text = "the bulletin"
    run.hyperlink.address = "../bulletins/tsb-21-114.docx#cause"
    untitled = deck.slides.add_slide(deck.slide_layouts[6])
    box = untitled.shapes.add_textbox(0, 0, 100, 100)
    box.text_frame.text = "Back to the start"
    box.click_action.target_slide = intro
    untitled.notes_slide.notes_text_frame.text = "Say the torque out loud."
    buffer = io.BytesIO()
    deck.save(buffer)
    return buffer.getvalue()


def test_a_deck_is_its_slides_with_their_links_and_notes() -> None:
    record = _record("training/coil.pptx", _deck())
    assert record.display_name == "Coil training" and record.doc_id == "TRN-7"
    assert [(section.path, section.title) for section in record.sections] == [
        ("coil-training", "Coil training"),
        ("removal", "Removal"),
        ("slide-3", "Slide 3"),
    ]
    assert [section.anchors[-1] for section in record.sections] == ["slide=1", "slide=2", "slide=3"]
    assert _links(record) == {"removal": ["../bulletins/tsb-21-114.docx#cause"], "slide-3": ["#slide=1"]}
    assert record.sections[2].text == "Back to the start\nSay the torque out loud."


HEADINGS = (
    '<w:style w:type="paragraph" w:default="1" w:styleId="Normal"><w:name w:val="Normal"/></w:style>'
    '<w:style w:type="paragraph" w:styleId="Heading1"><w:name w:val="heading 1"/></w:style>'
    '<w:style w:type="paragraph" w:styleId="Heading2"><w:name w:val="heading 2"/></w:style>'
)


def _heading(text: str, level: int = 1, inside: str = "") -> str:
    return f'<w:p><w:pPr><w:pStyle w:val="Heading{level}"/></w:pPr>{inside}<w:r><w:t>{text}</w:t></w:r></w:p>'


def _para(text: str, inside: str = "") -> str:
    return f"<w:p>{inside}<w:r><w:t>{text}</w:t></w:r></w:p>" if text else f"<w:p>{inside}</w:p>"


def _start(name: str, ident: int) -> str:
    return f'<w:bookmarkStart w:id="{ident}" w:name="{name}"/>'


def _end(ident: int) -> str:
    return f'<w:bookmarkEnd w:id="{ident}"/>'


def _anchors(record: DocumentRecord) -> dict[str, set[str]]:
    return {section.path: set(section.anchors) - {section.anchor} for section in record.sections}


def test_a_bookmark_marks_the_heading_it_starts_in_or_just_before_whatever_wrote_it() -> None:
    """pandoc wraps a section in its heading's bookmark, starting before the heading, ids out of
    order and ends nested; Word, LibreOffice and Google Docs start it inside the heading; a bookmark
    in body text marks the section holding it; one alone in an empty paragraph marks what follows."""
    body = (
        _start("engine", 23)
        + _heading("Engine")
        + _para("intro")
        + _start("sealing", 21)
        + _heading("Sealing", 2)
        + _para("text")
        + _start("mount", 20)
        + _heading("Mount replacement", 2)
        + _para("text")
        + _end(20)
        + _end(21)
        + _start("misfire-diagnosis", 22)
        + _heading("Misfire", 2)
        + _end(22)
        + _end(23)
        + _heading("Word", 1, _start("_Toc123", 5) + _end(5))
        + _heading("Google", 2, _start("id.x1", 6))
        + _para("torque is 8 Nm", _start("torque-note", 7))
        + _para("", _start("_Ref9", 8) + _end(8))
        + _heading("LibreOffice", 2, _start("__RefHeading___1", 9) + _end(9))
    )
    record = _record("writers.docx", _styled(body, HEADINGS))
    assert _anchors(record) == {
        "engine": set(),  # pandoc's bookmarks are the headings' own slugs here: no extra anchor
        "engine/sealing": set(),
        "engine/mount-replacement": {"mount"},
        "engine/misfire": {"misfire-diagnosis"},
        "word": {"_toc123"},
        "word/google": {"id.x1", "torque-note"},  # the body bookmark stays in the section holding it
        "word/libreoffice": {"_ref9", "__refheading___1"},  # an empty paragraph's bookmark marks the heading below
    }


def test_hostile_bookmarks_load_and_never_mark_a_heading_they_do_not_start_at() -> None:
    """Overlapping, nested, repeated, unended, ended in another part, ten on one heading, and one
    waiting at the end of the document: every one on a section, none on the wrong heading."""
    ten = "".join(_start(f"b{number}", 100 + number) for number in range(10))
    body = (
        _heading("One", 1, ten)
        + _start("overlap-a", 1)
        + _para("alpha")
        + _start("overlap-b", 2)
        + _end(1)
        + _heading("Two")
        + _end(2)
        + _start("repeat", 3)
        + _heading("Three")
        + _para("body", _start("repeat", 4) + _start("no-end", 5))
        + _end(77)  # the end of a bookmark started in another part
        + _para("last")
        + _start("trailing", 6)
    )
    record = _record("hostile-bookmarks.docx", _styled(body, HEADINGS))
    assert _anchors(record) == {
        "one": {f"b{number}" for number in range(10)} | {"overlap-a"},  # started before body text: the section in force
        "two": {"overlap-b"},
        "three": {"repeat", "no-end", "trailing"},
    }


def _odt() -> bytes:
    from odf.opendocument import OpenDocumentText
    from odf.text import A, Bookmark, H, List, ListItem, P

    document = OpenDocumentText()
    document.meta.addElement(__import__("odf.dc", fromlist=["Title"]).Title(text="Brake manual"))
    heading = H(outlinelevel=1, text="1 Brakes")
    heading.addElement(Bookmark(name="brakes-start"))
    document.text.addElement(heading)
    paragraph = P(text="See ")
    paragraph.addElement(A(href="../bulletins/tsb-9.odt#cause", text="the bulletin"))
    document.text.addElement(paragraph)
    document.text.addElement(H(outlinelevel=2, text="1.1 Pads"))
    items = List()
    item = ListItem()
    item.addElement(P(text="Check wear"))
    items.addElement(item)
    document.text.addElement(items)
    document.text.addElement(P(text="Back to "))
    document.text.lastChild.addElement(A(href="#brakes-start", text="brakes"))
    buffer = io.BytesIO()
    document.write(buffer)
    return buffer.getvalue()


def test_opendocument_headings_lists_bookmarks_and_package_relative_links() -> None:
    record = _record("manuals/brakes.odt", _odt())
    assert record.display_name == "Brake manual"
    assert [(section.path, section.number, section.level) for section in record.sections] == [("brakes", "1", 1), ("brakes/pads", "1.1", 2)]
    assert "brakes-start" in record.sections[0].anchors
    assert _links(record) == {"brakes": ["bulletins/tsb-9.odt#cause"], "brakes/pads": ["#brakes-start"]}  # ../ is the package itself
    assert record.sections[1].text == "- Check wear\nBack to brakes"


def test_opendocument_bookmarks_and_reference_marks_mark_the_heading_they_start_in_or_before() -> None:
    from odf.opendocument import OpenDocumentText
    from odf.text import Bookmark, H, P, ReferenceMark, ReferenceMarkStart

    document = OpenDocumentText()
    document.text.addElement(H(outlinelevel=1, text="Brakes"))
    document.text.addElement(P(text="intro"))
    empty = P()
    empty.addElement(Bookmark(name="pads-section"))  # alone in an empty paragraph: the heading below
    document.text.addElement(empty)
    pads = H(outlinelevel=2, text="Pads")
    pads.addElement(ReferenceMarkStart(name="pads-ref"))
    document.text.addElement(pads)
    note = P(text="wear limit")
    note.addElement(ReferenceMark(name="wear-limit"))  # in body text: the section holding it
    document.text.addElement(note)
    buffer = io.BytesIO()
    document.write(buffer)
    record = _record("brakes.odt", buffer.getvalue())
    assert {section.path: set(section.anchors) for section in record.sections} == {
        "brakes": {"brakes"},
        "brakes/pads": {"pads", "pads-section", "pads-ref", "wear-limit"},
    }


def _workbook() -> bytes:
    from openpyxl import Workbook

    book = Workbook()
    torques = book.active
    torques.title = "Torque values"
    torques.append(["Part", "Torque (Nm)", "Checked"])
    torques.append(["IC-2201", 8, True])
    torques["A3"] = "=A2"
    parts = book.create_sheet("Parts list")
    parts["A1"] = "the bulletin"
    parts["A1"].hyperlink = "../bulletins/tsb-21-114.docx"
    parts["A2"] = "back to torques"
    parts["A2"].hyperlink = "#'Torque values'!A1"
    book.properties.title = "Coil workbook"
    buffer = io.BytesIO()
    book.save(buffer)
    return buffer.getvalue()


def test_a_workbook_is_its_sheets_with_their_rows_and_links() -> None:
    record = _record("specs/coil.xlsx", _workbook())
    assert record.display_name == "Coil workbook"
    assert [(section.path, section.title) for section in record.sections] == [("torque-values", "Torque values"), ("parts-list", "Parts list")]
    assert "torque values" in record.sections[0].anchors  # `#Torque values`, as Excel's own links name a sheet
    assert record.sections[0].text.splitlines()[:2] == ["Part | Torque (Nm) | Checked", "IC-2201 | 8 | TRUE"]
    assert _links(record) == {"parts-list": ["../bulletins/tsb-21-114.docx", "#Torque values"]}


ASCIIDOC = """\
= Coil service
:doc_id: TSB-21-114
:toc:

Intro with a link:../manuals/engine.adoc#fuel[manual] and https://parts.example[parts].

[[cause-anchor]]
== Cause and fix

The coil fails, see <<torque,the torques>> and <<other.adoc#top,another>>.

[source,sql]
----
== not a heading
SELECT 1
----

=== Torque
[#torque]
xref:_cause_and_fix[Back up]. anchor:inline-spot[]Torque to 8 Nm.

////
== commented out
////
include::shared/footer.adoc[]
"""


def test_asciidoc_sections_anchors_and_cross_references() -> None:
    record = _record("bulletins/coil.adoc", ASCIIDOC.encode())
    assert record.display_name == "Coil service" and record.doc_id == "TSB-21-114"
    assert [(section.path, section.level) for section in record.sections] == [("cause-and-fix", 1), ("cause-and-fix/torque", 2)]
    cause, torque = record.sections
    assert {"cause-anchor", "_cause_and_fix"} <= set(cause.anchors)
    assert {"torque", "inline-spot", "_torque"} <= set(torque.anchors)
    assert [link.href for link in record.links] == ["../manuals/engine.adoc#fuel", "https://parts.example"]
    assert _links(record) == {"cause-and-fix": ["#torque", "other.adoc#top"], "cause-and-fix/torque": ["#_cause_and_fix"]}
    assert "== not a heading" in cause.text and "commented out" not in torque.text
    assert record.problems == ("not followed: include::shared/footer.adoc[]",)


@pytest.mark.parametrize("hostile", files(), ids=lambda hostile: hostile.name)
def test_each_hostile_file_is_refused_with_its_reason_or_loads_with_its_note(hostile) -> None:
    if not hostile.reason:
        record = _record(hostile.name, hostile.data)
        assert any(hostile.note in problem for problem in record.problems)
        assert record.sections
        return
    with pytest.raises(Skipped) as refused:
        _record(hostile.name, hostile.data)
    assert hostile.reason in str(refused.value)


def test_the_unpacked_total_and_the_parse_time_are_limits_too() -> None:
    long = make_docx([Paragraph([Run(f"Step {index}: torque the bolt {index} to spec.")]) for index in range(60_000)])
    with pytest.raises(Skipped, match=r"zip bomb: unpacking word/document.xml passed documents.unpacked_bytes \(1,000,000 bytes\)"):
        _record("big.docx", long, replace(RULES, unpacked_bytes=1_000_000))
    with pytest.raises(Skipped, match=r"parsing took longer than documents.parse_seconds \(0.05 s\)"):
        _record("big.docx", long, replace(RULES, parse_seconds=0.05))
    assert len(_record("big.docx", long).text.splitlines()) == 60_000
