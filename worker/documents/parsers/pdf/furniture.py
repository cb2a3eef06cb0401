"""Running headers, footers and page numbers: printed on every page, never a section's text.

A line counts as furniture when it sits in a page's top or bottom band (its first or last two
lines) and the same line, digits aside, recurs at the same height on at least half the pages
(two at least); a bare page number ("7", "- 7 -", "Page 7 of 12", "vii") there is furniture on any page.
"""

from __future__ import annotations

import re
from collections import Counter

from worker.documents.parsers.pdf.lines import Line

BAND = 2  # lines at the top and at the bottom of a page that may be furniture
_DIGITS = re.compile(r"\d+")
_PAGE_NUMBER = re.compile(
    r"^(?:[-–—(\[]\s*)?(?:page\s+|p\.\s*|seite\s+)?(?:\d{1,4}|[ivxlc]{1,7})(?:\s*(?:/|of|von)\s*\d{1,4})?(?:\s*[-–—)\]])?$",
    re.IGNORECASE,
)


def _key(line: Line) -> tuple[str, int]:
    return _DIGITS.sub("#", line.text.lower()), round(line.y / 4)


def _bands(page: list[Line]) -> list[Line]:
    ordered = sorted(page, key=lambda line: -line.y)
    return ordered[:BAND] + ordered[BAND:][-BAND:]


def strip(pages: list[list[Line]]) -> list[list[Line]]:
    """Each page's lines without its running headers, footers and page numbers."""
    bands = [_bands(page) for page in pages]
    repeats = Counter(key for band in bands for key in {_key(line) for line in band})
    needed = max(2, (len(pages) + 1) // 2)
    kept = []
    for page, lines in zip(pages, bands, strict=True):
        band = {id(line) for line in lines}
        kept.append([line for line in page if id(line) not in band or not (_PAGE_NUMBER.match(line.text) or repeats[_key(line)] >= needed)])
    return kept
