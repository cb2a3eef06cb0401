"""An Office file's own description of itself: title and id from its core properties
(`docProps/core.xml`, ODF's `meta.xml`) and its custom properties, read as a document's front matter."""

from __future__ import annotations

import re
from dataclasses import dataclass

from lxml import etree

from worker.documents.parsers.blocks import BlockWriter
from worker.documents.parsers.office.package import Package
from worker.documents.parsers.office.xml import attribute, local
from worker.documents.parsers.titles import clean, id_in_text

CORE_PART = "docProps/core.xml"
CUSTOM_PART = "docProps/custom.xml"


@dataclass(frozen=True)
class Described:
    title: str
    doc_id: str


def describe(package: Package, id_fields: tuple[str, ...]) -> Described:
    """An OOXML package's title (dc:title when meaningful) and id (a custom property named by
    documents.id_fields, else dc:identifier)."""
    core = _fields(package.xml(CORE_PART)) if package.has(CORE_PART) else {}
    custom = _custom(package.xml(CUSTOM_PART)) if package.has(CUSTOM_PART) else {}
    return Described(clean(core.get("title")), _declared(custom, id_fields) or clean(core.get("identifier")))


def describe_odf(meta: etree._Element | None, id_fields: tuple[str, ...]) -> Described:
    """An ODF document's title and id from meta.xml: dc:title; a meta:user-defined field named by
    documents.id_fields, else dc:identifier."""
    if meta is None:
        return Described("", "")
    fields = _fields(meta)
    custom = {attribute(element, "name").lower(): (element.text or "").strip() for element in meta.iter(etree.Element) if local(element.tag) == "user-defined"}
    return Described(clean(fields.get("title")), _declared(custom, id_fields) or clean(fields.get("identifier")))


def declare(writer: BlockWriter, described: Described, id_patterns: tuple[re.Pattern[str], ...], title: str = "") -> None:
    """The document's title (its properties', else `title`, what its text shows as one) and id
    (its properties', else a metadata line among the opening lines) as its front matter."""
    front_matter = writer.parsed.front_matter
    if described.title or title:
        front_matter["title"] = described.title or title
    doc_id = described.doc_id or id_in_text(writer.opening, id_patterns)
    if doc_id:
        front_matter["id"] = doc_id


def _fields(root: etree._Element) -> dict[str, str]:
    found: dict[str, str] = {}
    for element in root.iter(etree.Element):
        name = local(element.tag)
        if name in ("title", "identifier") and name not in found:
            found[name] = " ".join((element.text or "").split())
    return found


def _custom(root: etree._Element) -> dict[str, str]:
    found = {}
    for prop in root:
        value = next((" ".join((child.text or "").split()) for child in prop), "")
        found[attribute(prop, "name").lower()] = value
    return found


def _declared(fields: dict[str, str], id_fields: tuple[str, ...]) -> str:
    for key in id_fields:
        value = fields.get(key.lower(), "")
        if value:
            return value
    return ""
