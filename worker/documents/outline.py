"""From a parser's headings to sections: GitHub anchors, heading paths, parents, reading order."""

from __future__ import annotations

from dataclasses import dataclass

from worker.documents.model import ParsedFile, RawLink
from worker.documents.slugs import SlugCounter, heading_slug, split_number


@dataclass(frozen=True)
class SectionNode:
    path: str  # heading path, e.g. "cause/coil-failure"; unique in its document
    parent: str | None  # the parent section's path; None under the document itself
    anchor: str  # the GitHub anchor of this heading
    title: str
    level: int
    position: int  # reading order within the document, from 0
    text: str  # the section's own text, without its subsections
    anchors: tuple[str, ...]  # every anchor a link may use: the slug, explicit ids and the heading's number, lower-cased
    links: tuple[RawLink, ...]
    number: str = ""  # "2.1" for a numbered heading; not part of the title or the anchor


def sections(parsed: ParsedFile) -> list[SectionNode]:
    counter = SlugCounter()
    stack: list[tuple[int, str]] = []  # (level, path) of open ancestors
    built: list[SectionNode] = []
    for position, block in enumerate(parsed.headings):
        anchor = counter.unique(heading_slug(block.title))
        while stack and stack[-1][0] >= block.level:
            stack.pop()
        parent = stack[-1][1] if stack else None
        path = f"{parent}/{anchor}" if parent else anchor
        stack.append((block.level, path))
        number = block.number or split_number(block.title)[0]  # `#2.1` finds "2.1 Coil identification" in any format
        ids = tuple(dict.fromkeys([anchor, *(value.lower() for value in block.ids), *([number] if number else [])]))
        built.append(SectionNode(path, parent, anchor, block.title, block.level, position, block.text, ids, tuple(block.links), block.number))
    return built
