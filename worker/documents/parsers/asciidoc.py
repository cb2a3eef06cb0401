"""AsciiDoc structure, as Asciidoctor reads it: the header's `= Title` (also below attribute
entries and its own `[id=...]`, as modular documentation writes it) and attribute entries
(`:id: TSB-21-114`) are the front matter; `==` to `======` (or Markdown-style `##`) headings
are sections of level 1 to 5; `[[id]]`, `[#id]` and `anchor:id[]` are anchors of the section
that holds them, and every heading also answers to Asciidoctor's own id (`_cause_and_fix`).
Links: `<<id,text>>`, `<<file.adoc#id,text>>`, `xref:file.adoc#id[text]`, `link:path[text]`
and URLs. Delimited blocks (listings, literals, passthroughs) are text without structure;
comments are not text; `include::` is not followed (noted)."""

from __future__ import annotations

import re

from worker.documents.model import Block, ParsedFile
from worker.documents.parsers.blocks import BlockWriter

_TITLE = re.compile(r"^=\s+(\S.*?)\s*$")
_HEADING = re.compile(r"^(={1,6}|#{1,6})\s+(\S.*?)(?:\s+\1)?\s*$")
_ATTRIBUTE = re.compile(r"^:(!?[\w\-]+!?):\s*(.*?)\s*$")
_BLOCK_ANCHOR = re.compile(r"^\[(?:\[([^\[\],]+)(?:,[^\]]*)?\]|#([^\].,%\s]+)[^\]]*|[^\]]*\bid=([^\],\s]+)[^\]]*)\]\s*$")
_INLINE_ANCHOR = re.compile(r"\[\[([^\[\],\s]+)(?:,[^\]]*)?\]\]|anchor:([^\[\s]+)\[[^\]]*\]")
_XREF = re.compile(r"<<([^,>]+?)(?:,\s*([^>]*))?>>|xref:(\+\+.+?\+\+|[^\[\s]+)\[([^\]]*)\]")
# A target in `++...++` is passed through as written (pandoc so writes targets with `#` or `[`).
_LINK = re.compile(r"link:(\+\+.+?\+\+|[^\[\s]+)\[([^\]]*)\]|((?:[a-zA-Z][\w+.\-]*://|mailto:)[^\s\[<>]+)(?:\[([^\]]*)\])?")
_EMPHASIS = re.compile(r"(?<![^\W_])(_{1,2})(?=[^\s_])(.+?)(?<=[^\s_])\1(?![^\W_])")  # `_text_`, `__text__`; `$_` and `snake_case` stay
_BLOCK_ATTRIBUTES = re.compile(r"^\[[^\[\]]*\]$")  # [source,sql], [NOTE]: how the next block renders
_DELIMITER = re.compile(r"^(-{4,}|\.{4,}|\+{4,}|/{4,}|_{4,}|\*{4,}|={4,}|\|===+|`{3,}.*)$")
VERBATIM = ("-", ".", "+", "`")  # listing, literal, passthrough, fenced: no structure inside
_ID_CHARS = re.compile(r"[^\w]+")


def auto_id(title: str) -> str:
    """Asciidoctor's generated section id: `_` + the title lower-cased, non-word runs as `_`."""
    return "_" + _ID_CHARS.sub("_", title.lower()).strip("_")


def parse(text: str) -> ParsedFile:
    writer = BlockWriter("asciidoc")
    parsed = writer.parsed
    lines = text.splitlines()
    position = _header(lines, parsed.front_matter)
    pending: list[str] = []  # block anchors waiting for the heading below them
    paragraph: list[str] = []  # a paragraph's lines: its links may wrap across them, as Asciidoctor reads them
    closing: str | None = None  # the delimiter that ends the block we are in
    in_table = False  # a table's cells hold text, never sections
    generated: list[tuple[Block, str]] = []  # headings that also answer to Asciidoctor's own id

    def end_paragraph() -> None:
        if paragraph:
            _links(writer, "\n".join(paragraph))
            paragraph.clear()

    for line in lines[position:]:
        stripped = line.strip()
        if closing is not None:
            if stripped == closing:
                closing = None
            elif not closing.startswith("/"):
                writer.text(line)
            continue
        delimiter = _DELIMITER.match(stripped)
        if delimiter:
            end_paragraph()
            closing = stripped if not stripped.startswith("```") else "```"
            if stripped.startswith("|"):
                in_table = not in_table
            if stripped.startswith(("=", "_", "*", "|")):  # example, quote, sidebar, table: structure stays
                closing = None
            continue
        if stripped.startswith("//") or not stripped:
            end_paragraph()
            continue
        anchor = _BLOCK_ANCHOR.match(stripped) if not paragraph else None
        if anchor:
            pending.append(next(group for group in anchor.groups() if group).strip("\"'"))
            continue
        if not paragraph and _BLOCK_ATTRIBUTES.match(stripped):
            continue
        heading = _HEADING.match(stripped) if not paragraph and not in_table else None  # a title starts a block
        if heading and len(heading.group(1)) == 1 and "title" not in parsed.front_matter and not parsed.headings:
            parsed.front_matter["title"] = heading.group(2)  # the document title, below attribute entries and its id
            for name in pending:
                writer.bookmark(name)
            pending = []
            continue
        if heading:
            title = _shown(heading.group(2))
            block = writer.heading(title, max(1, len(heading.group(1)) - 1))
            block.ids.extend(pending)
            generated.append((block, title))
            pending = []
            _links(writer, heading.group(2))
            continue
        for name in pending:
            writer.bookmark(name)
        pending = []
        if stripped.startswith("include::"):
            parsed.problems.append(f"not followed: {stripped[:120]}")
            continue
        if stripped.startswith(("image::", "toc::")):
            continue
        for match in _INLINE_ANCHOR.finditer(line):
            writer.bookmark(match.group(1) or match.group(2))
        paragraph.append(line)
        writer.text(_INLINE_ANCHOR.sub("", line))
    end_paragraph()
    _generate_ids(parsed, generated)
    return writer.parsed


def _generate_ids(parsed: ParsedFile, headings: list[tuple[Block, str]]) -> None:
    """Asciidoctor's generated ids, `_2`, `_3` for a repeat; an id written anywhere in the document
    is the author's, so a generated one never takes it (pandoc writes `[[_]]` on "`$_`" and lets
    "`$$`" generate its id)."""
    taken = {name.lower() for block in parsed.blocks for name in block.ids}
    for block, title in headings:
        base = candidate = auto_id(title)
        repeat = 1
        while candidate.lower() in taken:
            repeat += 1
            candidate = f"{base}_{repeat}"
        taken.add(candidate.lower())
        block.ids.append(candidate)


def _header(lines: list[str], front_matter: dict[str, object]) -> int:
    """Read the document header (title, author and revision lines, attribute entries); returns
    where the body starts."""
    index = 0
    while index < len(lines) and (not lines[index].strip() or lines[index].startswith("//")):
        index += 1
    title = _TITLE.match(lines[index]) if index < len(lines) else None
    if title:
        front_matter["title"] = title.group(1)
        index += 1
    while index < len(lines) and lines[index].strip():
        entry = _ATTRIBUTE.match(lines[index])
        if entry:
            front_matter.setdefault(entry.group(1).lower(), entry.group(2))
        elif not title:
            break
        index += 1
    return index


def _links(writer: BlockWriter, text: str) -> None:
    """The links of a heading or a paragraph, in the order written (a link's text may wrap)."""
    found: list[tuple[int, str, str]] = []
    spans: list[tuple[int, int]] = []
    for match in _XREF.finditer(text):
        target = _passed(match.group(1) or match.group(3))
        found.append((match.start(), _xref_href(target.strip()), match.group(2) or match.group(4) or ""))
        spans.append(match.span())
    for match in _LINK.finditer(text):
        if not any(start <= match.start() < end for start, end in spans):  # a URL inside a cross-reference is its target
            found.append((match.start(), _passed(match.group(1) or match.group(3)), match.group(2) or match.group(4) or ""))
    for _, href, label in sorted(found):
        writer.link(href, " ".join(label.split()))


def _passed(target: str) -> str:
    return target[2:-2] if target.startswith("++") and target.endswith("++") and len(target) > 4 else target


def _shown(line: str) -> str:
    """A line as it reads: each link or cross-reference by its text (else its target), emphasis
    (`_restricted commands_`) without its marks."""
    line = _XREF.sub(lambda match: match.group(2) or match.group(4) or match.group(1) or match.group(3), line)
    line = _LINK.sub(lambda match: match.group(2) or match.group(4) or match.group(1) or match.group(3), line)
    return _EMPHASIS.sub(lambda match: match.group(2), line)


def _xref_href(target: str) -> str:
    """`id` is a same-document anchor; `file.adoc#id` and `file#id` a path, as Asciidoctor reads them."""
    if "#" in target:
        return target
    if target.lower().endswith((".adoc", ".asciidoc")):
        return target
    return f"#{target}"
