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

from worker.documents.parsers.pdf.destinations import READ_ERRORS
from worker.documents.parsers.pdf.lines import Line

_PLACEHOLDER = re.compile(r"^(?:untitled(?:\s+document)?|document\d*|title|none|null|unknown|\(?anonymous\)?|contents)$", re.I)
_OFFICE_PREFIX = re.compile(r"^microsoft (?:word|powerpoint|excel) - ", re.I)
_OFFICE_SUFFIX = re.compile(r"\.(?:docx?|pptx?|xlsx?|odt|rtf)$", re.I)
_ID_SHAPE = re.compile(r"^(?=\S*\d)(?=\S*[A-Z])[A-Z0-9][A-Z0-9_.\-/]{2,63}$")  # TSB-20-501, not "report-2"
_CONTENTS = re.compile(r"^(?:table of )?contents$|^inhalt(?:sverzeichnis)?$", re.I)
TITLE_LINES = 3  # a title set in large type may wrap onto this many lines
MAX_TITLE_CHARS = 200


def clean(raw: object) -> str:
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw or "")
    text = _OFFICE_SUFFIX.sub("", _OFFICE_PREFIX.sub("", " ".join(text.replace("\x00", " ").split())))
    return text if any(char.isalnum() for char in text) and not _PLACEHOLDER.match(text) else ""


def looks_like_id(text: str) -> bool:
    return bool(_ID_SHAPE.match(text))


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
    for line in lines:
        for pattern in patterns:
            match = pattern.search(line.text)
            if match:
                return match.group(1).strip()
    return ""


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
