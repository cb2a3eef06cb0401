"""PowerPoint decks (.pptx, .pptm): a slide is a section, in the presentation's order, titled by
its title placeholder (else "Slide N") and anchored `slide=N` as a PDF page is `page=N`. The
other shapes' text (grouped shapes, tables a row a line) and the speaker notes are the section's
text; hyperlinks on text are its links, a jump to another slide an `#slide=N` link. Hidden slides
are sections too: they are part of what the author wrote. Macros are never read."""

from __future__ import annotations

import re

from lxml import etree

from worker.documents.model import ParsedFile
from worker.documents.parsers.blocks import BlockWriter
from worker.documents.parsers.office.package import Package, Relationship
from worker.documents.parsers.office.properties import declare, describe
from worker.documents.parsers.office.xml import attribute, local, parent_name, relationship_id

TITLES = frozenset({"title", "ctrTitle"})
NOT_CONTENT = frozenset({"sldNum", "dt", "ftr", "hdr", "sldImg"})  # slide furniture, not what the slide says


def slide_anchor(number: int) -> str:
    return f"slide={number}"


def parse(package: Package, id_fields: tuple[str, ...], id_patterns: tuple[re.Pattern[str], ...]) -> ParsedFile:
    main = package.main_part("PowerPoint")
    rels = package.relationships(main)
    slides = [
        rels[relationship_id(entry)].target for entry in package.xml(main).iter(etree.Element) if local(entry.tag) == "sldId" and relationship_id(entry) in rels
    ]
    numbers = {part: index + 1 for index, part in enumerate(slides)}
    writer = BlockWriter("pptx")
    for number, part in enumerate(slides, start=1):
        if not package.has(part):
            writer.parsed.problems.append(f"slide {number}: its part {part} is missing")
            continue
        slide_rels = package.relationships(part)
        title, lines, links = _slide(package.xml(part), slide_rels, numbers)
        notes = next((rel.target for rel in slide_rels.values() if rel.type.endswith("/notesSlide") and not rel.external), "")
        if notes and package.has(notes):
            _, note_lines, note_links = _slide(package.xml(notes), package.relationships(notes), numbers, notes=True)
            lines, links = lines + note_lines, links + note_links
        block = writer.heading(title or f"Slide {number}", 1)
        block.ids.append(slide_anchor(number))
        for line in lines:
            writer.text(line)
        for href, text in links:
            writer.link(href, text)
    declare(writer, describe(package, id_fields), id_patterns)
    return writer.parsed


def _slide(root: etree._Element, rels: dict[str, Relationship], numbers: dict[str, int], notes: bool = False) -> tuple[str, list[str], list[tuple[str, str]]]:
    """(title, text lines, links) of one slide or notes page, shapes in their drawing order."""
    title = ""
    lines: list[str] = []
    links: list[tuple[str, str]] = []
    for shape in root.iter(etree.Element):
        name = local(shape.tag)
        if name == "sp":
            kind = _placeholder(shape)
            if kind in NOT_CONTENT or (notes and kind is not None and kind != "body"):
                continue
            paragraphs = [
                _paragraph(paragraph, rels, numbers, links)
                for paragraph in shape.iter(etree.Element)
                if local(paragraph.tag) == "p" and parent_name(paragraph) == "txBody"
            ]
            text = [line for line in paragraphs if line.strip()]
            click = _shape_click(shape)
            href = _href(click, rels, numbers) if click is not None else ""
            if href:  # the whole shape is the link (an action setting)
                links.append((href, " ".join(text)))
            if kind in TITLES and not title:
                title = " ".join(" ".join(text).split())
            else:
                lines.extend(text)
        elif name == "tbl":
            for row in (child for child in shape if local(child.tag) == "tr"):
                cells = [
                    " ".join(_paragraph(p, rels, numbers, links) for p in cell.iter(etree.Element) if local(p.tag) == "p").strip()
                    for cell in row
                    if local(cell.tag) == "tc"
                ]
                if any(cells):
                    lines.append(" | ".join(cells))
    return title, lines, links


def _placeholder(shape: etree._Element) -> str | None:
    for element in shape.iter(etree.Element):
        if local(element.tag) == "ph":
            return attribute(element, "type") or "body"
        if local(element.tag) == "txBody":
            break
    return None


def _shape_click(shape: etree._Element) -> etree._Element | None:
    """A shape's own click action (`p:cNvPr/a:hlinkClick`), as against a run's."""
    for element in shape:
        if local(element.tag) == "nvSpPr":
            for properties in element:
                if local(properties.tag) == "cNvPr":
                    return next((child for child in properties if local(child.tag) == "hlinkClick"), None)
    return None


def _paragraph(paragraph: etree._Element, rels: dict[str, Relationship], numbers: dict[str, int], links: list[tuple[str, str]]) -> str:
    parts = []
    for run in paragraph:
        name = local(run.tag)
        if name == "br":
            parts.append(" ")
        elif name in ("r", "fld"):
            text = "".join(child.text or "" for child in run if local(child.tag) == "t")
            parts.append(text)
            click = next((element for element in run.iter(etree.Element) if local(element.tag) == "hlinkClick"), None)
            if click is not None:
                href = _href(click, rels, numbers)
                if href:
                    links.append((href, text))
    return "".join(parts)


def _href(click: etree._Element, rels: dict[str, Relationship], numbers: dict[str, int]) -> str:
    rel = rels.get(relationship_id(click))
    if rel is None:
        return ""
    if rel.external:
        return rel.target
    number = numbers.get(rel.target)
    return f"#{slide_anchor(number)}" if number else ""
