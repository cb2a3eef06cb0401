"""Real Word documents written as OOXML packages (the parts Word itself writes for a plain
document: styles with outline levels, core and custom properties, hyperlinks as external
relationships with `w:anchor` bookmarks, bookmarks around headings): the demo library's DOCX
and the round-trip tests'. python-docx opens them (a test checks)."""

from __future__ import annotations

import io
import posixpath
import re
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from xml.sax.saxutils import escape, quoteattr

W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
R = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
PACKAGE_RELS = "http://schemas.openxmlformats.org/package/2006/relationships"
HYPERLINK = f"{R}/hyperlink"
_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.\-]+:")


@dataclass(frozen=True)
class Run:
    text: str
    href: str = ""  # a hyperlink: a URL, doc://ID#anchor, a relative path with #bookmark, or #bookmark


@dataclass(frozen=True)
class Paragraph:
    runs: Sequence[Run]
    heading: int = 0  # 1-6 for "heading N", 0 for body text
    bookmark: str = ""  # a bookmark around the paragraph (links find the heading by it)
    title: bool = False  # the "Title" style: the document's title, not a section


@dataclass
class _Relationships:
    rows: list[tuple[str, str, str]] = field(default_factory=list)  # id, type, target

    def add(self, kind: str, target: str, external: bool = False) -> str:
        rel_id = f"rId{len(self.rows) + 1}"
        mode = ' TargetMode="External"' if external else ""
        self.rows.append((rel_id, kind, f"{quoteattr(target)}{mode}"))
        return rel_id

    def xml(self) -> str:
        rows = "".join(f'<Relationship Id="{rel_id}" Type="{kind}" Target={target}/>' for rel_id, kind, target in self.rows)
        return f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<Relationships xmlns="{PACKAGE_RELS}">{rows}</Relationships>'


def make_docx(paragraphs: Sequence[Paragraph], title: str = "", properties: dict[str, str] | None = None, identifier: str = "") -> bytes:
    """A .docx of these paragraphs; `title` and `identifier` go to the core properties,
    `properties` to the custom ones (text values)."""
    rels = _Relationships()
    rels.add(f"{R}/styles", "styles.xml")
    body = "".join(_paragraph(paragraph, index, rels) for index, paragraph in enumerate(paragraphs))
    document = (
        f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<w:document xmlns:w="{W}" xmlns:r="{R}"><w:body>{body}<w:sectPr/></w:body></w:document>'
    )
    package = _Relationships()
    package.add(f"{R}/officeDocument", "word/document.xml")
    package.add(f"{PACKAGE_RELS}/metadata/core-properties", "docProps/core.xml")
    parts = {
        "[Content_Types].xml": _content_types(bool(properties)),
        "_rels/.rels": "",
        "word/document.xml": document,
        "word/_rels/document.xml.rels": rels.xml(),
        "word/styles.xml": _styles(),
        "docProps/core.xml": _core(title, identifier),
    }
    if properties:
        package.add(f"{R}/custom-properties", "docProps/custom.xml")
        parts["docProps/custom.xml"] = _custom(properties)
    parts["_rels/.rels"] = package.xml()
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, text in parts.items():  # a fixed timestamp: the same paragraphs give the same bytes
            archive.writestr(zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0)), text, compress_type=zipfile.ZIP_DEFLATED)
    return buffer.getvalue()


def _paragraph(paragraph: Paragraph, index: int, rels: _Relationships) -> str:
    style = "Title" if paragraph.title else f"Heading{paragraph.heading}" if paragraph.heading else ""
    properties = f'<w:pPr><w:pStyle w:val="{style}"/></w:pPr>' if style else ""
    runs = "".join(_run(run, rels) for run in paragraph.runs)
    if paragraph.bookmark:
        runs = f'<w:bookmarkStart w:id="{index}" w:name={quoteattr(paragraph.bookmark)}/>{runs}<w:bookmarkEnd w:id="{index}"/>'
    return f"<w:p>{properties}{runs}</w:p>"


def _run(run: Run, rels: _Relationships) -> str:
    text = f'<w:r><w:t xml:space="preserve">{escape(run.text)}</w:t></w:r>'
    if not run.href:
        return text
    if run.href.startswith("#"):
        return f"<w:hyperlink w:anchor={quoteattr(run.href[1:])}>{text}</w:hyperlink>"
    if _SCHEME.match(run.href):  # a URL keeps its fragment in the target, as Word stores it
        return f'<w:hyperlink r:id="{rels.add(HYPERLINK, run.href, external=True)}">{text}</w:hyperlink>'
    path, _, anchor = run.href.partition("#")
    anchored = f" w:anchor={quoteattr(anchor)}" if anchor else ""
    return f'<w:hyperlink r:id="{rels.add(HYPERLINK, posixpath.normpath(path), external=True)}"{anchored}>{text}</w:hyperlink>'


def _styles() -> str:
    headings = "".join(
        f'<w:style w:type="paragraph" w:styleId="Heading{level}"><w:name w:val="heading {level}"/><w:basedOn w:val="Normal"/>'
        f'<w:next w:val="Normal"/><w:qFormat/><w:pPr><w:keepNext/><w:outlineLvl w:val="{level - 1}"/></w:pPr>'
        f'<w:rPr><w:b/><w:sz w:val="{34 - 2 * level}"/></w:rPr></w:style>'
        for level in range(1, 7)
    )
    return (
        f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<w:styles xmlns:w="{W}">'
        '<w:style w:type="paragraph" w:default="1" w:styleId="Normal"><w:name w:val="Normal"/><w:qFormat/></w:style>'
        '<w:style w:type="paragraph" w:styleId="Title"><w:name w:val="Title"/><w:basedOn w:val="Normal"/><w:qFormat/>'
        '<w:rPr><w:sz w:val="56"/></w:rPr></w:style>'
        f"{headings}</w:styles>"
    )


def _core(title: str, identifier: str) -> str:
    return (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
        '<cp:coreProperties xmlns:cp="http://schemas.openxmlformats.org/package/2006/metadata/core-properties" '
        'xmlns:dc="http://purl.org/dc/elements/1.1/" xmlns:dcterms="http://purl.org/dc/terms/" '
        'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">'
        f"<dc:title>{escape(title)}</dc:title>" + (f"<dc:identifier>{escape(identifier)}</dc:identifier>" if identifier else "") + "</cp:coreProperties>"
    )


def _custom(properties: dict[str, str]) -> str:
    rows = "".join(
        f'<property fmtid="{{D5CDD505-2E9C-101B-9397-08002B2CF9AE}}" pid="{pid}" name={quoteattr(name)}><vt:lpwstr>{escape(value)}</vt:lpwstr></property>'
        for pid, (name, value) in enumerate(properties.items(), start=2)
    )
    return (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
        '<Properties xmlns="http://schemas.openxmlformats.org/officeDocument/2006/custom-properties" '
        f'xmlns:vt="http://schemas.openxmlformats.org/officeDocument/2006/docPropsVTypes">{rows}</Properties>'
    )


def _content_types(custom: bool) -> str:
    overrides = {
        "/word/document.xml": "application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml",
        "/word/styles.xml": "application/vnd.openxmlformats-officedocument.wordprocessingml.styles+xml",
        "/docProps/core.xml": "application/vnd.openxmlformats-package.core-properties+xml",
    }
    if custom:
        overrides["/docProps/custom.xml"] = "application/vnd.openxmlformats-officedocument.custom-properties+xml"
    rows = "".join(f'<Override PartName="{name}" ContentType="{kind}"/>' for name, kind in overrides.items())
    return (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
        '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
        f'<Default Extension="xml" ContentType="application/xml"/>{rows}</Types>'
    )
