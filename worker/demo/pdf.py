"""Real PDFs written with pypdf (text pages, an outline, link annotations): the demo library's PDFs and the tests'."""

from __future__ import annotations

import io
from collections.abc import Sequence

from pypdf import PdfWriter
from pypdf.annotations import Link
from pypdf.generic import DecodedStreamObject, DictionaryObject, IndirectObject, NameObject


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def make_pdf(
    pages: list[list[str]],
    outline: Sequence[tuple[str, int, int]] = (),
    links: Sequence[tuple[int, str]] = (),
    title: str | None = None,
) -> bytes:
    """pages: lines of text per page; outline: (title, page, level); links: (page, URI)."""
    writer = PdfWriter()
    font = DictionaryObject(
        {
            NameObject("/Type"): NameObject("/Font"),
            NameObject("/Subtype"): NameObject("/Type1"),
            NameObject("/BaseFont"): NameObject("/Helvetica"),
        }
    )
    for lines in pages:
        page = writer.add_blank_page(612, 792)
        operations = ["BT", "/F1 11 Tf", "14 TL", "72 720 Td"]
        for line in lines:
            operations += [f"({_escape(line)}) Tj", "T*"]
        operations.append("ET")
        stream = DecodedStreamObject()
        stream.set_data("\n".join(operations).encode("latin-1"))
        page[NameObject("/Contents")] = writer._add_object(stream)
        page[NameObject("/Resources")] = DictionaryObject(
            {
                NameObject("/Font"): DictionaryObject({NameObject("/F1"): font}),
            }
        )
    parents: dict[int, IndirectObject] = {}
    for text, page_index, level in outline:
        parent = parents.get(level - 1) if level > 1 else None
        parents[level] = writer.add_outline_item(title=text, page_number=page_index, parent=parent)
    for page_index, uri in links:
        writer.add_annotation(page_index, Link(rect=(72, 100, 200, 120), url=uri))
    if title:
        writer.add_metadata({"/Title": title})
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()
