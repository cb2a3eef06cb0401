"""The 31 real PDFs of ../shared/corpora/pdf-samples (six producers, and the hard cases: a password,
a broken page tree, mistitled bookmarks, right-to-left text, attachments): each loads, or is
recorded with a reason; what each yields is pinned here."""

from __future__ import annotations

import time

import pytest
from pypdf import PdfReader

from tests.corpora import PDF_SAMPLES
from worker.documents.rules import DocumentRules
from worker.documents.slugs import split_number
from worker.documents.source import DocumentRecord, Skipped, build

RULES = DocumentRules.defaults()
SLOWEST_SECONDS = 30  # the 117-page book parses in about 6 s here; a hang would not

# relpath: (title, id, sections, links), or the reason it is skipped
EXPECTED: dict[str, tuple[str, str | None, int, int] | str] = {
    "001-trivial/minimal-document.pdf": ("Lorem ipsum dolor sit amet, consetetur sadipscing elitr, sed diam nonumy eirmod", None, 0, 0),
    "002-trivial-libre-office-writer/002-trivial-libre-office-writer.pdf": (
        "Lorem ipsum dolor sit amet, consetetur sadipscing elitr, sed diam nonumy eirmod tempor",
        None,
        0,
        0,
    ),
    "003-pdflatex-image/pdflatex-image.pdf": ("Your Chapter", None, 1, 0),
    "004-pdflatex-4-pages/pdflatex-4-pages.pdf": ("Hello, here is some text without a meaning. This text should show what a printed text", None, 0, 0),
    "005-libreoffice-writer-password/libreoffice-writer-password.pdf": "encrypted: needs a password to open",
    "006-pdflatex-outline/pdflatex-outline.pdf": ("Foo", None, 9, 9),
    "007-imagemagick-images/imagemagick-ASCII85Decode.pdf": ("imagemagick-ASCII85Decode", None, 0, 0),
    "007-imagemagick-images/imagemagick-CCITTFaxDecode.pdf": ("imagemagick-CCITTFaxDecode", None, 0, 0),
    "007-imagemagick-images/imagemagick-images.pdf": ("imagemagick-images", None, 0, 0),
    "007-imagemagick-images/imagemagick-lzw.pdf": ("imagemagick-lzw", None, 0, 0),
    "008-reportlab-inline-image/inline-image.pdf": ("Test", None, 0, 0),
    "009-pdflatex-geotopo/GeoTopo-komprimiert.pdf": ("Geometrie und Topologie", None, 35, 487),
    "010-pdflatex-forms/pdflatex-forms.pdf": ("Name", None, 0, 0),
    "011-google-doc-document/google-doc-document.pdf": ("PDF Example Document", None, 0, 0),
    "012-libreoffice-form/libreoffice-form.pdf": ("Example for a Form", None, 0, 0),
    "013-reportlab-overlay/reportlab-overlay.pdf": ("Name: Foo Bar", None, 0, 0),
    "014-outlines/mistitled_outlines_example.pdf": ("First", None, 27, 9),
    "015-arabic/habibi-oneline-cmap.pdf": ("habibi", None, 0, 0),
    "015-arabic/habibi-rotated.pdf": ("habibi-rotated", None, 0, 0),
    "015-arabic/habibi.pdf": ("habibi", None, 0, 0),
    "016-libre-office-link/libre-office-link.pdf": ("This is a link to an awesome blog.", None, 0, 1),
    "017-unreadable-meta-data/unreadablemetadata.pdf": "unreadable PDF: Invalid object in /Pages",
    "018-base64-image/base64image.pdf": ("Produced with a Trial Version of PDF Annotator - www.PDFAnnotator.com", None, 0, 0),
    "019-grayscale-image/grayscale-image.pdf": ("grayscale-image", None, 0, 0),
    "020-xmp/output_with_metadata_pymupdf.pdf": ("Sample PDF with XMP Metadata", None, 0, 0),
    "021-pdfa/crazyones-pdfa.pdf": ("The Crazy Ones", None, 0, 0),
    "022-pdfkit/pdfkit.pdf": ("Header", None, 0, 0),
    "023-cmyk-image/cmyk-image.pdf": ("cmyk-image", None, 0, 0),
    "024-annotations/annotated_pdf.pdf": ("Annotated PDF", None, 0, 0),
    "025-attachment/with-attachment.pdf": ("Lorem ipsum dolor sit amet, consetetur sadipscing elitr, sed diam nonumy eirmod", None, 0, 0),
    "026-latex-multicolumn/multicolumn.pdf": ("Two-Column Document with Lorem Ipsum", None, 0, 0),
}
BOOKMARKED = ("006-pdflatex-outline/pdflatex-outline.pdf", "009-pdflatex-geotopo/GeoTopo-komprimiert.pdf", "014-outlines/mistitled_outlines_example.pdf")

pytestmark = pytest.mark.corpus


def sample(relpath: str) -> DocumentRecord:
    return build("samples", relpath, (PDF_SAMPLES / relpath).read_bytes(), RULES)


def yields(relpath: str) -> tuple[str, str | None, int, int] | str:
    try:
        found = sample(relpath)
    except Skipped as skipped:
        return str(skipped)
    return found.display_name, found.doc_id, len(found.sections), len(found.links) + sum(len(s.links) for s in found.sections)


def test_every_sample_is_pinned() -> None:
    assert sorted(path.relative_to(PDF_SAMPLES).as_posix() for path in PDF_SAMPLES.glob("*/*.pdf")) == sorted(EXPECTED)


@pytest.mark.parametrize("relpath", sorted(EXPECTED))
def test_each_real_pdf_loads_or_says_why(relpath: str) -> None:
    began = time.monotonic()
    assert yields(relpath) == EXPECTED[relpath]
    assert time.monotonic() - began < SLOWEST_SECONDS


def _outline_titles(items: list) -> list[str]:
    titles = []
    for item in items:
        titles += _outline_titles(item) if isinstance(item, list) else [split_number(str(item.title))[1]]
    return titles


@pytest.mark.parametrize("relpath", BOOKMARKED)
def test_bookmarked_pdfs_yield_their_outline_as_sections(relpath: str) -> None:
    record = sample(relpath)
    outline = _outline_titles(PdfReader(PDF_SAMPLES / relpath).outline)
    assert sorted(section.title for section in record.sections) == sorted(outline)


def test_outline_sections_hold_the_text_under_their_headings() -> None:
    relpath = "006-pdflatex-outline/pdflatex-outline.pdf"
    record = sample(relpath)
    assert [section.title for section in record.sections] == ["Foo", "Bar", "Baz"] * 3
    assert all(section.text.startswith("Hello, here is some text") for section in record.sections)


def test_mistitled_bookmarks_still_place_sections_where_their_destinations_point() -> None:
    relpath = "014-outlines/mistitled_outlines_example.pdf"
    record = sample(relpath)
    placed = [section for section in record.sections if section.text]
    assert [section.title for section in placed][:3] == ["Nineteenth", "Twentieth", "Twenty-first"]
    assert [section.text.split("\n")[0] for section in placed][:3] == ["1 Foo", "2 Bar", "3 Baz"]
