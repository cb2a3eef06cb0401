"""PDF structure with pypdf: page text, headings from the outline (bookmarks) or, failing that,
numbered headings ("2.1 Coil test"), and link annotations as links."""

from __future__ import annotations

import io
import re

from pypdf import PdfReader
from pypdf.errors import PdfReadError

from worker.documents.model import Block, ParsedFile, RawLink, new_parsed_file

_NUMBERED = re.compile(r"^(\d{1,2}(?:\.\d{1,2}){0,5})\.?\s+(\S.{0,100})$")


class PdfError(ValueError):
    """The bytes are not a PDF pypdf can read."""


def parse(data: bytes) -> ParsedFile:
    try:
        reader = PdfReader(io.BytesIO(data))
        pages = [page.extract_text() or "" for page in reader.pages]
    except (PdfReadError, ValueError, KeyError, TypeError) as err:
        raise PdfError(f"unreadable PDF: {err}") from None
    parsed = new_parsed_file()
    meta = reader.metadata or {}
    if meta.get("/Title"):
        parsed.front_matter["title"] = str(meta["/Title"])
    bookmarks = _bookmarks(reader)
    page_blocks = _split_by_bookmarks(parsed, pages, bookmarks) if bookmarks else _split_by_numbers(parsed, pages)
    for index, page in enumerate(reader.pages):
        for link in _annotation_links(page):
            page_blocks[index].links.append(link)
    return parsed


def _bookmarks(reader: PdfReader) -> list[tuple[int, int, str]]:
    """(page index, level, title) in outline order."""
    found: list[tuple[int, int, str]] = []

    def walk(items: list, level: int) -> None:
        for item in items:
            if isinstance(item, list):
                walk(item, level + 1)
                continue
            try:
                page = reader.get_destination_page_number(item)
            except (PdfReadError, ValueError, KeyError, TypeError):
                continue
            if page is not None and page >= 0:
                found.append((page, level, str(item.title).strip()))

    try:
        walk(reader.outline, 1)
    except (PdfReadError, ValueError, KeyError, TypeError):
        return []
    return found


def _split_by_bookmarks(parsed: ParsedFile, pages: list[str], bookmarks: list[tuple[int, int, str]]) -> list[Block]:
    """Each bookmark's section holds the text from its title to the next bookmark's title."""
    page_blocks: list[Block] = []
    marks = sorted(enumerate(bookmarks), key=lambda item: (item[1][0], item[0]))
    current = parsed.preamble
    for page_index, text in enumerate(pages):
        here = [mark for _, mark in marks if mark[0] == page_index]
        remaining = text
        first_block_of_page = None
        for _, level, title in here:
            position = remaining.find(title)
            before, remaining = (remaining[:position], remaining[position + len(title):]) if position >= 0 else ("", remaining)
            current.text_parts.append(before.strip())
            current = Block(title=title, level=min(level, 6))
            parsed.blocks.append(current)
            first_block_of_page = first_block_of_page or current
        current.text_parts.append(remaining.strip())
        page_blocks.append(first_block_of_page or current)
    return page_blocks


def _split_by_numbers(parsed: ParsedFile, pages: list[str]) -> list[Block]:
    """Lines such as "2.1 Coil test" start sections; a page's links go to its first section."""
    page_blocks: list[Block] = []
    current = parsed.preamble
    for text in pages:
        first_on_page = None
        for line in text.splitlines():
            match = _NUMBERED.match(line.strip())
            if match and not match.group(2).rstrip().endswith((".", ",", ";")):
                level = min(match.group(1).count(".") + 1, 6)
                current = Block(title=f"{match.group(1)} {match.group(2).strip()}", level=level)
                parsed.blocks.append(current)
                first_on_page = first_on_page or current
            else:
                current.text_parts.append(line)
        page_blocks.append(first_on_page or current)
    return page_blocks


def _annotation_links(page) -> list[RawLink]:
    links = []
    for annotation in page.get("/Annots") or []:
        try:
            annotation = annotation.get_object()
            if annotation.get("/Subtype") != "/Link":
                continue
            action = annotation.get("/A")
            action = action.get_object() if action is not None else {}
            if action.get("/URI"):
                href = str(action["/URI"])
            elif action.get("/S") == "/GoToR" and action.get("/F"):
                target = action["/F"]
                target = target.get_object() if hasattr(target, "get_object") else target
                href = str(target.get("/F", target) if hasattr(target, "get") else target)
                dest = action.get("/D")
                if isinstance(dest, str) or (dest is not None and not isinstance(dest, list)):
                    href += f"#{dest}"
            else:
                continue
        except (PdfReadError, ValueError, KeyError, TypeError, AttributeError):
            continue
        links.append(RawLink(href, "", "pdf"))
    return links
