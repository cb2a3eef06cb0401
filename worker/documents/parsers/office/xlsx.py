"""Excel workbooks (.xlsx, .xlsm): a sheet is a section titled by its name, in the workbook's
order and anchored by it (`#Parts list` finds the sheet "Parts list", as Excel's own links name
a sheet); its text is its rows, a row a line with ` | ` between the cells that hold something,
as the cells display their values (shared and inline strings, numbers, booleans, a formula's
cached result). Hyperlinks on cells are the sheet's links, a jump to a place in the workbook an
`#Sheet` link. A chart sheet is a section without text. Macros are never read."""

from __future__ import annotations

import re

from lxml import etree

from worker.documents.model import ParsedFile
from worker.documents.parsers.blocks import BlockWriter
from worker.documents.parsers.office.package import Package, Relationship
from worker.documents.parsers.office.properties import declare, describe
from worker.documents.parsers.office.xml import attribute, local, relationship_id

SHARED_STRINGS = "/sharedStrings"


def parse(package: Package, id_fields: tuple[str, ...], id_patterns: tuple[re.Pattern[str], ...]) -> ParsedFile:
    main = package.main_part("Excel")
    rels = package.relationships(main)
    shared = next((rel.target for rel in rels.values() if rel.type.endswith(SHARED_STRINGS) and not rel.external), "")
    strings = _shared_strings(package.xml(shared)) if shared and package.has(shared) else []
    writer = BlockWriter("xlsx")
    for sheet in (element for element in package.xml(main).iter(etree.Element) if local(element.tag) == "sheet"):
        name = attribute(sheet, "name")
        rel = rels.get(relationship_id(sheet))
        block = writer.heading(name or "Sheet", 1)
        block.ids.append(name)
        if rel is None or rel.external or not package.has(rel.target):
            continue
        root = package.xml(rel.target)
        for line in _rows(root, strings):
            writer.text(line)
        for href, text in _hyperlinks(root, package.relationships(rel.target)):
            writer.link(href, text)
    declare(writer, describe(package, id_fields), id_patterns)
    return writer.parsed


def _shared_strings(root: etree._Element) -> list[str]:
    """Each shared string's text (rich-text runs joined; phonetic guides left out)."""
    strings = []
    for item in root:
        if local(item.tag) == "si":
            strings.append("".join(element.text or "" for element in item.iter(etree.Element) if local(element.tag) == "t" and _not_phonetic(element)))
    return strings


def _not_phonetic(element: etree._Element) -> bool:
    return not any(local(parent.tag) == "rPh" for parent in element.iterancestors())


def _rows(root: etree._Element, strings: list[str]) -> list[str]:
    lines = []
    for row in root.iter(etree.Element):
        if local(row.tag) != "row":
            continue
        values = [value for value in (_cell(cell, strings) for cell in row if local(cell.tag) == "c") if value]
        if values:
            lines.append(" | ".join(values))
    return lines


def _cell(cell: etree._Element, strings: list[str]) -> str:
    kind = attribute(cell, "t")
    if kind == "inlineStr":
        return " ".join("".join(element.text or "" for element in cell.iter(etree.Element) if local(element.tag) == "t").split())
    value = next(((child.text or "") for child in cell if local(child.tag) == "v"), "")
    if kind == "s":
        index = int(value) if value.isdigit() else -1
        return " ".join(strings[index].split()) if 0 <= index < len(strings) else ""
    if kind == "b":
        return "TRUE" if value == "1" else "FALSE" if value == "0" else ""
    return value.strip()


def _hyperlinks(root: etree._Element, rels: dict[str, Relationship]) -> list[tuple[str, str]]:
    links = []
    for element in root.iter(etree.Element):
        if local(element.tag) != "hyperlink":
            continue
        rel = rels.get(relationship_id(element))
        target = rel.target if rel is not None and rel.external else ""
        location = attribute(element, "location")
        if target.startswith("#"):  # a place in this workbook written as a target (openpyxl does)
            target, location = "", target[1:]
        place = location.split("!", 1)[0].strip("'") if location else ""
        href = f"{target}#{place}" if place else target
        if href:
            links.append((href, attribute(element, "display") or attribute(element, "ref")))
    return links
