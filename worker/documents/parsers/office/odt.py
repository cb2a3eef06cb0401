"""OpenDocument text (.odt, LibreOffice's and others'): `text:h` headings at their outline level,
their rendered number (`text:number`) or a typed one kept apart from the title; paragraphs,
lists (`- ` lines) and tables (a row a line) as text; `text:a` links and bookmarks as anchors of
the heading they start in or just before, else of the section holding them, and reference marks
likewise (see `blocks`). ODF writes a link to another file relative to the package itself, one
folder down (`../manual.odt` for a file beside it), so LibreOffice's first `../` is taken off;
pandoc writes links as the author wrote them, relative to the file, and its files say so in
`meta:generator`."""

from __future__ import annotations

import re

from lxml import etree

from worker.documents.model import ParsedFile
from worker.documents.parsers.blocks import BlockWriter
from worker.documents.parsers.office.package import OfficeError, Package
from worker.documents.parsers.office.properties import declare, describe_odf
from worker.documents.parsers.office.xml import attribute, local, parent_name

CONTENT = "content.xml"
META = "meta.xml"
MANIFEST = "META-INF/manifest.xml"
_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.\-]+:")
MARKS = frozenset({"bookmark", "bookmark-start", "reference-mark", "reference-mark-start"})  # a named place a link may target
FILE_RELATIVE_GENERATORS = ("pandoc",)  # writers whose relative links start from the file's folder, not the package
SKIPPED = frozenset({"note-citation", "annotation", "annotation-end", "tracked-changes", "deletion", "sequence-decls", "forms"})
CONTAINERS = frozenset({"section", "index-body", "table-of-content", "alphabetical-index", "illustration-index", "table-index", "user-index", "bibliography"})


def parse(package: Package, id_fields: tuple[str, ...], id_patterns: tuple[re.Pattern[str], ...]) -> ParsedFile:
    if package.has(MANIFEST) and any(local(element.tag) == "encryption-data" for element in package.xml(MANIFEST).iter(etree.Element)):
        raise OfficeError("encrypted: needs a password to open")
    meta = package.xml(META) if package.has(META) else None
    reader = _Reader(file_relative=_generator(meta).lower().startswith(FILE_RELATIVE_GENERATORS))
    body = next((element for element in package.xml(CONTENT).iter(etree.Element) if local(element.tag) == "text" and parent_name(element) == "body"), None)
    if body is not None:
        reader.container(body)
    declare(reader.writer, describe_odf(meta, id_fields), id_patterns)
    return reader.writer.parsed


def _generator(meta: etree._Element | None) -> str:
    found = next((element for element in meta.iter(etree.Element) if local(element.tag) == "generator"), None) if meta is not None else None
    return (found.text or "").strip() if found is not None else ""


def package_relative(href: str) -> str:
    """A link as a path from the document's folder: ODF resolves relative links from inside the package."""
    if href.startswith("../") and not _SCHEME.match(href):
        return href[3:]
    return href


class _Reader:
    def __init__(self, file_relative: bool) -> None:
        self.writer = BlockWriter("odt")
        self.file_relative = file_relative

    def container(self, element: etree._Element, bullet: str = "") -> None:
        for child in element:
            name = local(child.tag)
            if name == "h":
                self.heading(child)
            elif name == "p":
                self.text(bullet, child)
            elif name == "list":
                for item in child:
                    if local(item.tag) in ("list-item", "list-header"):
                        self.container(item, "- ")
            elif name == "table":
                self.table(child)
            elif name in CONTAINERS or name in ("table-row-group", "table-rows", "table-header-rows"):
                self.container(child, bullet)
            elif name in MARKS:  # between paragraphs: it marks what follows
                self.writer.mark(attribute(child, "name"))

    def heading(self, element: etree._Element) -> None:
        parts: list[str] = []
        number = "".join(child.text or "" for child in element if local(child.tag) == "number").strip().rstrip(".")
        links: list[tuple[str, str]] = []
        bookmarks: list[str] = []
        self.inline(element, parts, links, bookmarks)
        title = " ".join("".join(parts).split())
        if not title:
            return
        self.writer.heading(title, _count(attribute(element, "outline-level")), number if re.fullmatch(r"\d+(?:\.\d+)*", number) else "")
        for name in bookmarks:  # the heading's own block is the one in force now
            self.writer.bookmark(name)
        for href, text in links:
            self.writer.link(href, text)

    def text(self, bullet: str, element: etree._Element) -> None:
        parts: list[str] = []
        links: list[tuple[str, str]] = []
        bookmarks: list[str] = []
        self.inline(element, parts, links, bookmarks)
        line = "".join(parts).strip()
        for name in bookmarks:  # in body text: the section holding it; in an empty paragraph: what follows
            (self.writer.bookmark if line else self.writer.mark)(name)
        for href, text in links:
            self.writer.link(href, text)
        if line:
            self.writer.text(f"{bullet}{line}")

    def table(self, table: etree._Element) -> None:
        for row in table.iter(etree.Element):
            if local(row.tag) != "table-row":
                continue
            cells = []
            for cell in row:
                if local(cell.tag) != "table-cell":
                    continue
                parts: list[str] = []
                links: list[tuple[str, str]] = []
                bookmarks: list[str] = []
                for paragraph in cell:
                    if local(paragraph.tag) in ("p", "h", "list"):
                        self.inline(paragraph, parts, links, bookmarks)
                        parts.append(" ")
                cells.append(" ".join("".join(parts).split()))
                for name in bookmarks:
                    self.writer.bookmark(name)
                for href, text in links:
                    self.writer.link(href, text)
            if any(cells):
                self.writer.text(" | ".join(cells))

    def inline(self, element: etree._Element, parts: list[str], links: list[tuple[str, str]], bookmarks: list[str]) -> None:
        if element.text:
            parts.append(element.text)
        for child in element:
            name = local(child.tag)
            if name == "s":
                parts.append(" " * _count(attribute(child, "c")))
            elif name == "tab":
                parts.append("\t")
            elif name == "line-break":
                parts.append(" ")
            elif name in MARKS:
                bookmarks.append(attribute(child, "name"))
            elif name == "number":
                pass  # a heading's rendered number, kept apart by `heading`
            elif name == "a":
                inner: list[str] = []
                self.inline(child, inner, links, bookmarks)
                parts.extend(inner)
                href = attribute(child, "href") if self.file_relative else package_relative(attribute(child, "href"))
                if href:
                    links.append((href, "".join(inner)))
            elif name in ("frame", "text-box"):
                for paragraph in child.iter(etree.Element):
                    if local(paragraph.tag) in ("p", "h"):
                        parts.append(" ")
                        self.inline(paragraph, parts, links, bookmarks)
            elif name == "note":
                pass  # a footnote's body belongs to the note, not the running text
            elif name not in SKIPPED:
                self.inline(child, parts, links, bookmarks)
            if child.tail:
                parts.append(child.tail)


def _count(value: str) -> int:
    """A positive count attribute (`text:c`, `text:outline-level`), 1 when absent or odd."""
    return max(1, int(value)) if value.isdigit() else 1
