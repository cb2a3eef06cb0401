"""The 58 real Office and AsciiDoc files of ../shared/corpora/office-samples (Word, LibreOffice,
PowerPoint and Excel; strict and transitional OOXML, text boxes, equations, content controls,
comments, charts and chart sheets, malformed pictures): each is parsed or refused with a reason,
what each yields is pinned here, and none takes long."""

from __future__ import annotations

import time

import pytest

from tests.corpora import OFFICE_SAMPLES
from worker.documents.formats import FORMATS
from worker.documents.rules import DocumentRules
from worker.documents.source import DocumentRecord, Skipped, build

SAMPLES = OFFICE_SAMPLES
RULES = DocumentRules.defaults()
SLOWEST_SECONDS = 2  # the largest (3 MB of tables) parses in about 15 ms here

# file: (title, sections, links), or the reason it is refused
EXPECTED: dict[str, tuple[str, int, int] | str] = {
    "asciidoc__asciidoc_01.asciidoc": ("1st Sample Document Title", 3, 0),
    "asciidoc__asciidoc_02.asciidoc": ("2nd Sample Document Title", 5, 0),
    "asciidoc__asciidoc_03.asciidoc": ("Renaming a bookmark", 0, 0),
    "asciidoc__asciidoc_04.asciidoc": ("Tables with cell format specifiers", 0, 0),
    "docx__Strict.docx": ("docx__Strict", 0, 0),
    "docx__Transitional.docx": ("docx__Transitional", 0, 0),
    "docx__content_control_with_picture.docx": ("docx__content_control_with_picture", 0, 0),
    "docx__docx_checkboxes.docx": ("Table with options", 2, 0),
    "docx__docx_code_blocks.docx": ("Code-detection fixture", 9, 0),
    "docx__docx_comments.docx": ("Document with Comments", 0, 0),
    "docx__docx_external_image.docx": ("Test Document with External Image", 1, 0),
    "docx__docx_grouped_images.docx": ("Grouped images", 2, 0),
    "docx__docx_list_blank_spacer.docx": ("List with a blank spacer paragraph", 1, 0),
    "docx__docx_list_resumed_numbering.docx": ("Ordered list resumed after an intervening bullet list", 1, 0),
    "docx__docx_lists.docx": ("Test Document", 10, 0),
    "docx__docx_page_header_footer_first_page.docx": ("Page header/footer regression fixture", 2, 0),
    "docx__docx_rich_cells.docx": ("Table with rich cells", 7, 0),
    "docx__docx_rich_tables_01.docx": ("docx__docx_rich_tables_01", 0, 54),
    "docx__docx_vml_images.docx": ("VML Image Test Document", 0, 0),
    "docx__drawingml.docx": ("docx__drawingml", 0, 0),
    "docx__equations.docx": ("docx__equations", 0, 0),
    "docx__list_after_num_headers.docx": ("Chính sách bảo hành", 3, 0),
    "docx__lorem_ipsum.docx": ("docx__lorem_ipsum", 0, 0),
    "docx__omml_frac_superscript.docx": ("Issue 1: Fraction as superscript base not grouped", 1, 0),
    "docx__omml_func_log.docx": ("Issue 4: Missing \\log command", 1, 0),
    "docx__omml_multi_equation_paragraph.docx": ("Issue 3: Concatenated equation blocks", 1, 0),
    "docx__omml_text_escapes_in_math.docx": ("Issue 2: Text-mode escapes in math context", 1, 0),
    "docx__table_with_equations.docx": ("docx__table_with_equations", 0, 0),
    "docx__tablecell.docx": ("docx__tablecell", 0, 0),
    "docx__test_emf_docx.docx": ("docx__test_emf_docx", 0, 0),
    "docx__textbox.docx": ("傳染病通報作業流程", 0, 0),
    "docx__unit_test_formatting.docx": ("docx__unit_test_formatting", 0, 3),
    "docx__unit_test_headers.docx": ("Test Document", 7, 0),
    "docx__unit_test_headers_numbered.docx": ("Test Document", 8, 0),
    "docx__word_image_anchors.docx": ("docx__word_image_anchors", 0, 0),
    "docx__word_sample.docx": ("Swimming in the lake", 2, 0),
    "docx__word_tables.docx": ("Test with tables", 1, 0),
    "odf__text_document_01.odt": ("heading level 1.0", 3, 0),
    "odf__text_document_02.odt": ("heading level 1.0", 2, 0),
    "odf__text_document_03.odt": ("Table with rich cells", 7, 0),
    "pptx__powerpoint_bad_text.pptx": ("Title with image", 1, 0),
    "pptx__powerpoint_comments.pptx": ("Test Slide With Comments", 3, 1),
    "pptx__powerpoint_issue_2663.pptx": ("Open-Source Software", 1, 0),
    "pptx__powerpoint_malformed_pictures.pptx": ("Slide 1", 3, 0),
    "pptx__powerpoint_sample.pptx": ("Test Table Slide", 3, 0),
    "pptx__powerpoint_unrecognized_shape.pptx": ("Q3 Revenue Summary", 3, 0),
    "pptx__powerpoint_with_image.pptx": ("Docling", 1, 0),
    "pptx__pptx_chart.pptx": ("Quarterly Duck Survey", 2, 0),
    "xlsx__xlsx_01.xlsx": ("xlsx__xlsx_01", 4, 0),
    "xlsx__xlsx_03_chartsheet.xlsx": ("Wild Duck Observations", 2, 0),
    "xlsx__xlsx_04_inflated.xlsx": ("xlsx__xlsx_04_inflated", 4, 0),
    "xlsx__xlsx_05_table_with_title.xlsx": ("Wild Duck Observations", 1, 0),
    "xlsx__xlsx_06_edge_cases_.xlsx": ("xlsx__xlsx_06_edge_cases_", 3, 0),
    "xlsx__xlsx_07_gap_tolerance_.xlsx": ("xlsx__xlsx_07_gap_tolerance_", 1, 0),
    "xlsx__xlsx_08_one_cell_anchor.xlsx": ("xlsx__xlsx_08_one_cell_anchor", 1, 0),
    "xlsx__xlsx_09_section_label_header.xlsx": ("xlsx__xlsx_09_section_label_header", 1, 0),
    "xlsx__xlsx_comments.xlsx": ("xlsx__xlsx_comments", 1, 0),
    "xlsx__xlsx_emf.xlsx": ("xlsx__xlsx_emf", 3, 0),
}

pytestmark = pytest.mark.corpus


def _read(name: str) -> tuple[DocumentRecord | str, float]:
    began = time.perf_counter()
    try:
        record: DocumentRecord | str = build("samples", name, (SAMPLES / name).read_bytes(), RULES)
    except Skipped as refused:
        record = str(refused)
    return record, time.perf_counter() - began


def test_every_sample_is_a_library_format_and_pinned() -> None:
    assert all(path.suffix.lower() in FORMATS for path in SAMPLES.iterdir())
    assert sorted(path.name for path in SAMPLES.iterdir()) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_sample_parses_or_is_refused_with_its_reason(name: str) -> None:
    record, seconds = _read(name)
    assert seconds < SLOWEST_SECONDS
    expected = EXPECTED[name]
    if isinstance(expected, str):
        assert record == expected
        return
    assert isinstance(record, DocumentRecord), record
    links = len(record.links) + sum(len(section.links) for section in record.sections)
    assert (record.display_name, len(record.sections), links) == expected
    assert record.text or record.sections  # something of what the author wrote


def test_what_the_samples_say_reaches_the_sections() -> None:
    numbered, _ = _read("docx__unit_test_headers_numbered.docx")
    assert isinstance(numbered, DocumentRecord)
    assert [(section.path, section.number) for section in numbered.sections[:3]] == [
        ("section-1", "1"),
        ("section-1/section-11", "1.1"),
        ("section-1/section-12", "1.2"),
    ]
    deck, _ = _read("pptx__powerpoint_comments.pptx")
    assert isinstance(deck, DocumentRecord)
    assert [(section.title, section.anchors[-1]) for section in deck.sections] == [
        ("Test Slide With Comments", "slide=1"),
        ("Start", "slide=2"),
        ("Features", "slide=3"),
    ]
    assert [link.href for link in deck.sections[1].links] == ["https://pypi.org/project/docling"]
    tables, _ = _read("docx__docx_rich_tables_01.docx")
    assert isinstance(tables, DocumentRecord)
    assert all(link.href.endswith("#_idTextAnchor005") or "://" in link.href for link in tables.links)
    strict, _ = _read("docx__Strict.docx")
    assert isinstance(strict, DocumentRecord) and strict.text == "Some text"
    textbox, _ = _read("docx__textbox.docx")
    assert isinstance(textbox, DocumentRecord) and len(textbox.text) > 1000
    workbook, _ = _read("xlsx__xlsx_03_chartsheet.xlsx")
    assert isinstance(workbook, DocumentRecord)
    assert [(section.title, section.text.splitlines()[:2]) for section in workbook.sections] == [
        ("Duck Observations", ["Year | Freshwater Ducks | Saltwater Ducks | Ducks", "2019 | 120 | 80 | 200"]),
        ("Duck Chart", []),  # a chart sheet
    ]
