"""A PDF's title and document id, from wherever its publisher put them.

Title: the /Title entry or XMP dc:title when it means something (not "untitled", not a bare
id, not "Microsoft Word - x.docx"), else the most prominent text at the start of the first page.
Id: a metadata line in the text (`Document: TSB-20-501`, patterns from settings), else XMP
dc:identifier, else a /Title shaped like an id; the file stem always works too (see resolver).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from pypdf import PdfReader

from worker.documents.parsers import titles
from worker.documents.parsers.pdf.destinations import READ_ERRORS
from worker.documents.parsers.pdf.lines import Line
from worker.documents.parsers.titles import clean, looks_like_id

_CONTENTS = re.compile(r"^(?:table of )?contents$|^inhalt(?:sverzeichnis)?$", re.I)
TITLE_LINES = 3  # a title set in large type may wrap onto this many lines
MAX_TITLE_CHARS = 200


def declared(reader: PdfReader) -> tuple[str, str, str]:
    """(title, XMP identifier, id-shaped title) from the document information and XMP metadata;
    an id-shaped /Title is a title only when the text offers none."""
    title = ""
    try:
        title = clean(reader.metadata.get("/Title") if reader.metadata else None)
    except READ_ERRORS:
        pass
    xmp_title = identifier = ""
    try:
        xmp = reader.xmp_metadata
        if xmp is not None:
            identifier = clean(xmp.dc_identifier)
            titles = xmp.dc_title or {}
            xmp_title = clean(titles.get("x-default") or next(iter(titles.values()), ""))
    except READ_ERRORS:
        pass
    id_title = title if looks_like_id(title) else ""
    return (title if not id_title else "") or xmp_title, identifier, id_title


def id_in_text(lines: Sequence[Line], patterns: Sequence[re.Pattern[str]]) -> str:
    return titles.id_in_text((line.text for line in lines), patterns)


def title_in_text(lines: Sequence[Line], skip: set[int]) -> str:
    """The largest type among the opening lines (joined if it wraps), else the first line."""
    usable = [(index, line) for index, line in enumerate(lines) if index not in skip and not _CONTENTS.match(line.text)]
    if not usable:
        return ""
    largest = max(line.size for _, line in usable)
    prominent = largest > min(line.size for _, line in usable)
    start = next(position for position, (_, line) in enumerate(usable) if line.size == largest)
    run = [usable[start][1].text]
    for index, line in usable[start + 1 : start + TITLE_LINES]:
        if not prominent or line.size != largest or index != usable[start][0] + len(run):
            break
        run.append(line.text)
    return " ".join(run)[:MAX_TITLE_CHARS]
