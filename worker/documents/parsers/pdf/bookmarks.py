"""The outline (bookmarks) as headings: where each one's destination points, at which depth.

A bookmark names its section and places it where its destination points, whether or not its
title matches the text there: mistitled outlines exist. A number in the title ("1.2 Stetigkeit")
is kept apart from the name, as with numbered headings in the text.
"""

from __future__ import annotations

from dataclasses import dataclass

from pypdf import PdfReader

from worker.documents.parsers.pdf.destinations import READ_ERRORS, Destinations, Point
from worker.documents.slugs import split_number

MAX_LEVEL = 6


@dataclass(frozen=True)
class Bookmark:
    order: int  # position in the outline
    level: int
    number: str
    title: str
    point: Point


def read(reader: PdfReader, destinations: Destinations) -> list[Bookmark]:
    found: list[Bookmark] = []

    def walk(items: list, level: int) -> None:
        for item in items:
            if isinstance(item, list):
                walk(item, level + 1)
                continue
            point = destinations.of_item(item)
            title = " ".join(str(item.title or "").split())
            if point is None or not title:
                continue
            number, name = split_number(title)
            found.append(Bookmark(len(found), min(level, MAX_LEVEL), number, name or title, point))

    try:
        walk(reader.outline, 1)
    except READ_ERRORS:
        return []
    return found
