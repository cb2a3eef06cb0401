"""The blocks an Office or AsciiDoc reader builds as it walks a document in reading order: a heading opens a
block, text, links and bookmarks go to the block in force. A heading that starts with its number
(`2.1 Coil identification`) keeps the number apart, as a PDF's does, so slugs never carry it.

A typed number is kept in the title only where the writer's own bookmark on the heading says the
number is part of its identifier (pandoc's `21-grammars` on "2.1 Grammars", as GitHub slugs it; in
Word, where a bookmark name must start with a letter and hold at most 40 characters, pandoc writes
`X` and the SHA-1 of the identifier after its first hex digit).

A bookmark belongs to where it starts, never to its id's order or its end: one that starts
inside a heading marks that heading, one inside body text marks the section holding it, and one
that starts between paragraphs (or in a paragraph with no text) marks what comes next: the
heading that follows it, else the section the next text is in. pandoc wraps a whole section in
its heading's bookmark, starting just before the heading; Word, LibreOffice and Google Docs put
it inside the heading."""

from __future__ import annotations

import hashlib

from worker.documents.model import Block, LinkKind, ParsedFile, RawLink, new_parsed_file
from worker.documents.slugs import heading_slug, split_number

OPENING_LINES = 60  # a document id written in the text is looked for this many lines from the start, as in a PDF


class BlockWriter:
    def __init__(self, kind: LinkKind) -> None:
        self._parsed: ParsedFile = new_parsed_file()
        self.block: Block = self._parsed.preamble
        self.kind = kind
        self.opening: list[str] = []  # the first lines written, headings included: where an id may be
        self.pending: list[str] = []  # bookmarks started between paragraphs: they mark what comes next
        self.typed: list[tuple[Block, str]] = []  # headings whose typed number was split off, with their full text

    @property
    def parsed(self) -> ParsedFile:
        """The document so far; a bookmark still waiting for what follows it marks the section it is in,
        and a heading whose bookmark is the slug of its full text keeps its typed number."""
        self._settle()
        for block, full in self.typed:
            if _writer_names(heading_slug(full)) & {name.lower() for name in block.ids}:
                block.title = full
        self.typed = []
        return self._parsed

    def _settle(self) -> None:
        if self.pending:
            self.block.ids.extend(self.pending)
            self.pending = []

    def _opened(self, line: str) -> None:
        if len(self.opening) < OPENING_LINES:
            self.opening.append(line)

    def heading(self, title: str, level: int, number: str = "") -> Block:
        found, rest = split_number(title)
        self.block = Block(title=rest if found else title.strip(), level=level, number=number or found)
        if found:
            self.typed.append((self.block, title.strip()))
        self._parsed.blocks.append(self.block)
        self._settle()  # bookmarks just before a heading are that heading's
        self._opened(title)
        return self.block

    def text(self, line: str) -> None:
        self._settle()
        line = " ".join(line.split()) if "\n" not in line else "\n".join(" ".join(part.split()) for part in line.splitlines())
        if line.strip():
            self.block.text_parts.append(line.strip())
            self._opened(line.strip())

    def link(self, href: str, text: str) -> None:
        self._settle()
        if href.strip():
            self.block.links.append(RawLink(href.strip(), " ".join(text.split()), self.kind))

    def bookmark(self, name: str) -> None:
        """A bookmark that starts inside a heading (after `heading`) or inside body text."""
        self._settle()
        if _authored(name):
            self.block.ids.append(name)

    def mark(self, name: str) -> None:
        """A bookmark that starts between paragraphs: it marks the heading that follows, if one does."""
        if _authored(name):
            self.pending.append(name)


def _writer_names(identifier: str) -> set[str]:
    """The names a writer gives a heading's bookmark for its identifier: as is, or pandoc's Word form."""
    return {identifier, "x" + hashlib.sha1(identifier.encode()).hexdigest()[1:]}  # pandoc names it so; not a security use


def _authored(name: str) -> bool:
    return bool(name) and name != "_GoBack"  # Word's "last edit" marker, not an author's bookmark
