"""Reading one file into a document record: bytes checked, decoded, parsed, outlined, hashed.

Bad input never raises past here except as `Skipped` (the file cannot be a document: too large,
binary, unreadable, an unreadable PDF, any parser failure, a parse past its time limit); lesser problems (bad UTF-8, malformed front matter) are
kept on the record and the document still loads.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace
from pathlib import PurePosixPath

from worker.documents import uris
from worker.documents.formats import FORMATS, NAMELESS_FIRST_SECTION, TEXT_FORMATS
from worker.documents.library import Library, Skipped
from worker.documents.model import ParsedFile, RawLink
from worker.documents.outline import SectionNode, sections
from worker.documents.parsers import asciidoc, html, markdown, pdf
from worker.documents.rules import DocumentRules
from worker.documents.time_limit import ParseTimeout, time_limit

BINARY_PROBE = 8192
TEXT_PARSERS = {"markdown": markdown.parse, "html": html.parse, "asciidoc": asciidoc.parse}


@dataclass(frozen=True)
class DocumentRecord:
    """Everything the writer needs about one document, independent of the graph."""

    library: str
    relpath: str
    uri: str
    name: str
    display_name: str
    doc_id: str | None
    format: str
    content_hash: str
    path_key: str
    text: str
    links: tuple[RawLink, ...]
    anchors: tuple[str, ...]
    sections: tuple[SectionNode, ...]
    problems: tuple[str, ...] = field(default=())
    stamp: str | None = None  # the file's stamp when read (Library.stamps): unchanged, it is not read again


# Bumped when a reader gives other sections, anchors or links for the same bytes: each stored
# document is then read again once, by its next load, though its file did not change.
READERS = "2"


def file_hash(data: bytes) -> str:
    """The bytes' digest, marked with the readers that parse them."""
    return f"{hashlib.sha256(data).hexdigest()}:r{READERS}"


def read_by_these_readers(stored_hash: str) -> bool:
    return stored_hash.endswith(f":r{READERS}")


def read(library: Library, relpath: str, rules: DocumentRules) -> DocumentRecord:
    data, found = library.read_bytes(relpath, rules.max_bytes)
    return build(library.name, relpath, data, rules, stamp=found)


def build(library: str, relpath: str, data: bytes, rules: DocumentRules, stamp: str | None = None) -> DocumentRecord:
    """Parse bytes as the document at `relpath` (pure: no file system, no graph); `stamp` is the
    file's when the bytes were read, if they came from one. Whatever goes wrong on these bytes —
    any parser's exception, a parse past documents.parse_seconds — is `Skipped` with the reason,
    so one hostile file never stops the files around it."""
    fmt = FORMATS[PurePosixPath(relpath).suffix.lower()]
    try:
        with time_limit(rules.parse_seconds):
            parsed, problems = _parse(fmt, data, rules)
            record = _record(library, relpath, fmt, file_hash(data), parsed, problems, rules.id_fields)
        if len(record.sections) > rules.max_sections:
            raise Skipped(f"{len(record.sections):,} sections, over documents.max_sections ({rules.max_sections:,})", stamp)
        return replace(record, stamp=stamp)
    except ParseTimeout:
        raise Skipped(f"parsing took longer than documents.parse_seconds ({rules.parse_seconds:g} s)", stamp) from None
    except Skipped as refused:
        raise Skipped(str(refused), stamp) from None
    except Exception as err:  # a parser's failure on these bytes, whatever its library's error class
        raise Skipped(f"{fmt} parser failed: {type(err).__name__}: {err}", stamp) from None


def _parse(fmt: str, data: bytes, rules: DocumentRules) -> tuple[ParsedFile, list[str]]:
    problems: list[str] = []
    if fmt == "pdf":
        try:
            parsed = pdf.parse(data, rules.patterns)
        except pdf.PdfError as err:
            raise Skipped(str(err)) from None
    elif fmt not in TEXT_FORMATS:
        from worker.documents.parsers import office  # lxml and the Office readers: only when such a file is read

        try:
            parsed = office.parse(fmt, data, rules)
        except office.OfficeRefused as err:
            raise Skipped(str(err)) from None
    else:
        if b"\x00" in data[:BINARY_PROBE]:
            raise Skipped("binary content in a text format")
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError as err:
            text = data.decode("utf-8", errors="replace")
            problems.append(f"not valid UTF-8 (byte {err.start}); decoded with replacement characters")
        parsed = TEXT_PARSERS[fmt](text)
    problems.extend(parsed.problems)
    return parsed, problems


def _declared_id(front_matter: dict[str, object], fields: tuple[str, ...]) -> str | None:
    lowered = {str(key).lower(): value for key, value in front_matter.items()}
    for key in fields:
        value = lowered.get(key.lower())
        if isinstance(value, str | int) and str(value).strip():
            return str(value).strip()
    return None


def _record(
    library: str,
    relpath: str,
    fmt: str,
    digest: str,
    parsed: ParsedFile,
    problems: list[str],
    id_fields: tuple[str, ...],
) -> DocumentRecord:
    outline = sections(parsed)
    stem = uris.strip_extension(PurePosixPath(relpath).name)
    title = parsed.front_matter.get("title")
    display = str(title).strip() if isinstance(title, str | int | float) and str(title).strip() else None
    first = outline[0].title if outline and fmt not in NAMELESS_FIRST_SECTION else None
    display = display or first or stem
    doc_id = _declared_id(parsed.front_matter, id_fields if fmt in TEXT_FORMATS else ("id",))  # binary formats declare theirs as "id"
    uri = uris.document_uri(library, relpath)
    return DocumentRecord(
        library=library,
        relpath=relpath,
        uri=uri,
        name=uri.rsplit("/", 1)[1],
        display_name=display,
        doc_id=doc_id,
        format=fmt,
        content_hash=digest,
        path_key=uris.path_key(library, relpath),
        text=parsed.preamble.text,
        links=tuple(parsed.preamble.links),
        anchors=tuple(dict.fromkeys(value.lower() for value in parsed.preamble.ids)),
        sections=tuple(outline),
        problems=tuple(problems),
    )
