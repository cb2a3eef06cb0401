"""Word documents (.docx, .docm; transitional and strict OOXML, Word's and LibreOffice's), read
from the package's XML with lxml.

Headings come from a paragraph's outline level, else its style's (following `basedOn`), else a
style named "heading N"; Word's automatic heading numbers become the section's `number`, a
number typed into the heading is split off it, so neither reaches a slug. Tables are kept as
text, a row a line with ` | ` between cells; list items as `- ` lines; text boxes, content
controls and equations as text; tracked deletions, field codes, headers and footers are not text.
Hyperlinks (relationship targets with `#bookmark` fragments, `w:anchor` jumps, HYPERLINK and REF
fields) are links; a bookmark is an anchor of the heading it starts in or just before, else of the
section holding it (see `blocks`), so `_Toc` links from a table of contents and pandoc's heading
bookmarks land on their headings. Macros (`vbaProject.bin`) are never read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from lxml import etree

from worker.documents.model import ParsedFile
from worker.documents.parsers.blocks import BlockWriter
from worker.documents.parsers.office.package import Package, Relationship
from worker.documents.parsers.office.properties import declare, describe
from worker.documents.parsers.office.xml import attribute, local, relationship_id

BODY_TEXT_LEVEL = 9  # outlineLvl 9 is Word's "body text": explicitly not a heading
_HEADING_STYLE = re.compile(r"^heading\s*(\d)$", re.I)
_HYPERLINK_FIELD = re.compile(r'^\s*HYPERLINK\s+(?:"([^"]*)"|(\S+))?(?:.*?\\l\s+"([^"]*)")?', re.I | re.S)
_REF_FIELD = re.compile(r"^\s*REF\s+(\S+)", re.I)
SKIPPED = frozenset(
    {
        "del",
        "moveFrom",
        "rPr",
        "pPr",
        "delText",
        "delInstrText",
        "fldData",
        "Fallback",
        "sdtPr",
        "sdtEndPr",
        "footnoteReference",
        "endnoteReference",
        "commentReference",
        "annotationRef",
    }
)


@dataclass(frozen=True)
class Style:
    name: str
    level: int | None  # its outline level as a heading, 1-based; None when body text
    numbered: bool


@dataclass
class _Field:
    instruction: str = ""
    result: bool = False  # past the separator: what follows is displayed
    link: list[str] | None = None  # the displayed text of a HYPERLINK or REF field


@dataclass
class _Paragraph:
    """What one paragraph holds, gathered before deciding whether it is a heading."""

    parts: list[str] = field(default_factory=list)
    links: list[tuple[str, str]] = field(default_factory=list)
    bookmarks: list[str] = field(default_factory=list)
    nested: list[str] = field(default_factory=list)  # text boxes' paragraphs

    @property
    def text(self) -> str:
        return "".join(self.parts)


def parse(package: Package, id_fields: tuple[str, ...], id_patterns: tuple[re.Pattern[str], ...]) -> ParsedFile:
    main = package.main_part("Word")
    reader = _Reader(package, main)
    body = next((child for child in package.xml(main) if local(child.tag) == "body"), None)
    if body is not None:
        reader.container(body)
    declare(reader.writer, describe(package, id_fields), id_patterns, title=reader.title)
    return reader.writer.parsed


class _Reader:
    def __init__(self, package: Package, main: str) -> None:
        self.writer = BlockWriter("docx")
        self.rels = package.relationships(main)
        self.styles, self.default_style = _styles(package, main, self.rels)
        self.fields: list[_Field] = []
        self.counters: list[int] = []  # automatic heading numbers, per level
        self.title = ""
        self.open_links: list[list[str]] = []  # the displayed text of each hyperlink being read

    def container(self, element: etree._Element, in_cell: bool = False) -> list[str]:
        """Block-level content in order; returns its text lines (used for table cells)."""
        lines: list[str] = []
        for child in element:
            name = local(child.tag)
            if name == "p":
                lines.extend(self.paragraph(child, in_cell))
            elif name == "tbl":
                lines.extend(self.table(child))
            elif name in ("sdt", "sdtContent", "customXml", "ins", "moveTo"):
                lines.extend(self.container(child, in_cell))
            elif name == "bookmarkStart":  # between paragraphs: it marks what follows
                self.writer.mark(attribute(child, "name"))
        return lines

    def table(self, table: etree._Element) -> list[str]:
        rows: list[str] = []
        for element in (child for child in table if local(child.tag) == "tr"):
            cells = [" ".join(self.container(cell, in_cell=True)) for cell in element if local(cell.tag) == "tc"]
            if any(cell.strip() for cell in cells):
                rows.append(" | ".join(cell.strip() for cell in cells))
        if not any(local(parent.tag) == "tc" for parent in table.iterancestors()):
            for line in rows:
                self.writer.text(line)
        return rows

    def paragraph(self, element: etree._Element, in_cell: bool) -> list[str]:
        gathered = _Paragraph()
        self.inline(element, gathered)
        style, level, numbered, listed = self._paragraph_style(element)
        text = gathered.text.strip()
        writer = self.writer
        if level is not None and text and not in_cell:
            number = self._number(level) if numbered else ""
            writer.heading(" ".join(text.split()), level, number)
            for name in gathered.bookmarks:  # the heading's own block is the one in force now
                writer.bookmark(name)
            for href, link_text in gathered.links:
                writer.link(href, link_text)
            self._nested(gathered)
            return []
        if style.lower() in ("title", "subtitle") and not in_cell:
            self.title = self.title or (" ".join(text.split()) if style.lower() == "title" else "")
        for name in gathered.bookmarks:  # in body text: the section holding it; in an empty paragraph: what follows
            (writer.bookmark if text or in_cell else writer.mark)(name)
        for href, link_text in gathered.links:
            writer.link(href, link_text)
        line = (f"- {text}" if listed and text else text) if style.lower() not in ("title", "subtitle") else ""
        if not in_cell and line:
            self.writer.text(line)
        self._nested(gathered)
        return [text] if in_cell and text else []

    def _nested(self, gathered: _Paragraph) -> None:
        for line in gathered.nested:
            self.writer.text(line)

    def _paragraph_style(self, element: etree._Element) -> tuple[str, int | None, bool, bool]:
        """(style name, heading level or None, automatically numbered, a list item)."""
        properties = next((child for child in element if local(child.tag) == "pPr"), None)
        style_id, outline, numbering = "", None, None
        if properties is not None:
            for child in properties:
                name = local(child.tag)
                if name == "pStyle":
                    style_id = attribute(child, "val")
                elif name == "outlineLvl":
                    outline = _int(attribute(child, "val"))
                elif name == "numPr":
                    num_id = next((attribute(item, "val") for item in child if local(item.tag) == "numId"), "")
                    numbering = num_id not in ("", "0")
        style = self.styles.get(style_id) or self.styles.get(self.default_style) or Style("", None, False)
        level = style.level if outline is None else (outline + 1 if outline < BODY_TEXT_LEVEL else None)
        numbered = style.numbered if numbering is None else numbering
        return style.name, level, numbered and level is not None, bool(numbering) and level is None

    def _number(self, level: int) -> str:
        del self.counters[level:]
        self.counters.extend([0] * (level - len(self.counters)))
        self.counters[level - 1] += 1
        return ".".join(str(count or 1) for count in self.counters)

    def inline(self, element: etree._Element, into: _Paragraph) -> None:
        for child in element:
            name = local(child.tag)
            if name in SKIPPED:
                continue
            if name == "t":
                self._emit(into, child.text or "")
            elif name == "tab":
                self._emit(into, "\t")
            elif name in ("br", "cr"):
                self._emit(into, " ")
            elif name == "noBreakHyphen":
                self._emit(into, "-")
            elif name == "bookmarkStart":
                into.bookmarks.append(attribute(child, "name"))
            elif name == "instrText":
                if self.fields:
                    self.fields[-1].instruction += child.text or ""
            elif name == "fldChar":
                self._field_char(attribute(child, "fldCharType"), into)
            elif name == "fldSimple":
                self.fields.append(_Field(attribute(child, "instr")))
                self._field_char("separate", into)
                self.inline(child, into)
                self._field_char("end", into)
            elif name == "hyperlink":
                self._hyperlink(child, into)
            elif name == "txbxContent":
                nested = _Paragraph()
                for paragraph in child.iter(etree.Element):
                    if local(paragraph.tag) == "p":
                        inner = _Paragraph()
                        self.inline(paragraph, inner)
                        nested.nested.append(inner.text)
                        into.links.extend(inner.links)
                        into.bookmarks.extend(inner.bookmarks)
                into.nested.extend(line for line in nested.nested if line.strip())
            else:
                self.inline(child, into)

    def _emit(self, into: _Paragraph, text: str) -> None:
        if self.fields and not self.fields[-1].result:
            return  # a field's code, not its displayed result
        into.parts.append(text)
        for open_field in self.fields:
            if open_field.link is not None:
                open_field.link.append(text)
        for collecting in self.open_links:
            collecting.append(text)

    def _hyperlink(self, element: etree._Element, into: _Paragraph) -> None:
        rel: Relationship | None = self.rels.get(relationship_id(element))
        anchor = attribute(element, "anchor")
        target = (rel.target if rel is not None and rel.external else "") if rel is not None else ""
        href = f"{target}#{anchor}" if anchor else target
        words: list[str] = []
        self.open_links.append(words)
        self.inline(element, into)
        self.open_links.pop()
        if href:
            into.links.append((href, "".join(words)))

    def _field_char(self, kind: str, into: _Paragraph) -> None:
        if kind == "begin":
            self.fields.append(_Field())
        elif kind == "separate" and self.fields:
            current = self.fields[-1]
            current.result = True
            if _field_href(current.instruction):
                current.link = []
        elif kind == "end" and self.fields:
            current = self.fields.pop()
            href = _field_href(current.instruction)
            if href:
                into.links.append((href, "".join(current.link or [])))


def _field_href(instruction: str) -> str:
    """The target of a HYPERLINK field (`HYPERLINK "url" \\l "bookmark"`) or a REF to a bookmark."""
    found = _HYPERLINK_FIELD.match(instruction)
    if found:
        target, anchor = found.group(1) or found.group(2) or "", found.group(3) or ""
        if target.startswith("\\"):
            target = ""
        return f"{target}#{anchor}" if anchor else target
    ref = _REF_FIELD.match(instruction)
    if ref and "\\h" in instruction:
        return f"#{ref.group(1)}"
    return ""


def _int(value: str) -> int | None:
    try:
        return int(value)
    except ValueError:
        return None


def _styles(package: Package, main: str, rels: dict[str, Relationship]) -> tuple[dict[str, Style], str]:
    """Paragraph styles by id, each with its heading level (own outline level, a "heading N"
    name, or what it is based on) and whether it numbers automatically; and the default style."""
    part = next((rel.target for rel in rels.values() if rel.type.endswith("/styles") and not rel.external), "")
    if not part or not package.has(part):
        return {}, ""
    raw: dict[str, tuple[str, int | None, str, bool | None]] = {}
    default = ""
    for element in package.xml(part):
        if local(element.tag) != "style" or attribute(element, "type") not in ("paragraph", ""):
            continue
        style_id = attribute(element, "styleId")
        name, based, outline, numbered = "", "", None, None
        for child in element:
            tag = local(child.tag)
            if tag == "name":
                name = attribute(child, "val")
            elif tag == "basedOn":
                based = attribute(child, "val")
            elif tag == "pPr":
                for item in child:
                    if local(item.tag) == "outlineLvl":
                        outline = _int(attribute(item, "val"))
                    elif local(item.tag) == "numPr":
                        num_id = next((attribute(sub, "val") for sub in item if local(sub.tag) == "numId"), None)
                        numbered = num_id not in (None, "0") if num_id is not None else True
        if attribute(element, "default") in ("1", "true", "on"):
            default = style_id
        heading = _HEADING_STYLE.match(name.strip())
        level = (outline + 1 if outline < BODY_TEXT_LEVEL else 0) if outline is not None else (int(heading.group(1)) if heading else None)
        raw[style_id] = (name, level, based, numbered)

    def resolve(style_id: str, seen: frozenset[str] = frozenset()) -> Style:
        name, level, based, numbered = raw[style_id]
        if (level is None or numbered is None) and based in raw and based not in seen:
            parent = resolve(based, seen | {style_id})
            level = parent.level if level is None else level
            numbered = parent.numbered if numbered is None else numbered
        return Style(name, level or None, bool(numbered))  # level 0: body text, explicitly

    return {style_id: resolve(style_id) for style_id in raw}, default
