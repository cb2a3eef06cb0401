"""XML parts parsed without trusting them: no DTD is loaded, no entity expanded, nothing fetched
from the network or the disk, and a part that declares a DTD at all (external entities,
billion-laughs expansion) is refused. Office packages never need one."""

from __future__ import annotations

import codecs
import re

from lxml import etree

_DOCTYPE = re.compile(rb"^\s*(?:<\?xml[^>]*\?>)?(?:\s*<!--.*?-->|\s*<\?.*?\?>)*\s*<!DOCTYPE", re.S | re.I)
_PARSER = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, dtd_validation=False, huge_tree=False, remove_comments=True)


class UnsafeXml(ValueError):
    """A part that is not well-formed XML, or declares a DTD."""


def parse_xml(data: bytes, name: str) -> etree._Element:
    prolog = data[:4096]
    if prolog.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        prolog = prolog.decode("utf-16", "replace").encode()
    if _DOCTYPE.match(prolog.removeprefix(codecs.BOM_UTF8)):
        raise UnsafeXml(_dtd(name))
    try:
        root = etree.fromstring(data, _PARSER)
    except etree.XMLSyntaxError as err:
        raise UnsafeXml(f"malformed XML in {name}: {err}") from None
    info = root.getroottree().docinfo
    if info.internalDTD is not None or info.externalDTD is not None or info.system_url or info.public_id:
        raise UnsafeXml(_dtd(name))
    return root


def _dtd(name: str) -> str:
    return f"{name} declares a DTD (<!DOCTYPE>): entities are refused (external entities, entity expansion)"


def local(tag: object) -> str:
    """An element's name without its namespace; "" for comments and processing instructions."""
    return tag.rsplit("}", 1)[-1] if isinstance(tag, str) else ""


def parent_name(element: etree._Element) -> str:
    parent = element.getparent()
    return local(parent.tag) if parent is not None else ""


def attribute(element: etree._Element, name: str) -> str:
    """An attribute by local name, whatever its namespace (transitional and strict OOXML differ)."""
    for key, value in element.attrib.items():
        if local(key) == name:
            return str(value)
    return ""


def relationship_id(element: etree._Element) -> str:
    """The `r:id` that names a relationship of the part, whatever the relationships namespace;
    never an unqualified `id` (a slide's number in the list, a shape's)."""
    for key, value in element.attrib.items():
        if str(key).startswith("{") and local(key) == "id":
            return str(value)
    return ""
