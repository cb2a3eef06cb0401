"""A document record turned into the rows the writer stores: pure and picklable, so the load's parse
workers do it beside the parse, and the writer's transactions only write."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from worker.documents import links as link_targets
from worker.documents import uris
from worker.documents.resolver import LinkRow
from worker.documents.source import DocumentRecord
from worker.graph.content import content_hash


def outbound_rows(record: DocumentRecord, id_schemes: tuple[str, ...]) -> tuple[dict[str, list[LinkRow]], dict[str, list[str]]]:
    """Per source uri (the document, then each section): its link rows and its external URLs."""
    rows: dict[str, list[LinkRow]] = {}
    external: dict[str, list[str]] = {}
    sources = [(record.uri, record.links)] + [(uris.section_uri(record.uri, section.path), section.links) for section in record.sections]
    for source, raw_links in sources:
        rows[source], external[source] = [], []
        for ordinal, raw in enumerate(raw_links):
            found = link_targets.target(raw.href, record.library, record.relpath, id_schemes)
            if found.kind == "external":
                external[source].append(found.key)
                continue
            key = record.uri if found.kind == "anchor" else found.key
            rows[source].append(LinkRow(source, ordinal, raw.href, raw.text, raw.kind, found.kind, key, found.anchor, found.reason))
    return rows, external


@dataclass(frozen=True)
class PreparedSection:
    uri: str
    parent: str  # the parent section's uri, or the document's
    parent_index: int  # the parent's position among the sections; -1 for the document
    props: dict  # every stored property, content_hash included
    links: list[LinkRow]


@dataclass(frozen=True)
class PreparedDocument:
    """A document record turned into graph rows (pure and picklable, so parse workers can do it)."""

    uri: str
    library: str
    relpath: str
    path_key: str
    id_keys: tuple[str, ...]  # the keys id links find it by: its declared id's, then its file name's
    file_hash: str
    file_stamp: str | None  # size and modification time when read (source.stamp)
    problems: tuple[str, ...]
    parent: str  # folder or library uri
    props: dict
    own_hash: str  # the document node's own content (not its sections)
    links: list[LinkRow]
    sections: list[PreparedSection]


def prepare(record: DocumentRecord, id_schemes: tuple[str, ...], source_path: str) -> PreparedDocument:
    links, external = outbound_rows(record, id_schemes)
    own: dict[str, Any] = {
        "name": record.name,
        "displayName": record.display_name,
        "doc_id": record.doc_id,
        "doc_key": uris.id_key(record.doc_id) if record.doc_id else None,
        "stem_key": uris.stem_key(record.relpath),
        "format": record.format,
        "path_key": record.path_key,
        "library": record.library,
        "relpath": record.relpath,
        "text": record.text,
        "anchors": list(record.anchors),
        "external_links": external[record.uri],
        "problems": list(record.problems),
        "sort_pos": 0,
    }
    positions = {section.path: section.position for section in record.sections}
    sections = []
    for section in record.sections:
        uri = uris.section_uri(record.uri, section.path)
        parent = uris.section_uri(record.uri, section.parent) if section.parent else record.uri
        props = {
            "uri": uri,
            "name": section.anchor,
            "displayName": section.title or section.anchor,
            "level": section.level,
            "sort_pos": section.position,
            "text": section.text,
            "anchors": list(section.anchors),
            "doc_uri": record.uri,
            "external_links": external[uri],
            "number": section.number or None,
        }
        # what the section says, not where its file lives: a folder and a bucket give one hash
        props["content_hash"] = content_hash([props, parent, [_row_values(row) for row in links[uri]]])
        props["source_path"] = source_path
        parent_index = positions[section.parent] if section.parent else -1
        sections.append(PreparedSection(uri, parent, parent_index, props, links[uri]))
    return PreparedDocument(
        uri=record.uri,
        library=record.library,
        relpath=record.relpath,
        path_key=record.path_key,
        id_keys=tuple(key for key in (own["doc_key"], own["stem_key"]) if key),
        file_hash=record.content_hash,
        file_stamp=record.stamp,
        problems=record.problems,
        parent=uris.folder_uri(record.library, _folder(record.relpath)),
        props=own,
        own_hash=content_hash([own, [_row_values(row) for row in links[record.uri]]]),
        links=links[record.uri],
        sections=sections,
    )


def _row_values(row: LinkRow) -> list[object]:
    return [row.ordinal, row.href, row.text, row.kind, row.target_kind, row.key, row.anchor, row.reason]


def _folder(relpath: str) -> str:
    return relpath.rsplit("/", 1)[0] if "/" in relpath else ""
