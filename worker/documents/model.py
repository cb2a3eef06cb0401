"""What every parser returns: one model for every format (Markdown, HTML, PDF, Office, AsciiDoc).

A parser reports headings in reading order with the text, links and explicit anchors that sit
directly under each; `outline.build` turns that into sections with slugs and heading paths.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

LinkKind = Literal["inline", "reference", "autolink", "html", "pdf", "docx", "pptx", "xlsx", "odt", "asciidoc"]


@dataclass(frozen=True)
class RawLink:
    """A link as the author wrote it; resolution happens later, against the library."""

    href: str
    text: str
    kind: LinkKind


@dataclass
class Block:
    """The content directly under one heading (or, for level 0, before the first heading)."""

    title: str
    level: int  # 0 for the preamble, 1-6 for headings
    text_parts: list[str] = field(default_factory=list)
    links: list[RawLink] = field(default_factory=list)
    ids: list[str] = field(default_factory=list)  # explicit HTML ids / names
    number: str = ""  # a numbered heading's number ("2.1"), kept apart from its title

    @property
    def text(self) -> str:
        return "\n".join(part for part in self.text_parts if part).strip()


@dataclass
class ParsedFile:
    """A parser's output: front matter, the preamble block, then one block per heading."""

    blocks: list[Block]
    front_matter: dict[str, object] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)  # non-fatal: the document still loads

    @property
    def preamble(self) -> Block:
        return self.blocks[0]

    @property
    def headings(self) -> list[Block]:
        return self.blocks[1:]


def new_parsed_file() -> ParsedFile:
    return ParsedFile(blocks=[Block(title="", level=0)])
