"""The blocks an Office or AsciiDoc reader builds as it walks a document in reading order: a heading opens a
block, text, links and bookmarks go to the block in force. A heading that starts with its number
(`2.1 Coil identification`) keeps the number apart, as a PDF's does, so slugs never carry it."""

from __future__ import annotations

from worker.documents.model import Block, LinkKind, ParsedFile, RawLink, new_parsed_file
from worker.documents.slugs import split_number

OPENING_LINES = 60  # a document id written in the text is looked for this many lines from the start, as in a PDF


class BlockWriter:
    def __init__(self, kind: LinkKind) -> None:
        self.parsed: ParsedFile = new_parsed_file()
        self.block: Block = self.parsed.preamble
        self.kind = kind
        self.opening: list[str] = []  # the first lines written, headings included: where an id may be

    def _opened(self, line: str) -> None:
        if len(self.opening) < OPENING_LINES:
            self.opening.append(line)

    def heading(self, title: str, level: int, number: str = "") -> Block:
        found, rest = split_number(title)
        self.block = Block(title=rest if found else title.strip(), level=level, number=number or found)
        self.parsed.blocks.append(self.block)
        self._opened(title)
        return self.block

    def text(self, line: str) -> None:
        line = " ".join(line.split()) if "\n" not in line else "\n".join(" ".join(part.split()) for part in line.splitlines())
        if line.strip():
            self.block.text_parts.append(line.strip())
            self._opened(line.strip())

    def link(self, href: str, text: str) -> None:
        if href.strip():
            self.block.links.append(RawLink(href.strip(), " ".join(text.split()), self.kind))

    def bookmark(self, name: str) -> None:
        if name and name != "_GoBack":  # Word's "last edit" marker, not an author's bookmark
            self.block.ids.append(name)
