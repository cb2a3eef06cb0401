"""PDF structure with pypdf, as a publisher's PDF carries it: sections from the outline
(bookmarks) or else from numbered headings in the text, without running headers, footers and
page numbers; link annotations in the section whose heading is above them; title and id from
the metadata or the text.

Every section start is a line index in reading order; every point on a page (a link's
rectangle, a jump's destination) maps to the line at that height, hence to a section.
"""

from __future__ import annotations

import bisect
import io
import re
from collections.abc import Sequence
from dataclasses import dataclass

from pypdf import PageObject, PdfReader

from worker.documents.model import Block, ParsedFile, RawLink, new_parsed_file
from worker.documents.parsers.pdf import bookmarks, furniture, library_log, link_annotations, metadata, numbering
from worker.documents.parsers.pdf.destinations import READ_ERRORS, Destinations, Point
from worker.documents.parsers.pdf.lines import Line, page_lines
from worker.documents.slugs import split_number

TITLE_MATCH_LINES = 3  # a bookmark's title is looked for this many lines from its destination
ID_LINES = 60  # document ids are looked for in this many opening lines


class PdfError(ValueError):
    """The bytes are not a PDF that can be read (broken beyond repair, or encrypted)."""


@dataclass
class _Start:
    line: float  # index of the first line of the section (x.5: after line x)
    order: int
    block: Block
    heading_lines: tuple[int, ...]  # the lines that are the heading itself, left out of the text


def parse(data: bytes, id_patterns: Sequence[re.Pattern[str]] = ()) -> ParsedFile:
    with library_log.collected() as warnings:
        parsed = _parse(data, id_patterns)
    if warnings:
        parsed.problems.append(f"pypdf warned {len(warnings)} time(s) while reading (first: {warnings[0]})")
    return parsed


def _parse(data: bytes, id_patterns: Sequence[re.Pattern[str]]) -> ParsedFile:
    reader = _open(data)
    parsed = new_parsed_file()
    destinations = Destinations(reader)
    pages = _pages(reader, parsed)
    lines = [line for page in furniture.strip([page_text for _, page_text in pages]) for line in page]
    located = _Pages(lines)
    marks = bookmarks.read(reader, destinations)
    starts = _bookmark_starts(located, marks) if marks else _numbered_starts(lines)
    sections = _Sections(parsed, starts)
    _fill(parsed, lines, sections)
    _links(parsed, [page for page, _ in pages], destinations, located, sections)
    _describe(parsed, reader, lines, starts, id_patterns)
    return parsed


def _pages(reader: PdfReader, parsed: ParsedFile) -> list[tuple[PageObject | None, list[Line]]]:
    """Each page with its text lines; a page whose text cannot be read (a stream needing a codec
    not installed, a broken content stream) is recorded and left empty, the others still load."""
    pages: list[tuple[PageObject | None, list[Line]]] = []
    for index in range(len(reader.pages)):
        page = None
        try:
            page = reader.pages[index]
            pages.append((page, page_lines(page, index)))
        except READ_ERRORS as err:
            parsed.problems.append(f"page {index + 1}: text unreadable ({type(err).__name__}: {err})")
            pages.append((page, []))
    return pages


def _open(data: bytes) -> PdfReader:
    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            raise PdfError("encrypted: needs a password to open")
        len(reader.pages)
    except PdfError:
        raise
    except READ_ERRORS as err:
        raise PdfError(f"unreadable PDF: {err}") from None
    return reader


class _Pages:
    """Lines by page, for mapping points on a page to lines."""

    def __init__(self, lines: list[Line]) -> None:
        self.lines = lines
        self.by_page: dict[int, list[int]] = {}
        for index, line in enumerate(lines):
            self.by_page.setdefault(line.page, []).append(index)
        self.pages = sorted(self.by_page)

    def line_at(self, point: Point) -> float:
        """The index of the line at a point (the nearest at or below it); x.5 means after line x."""
        on_page = self.by_page.get(point.page)
        if not on_page:
            later = bisect.bisect_right(self.pages, point.page)
            return (self.by_page[self.pages[later]][0] if later < len(self.pages) else len(self.lines)) - 0.5
        if point.top is None:
            return on_page[0]
        below = [index for index in on_page if self.lines[index].y <= point.top + 1]
        if not below:
            return on_page[-1] + 0.5
        return min(below, key=lambda index: (-self.lines[index].y, index))


def _words(text: str) -> str:
    return " ".join(text.casefold().split())


def _heading_lines(lines: list[Line], first: int, page: int, title: str) -> list[int]:
    """The lines, from `first` on, that spell the bookmark's title (a long title may wrap)."""
    wanted = _words(title)
    for start in range(first, min(first + TITLE_MATCH_LINES, len(lines))):
        spelled = ""
        for index in range(start, min(start + TITLE_MATCH_LINES, len(lines))):
            if lines[index].page != page:
                break
            text = lines[index].text if index > start else split_number(lines[index].text)[1]
            spelled = _words(f"{spelled} {text}")
            if spelled == wanted:
                return list(range(start, index + 1))
            if not wanted.startswith(spelled):
                break
    return []


def _bookmark_starts(pages: _Pages, marks: list[bookmarks.Bookmark]) -> list[_Start]:
    starts = []
    for mark in marks:
        at = pages.line_at(mark.point)
        heading = _heading_lines(pages.lines, int(at) + (0 if at == int(at) else 1), mark.point.page, mark.title)
        if heading:
            at = heading[0]
        starts.append(_Start(at, mark.order, Block(mark.title, mark.level, number=mark.number), tuple(heading)))
    return sorted(starts, key=lambda start: (start.line, start.order))


def _numbered_starts(lines: list[Line]) -> list[_Start]:
    return [
        _Start(index, order, Block(found.title, min(found.level, bookmarks.MAX_LEVEL), number=found.label), (index,))
        for order, (index, found) in enumerate(sorted(numbering.find(lines).items()))
    ]


class _Sections:
    """The block in force at any line: the last section started at or before it, else the preamble."""

    def __init__(self, parsed: ParsedFile, starts: list[_Start]) -> None:
        self.preamble = parsed.preamble
        self.starts = starts
        self.keys = [start.line for start in starts]

    def at(self, line: float) -> Block:
        position = bisect.bisect_right(self.keys, line) - 1
        return self.starts[position].block if position >= 0 else self.preamble


def _fill(parsed: ParsedFile, lines: list[Line], sections: _Sections) -> None:
    parsed.blocks.extend(start.block for start in sections.starts)
    headings = {index for start in sections.starts for index in start.heading_lines}
    seen_pages: set[int] = set()
    for index, line in enumerate(lines):
        block = sections.at(index)
        if index not in headings:
            block.text_parts.append(line.text)
        if line.page not in seen_pages:  # `#page=N`, as PDF viewers read it, lands where page N begins
            seen_pages.add(line.page)
            block.ids.append(f"page={line.page + 1}")


def _links(parsed: ParsedFile, pages: list[PageObject | None], destinations: Destinations, located: _Pages, sections: _Sections) -> None:
    found: list[link_annotations.PageLink] = []
    first_on_page: set[int] = set()
    for index, page in enumerate(pages):
        links = link_annotations.page_links(page, index, destinations) if page is not None else []
        if links:
            first_on_page.add(len(found))
            found.extend(links)
    for link in link_annotations.merge_wrapped(found, first_on_page):
        href = link.href
        if link.jump is not None:
            anchor = link.name or _jump_anchor(link.jump)
            sections.at(located.line_at(link.jump)).ids.append(anchor)
            href = f"#{anchor}"
        sections.at(located.line_at(Point(link.page, link.top))).links.append(RawLink(href, "", "pdf"))


def _jump_anchor(point: Point) -> str:
    return f"page={point.page + 1}" + (f"&y={round(point.top)}" if point.top is not None else "")


def _describe(
    parsed: ParsedFile,
    reader: PdfReader,
    lines: list[Line],
    starts: list[_Start],
    id_patterns: Sequence[re.Pattern[str]],
) -> None:
    title, identifier, id_title = metadata.declared(reader)
    opening = lines[:ID_LINES]
    doc_id = metadata.id_in_text(opening, id_patterns) or identifier or id_title
    if doc_id:
        parsed.front_matter["id"] = doc_id
    if not title:
        first_start = starts[0].line if starts else len(lines)
        first_page = lines[0].page if lines else 0
        preamble = [line for index, line in enumerate(lines) if index < first_start and line.page == first_page]
        skip = {index for index, line in enumerate(preamble) if metadata.id_in_text([line], id_patterns) or numbering.toc_entry(line.text)}
        title = metadata.title_in_text(preamble, skip) or (starts[0].block.title if starts else "") or id_title
    if title:
        parsed.front_matter["title"] = title
    try:
        attached = sorted(reader.attachments)
    except READ_ERRORS:
        attached = []
    if attached:
        parsed.problems.append(f"{len(attached)} attached file(s) not loaded: {', '.join(attached[:5])}")
