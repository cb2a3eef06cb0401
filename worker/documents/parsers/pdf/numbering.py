"""Numbered headings in a PDF's text: `2.1 Coil identification` is a level-2 heading named
"Coil identification", numbered 2.1.

Extracted text rarely keeps fonts, so a line is a heading only if it passes every guard: a
number of at most six parts of one or two digits, then a short title that starts with a
capital letter and does not end like a sentence; not an entry of a table of contents (a page
with three or more numbered lines ending in page numbers); not in a smaller font than the body
text; and numbered in sequence after the previous heading (the next sibling, the first child,
or the next of an ancestor), so list items, table rows, dates and part numbers fall out.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from worker.documents.parsers.pdf.lines import Line
from worker.documents.slugs import split_number

_TOC_ENTRY = re.compile(r"(?:\s|\.{2,}|…)\s*(?:\d{1,4}|[ivxlc]{1,6})$", re.IGNORECASE)
MAX_TITLE_CHARS = 100
MAX_TITLE_WORDS = 14
TOC_LINES = 3


@dataclass(frozen=True)
class Numbered:
    number: tuple[int, ...]
    title: str

    @property
    def label(self) -> str:
        return ".".join(map(str, self.number))

    @property
    def level(self) -> int:
        return len(self.number)


def toc_entry(text: str) -> bool:
    """A numbered line ending in a page number, as tables of contents print them."""
    found = _candidate(text)
    return found is not None and bool(_TOC_ENTRY.search(found.title))


def _candidate(text: str) -> Numbered | None:
    number, title = split_number(text)
    if not number:
        return None
    first = title[0]
    if not first.isalpha() or (first.lower() != first.upper() and not first.isupper()):
        return None
    if title.endswith((".", ",", ";", ":")) or len(title) > MAX_TITLE_CHARS or len(title.split()) > MAX_TITLE_WORDS:
        return None
    return Numbered(tuple(int(part) for part in number.split(".")), title)


def _follows(previous: tuple[int, ...] | None, number: tuple[int, ...]) -> bool:
    if previous is None:
        return number[0] <= 1 and all(part == 1 for part in number[1:])
    if number == (*previous, 1):
        return True
    return any(number == (*previous[:depth], previous[depth] + 1) for depth in range(len(previous)))


def _body_size(lines: list[Line]) -> float:
    sizes = Counter(line.size for line in lines if line.size)
    return sizes.most_common(1)[0][0] if sizes else 0.0


def find(lines: list[Line]) -> dict[int, Numbered]:
    """The headings among `lines` (in reading order), by index."""
    candidates = {index: found for index, line in enumerate(lines) if (found := _candidate(line.text))}
    ends_in_page_number = {index for index, found in candidates.items() if _TOC_ENTRY.search(found.title)}
    toc_entries = Counter(lines[index].page for index in ends_in_page_number)
    body = _body_size(lines)
    headings: dict[int, Numbered] = {}
    previous: tuple[int, ...] | None = None
    for index, found in sorted(candidates.items()):
        line = lines[index]
        if index in ends_in_page_number and toc_entries[line.page] >= TOC_LINES:
            continue
        if body and line.size and line.size < body - 0.5:
            continue
        if _follows(previous, found.number):
            headings[index] = found
            previous = found.number
    return headings
