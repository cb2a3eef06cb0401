"""Turning link rows into LINKS_TO edges or UnresolvedLink records, against the graph's current state.

Every link is a `LinkRow`; the same row can be resolved again whenever its target may have
changed (a document arrived, moved, lost a section), which is how "a link whose target appears
later" resolves: its UnresolvedLink is read back as a row and resolved anew.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass

from neo4j import ManagedTransaction

from worker.documents.slugs import heading_slug
from worker.graph.schema import Label, Rel


@dataclass(frozen=True)
class LinkRow:
    source: str  # uri of the Document or Section the link is written in
    ordinal: int  # position among the source's links
    href: str
    text: str
    kind: str  # how it was written: inline, reference, autolink, html, pdf
    target_kind: str  # anchor, path, id or invalid (see links.LinkTarget)
    key: str
    anchor: str
    reason: str = ""

    def as_dict(self) -> dict[str, object]:
        return dict(self.__dict__)

    @property
    def source_document(self) -> str:
        return self.source.split("#", 1)[0]


def _label(uri: str) -> Label:
    return Label.SECTION if "#" in uri else Label.DOCUMENT


ROW_FIELDS = "ordinal: r.ordinal, href: r.href, text: r.text, kind: r.kind, target_kind: r.target_kind, key: r.key, anchor: r.anchor"

CREATE_LINKS = {
    (source, target): f"""
    UNWIND $rows AS r
    MATCH (s:{source} {{uri: r.source}})
    MATCH (t:{target} {{uri: r.target}})
    CREATE (s)-[:{Rel.LINKS_TO} {{{ROW_FIELDS}, anchor_found: r.anchor_found, anchor_note: r.anchor_note}}]->(t)
    """
    for source in (Label.DOCUMENT, Label.SECTION)
    for target in (Label.DOCUMENT, Label.SECTION)
}
CREATE_UNRESOLVED = {
    source: f"""
    UNWIND $rows AS r
    MATCH (s:{source} {{uri: r.source}})
    CREATE (s)-[:{Rel.HAS_UNRESOLVED}]->(:{Label.UNRESOLVED_LINK} {{
        id: r.source + ' ' + toString(r.ordinal), source: r.source, {ROW_FIELDS},
        reason: r.reason, since: datetime()}})
    """
    for source in (Label.DOCUMENT, Label.SECTION)
}
DOCUMENTS_BY_PATH_KEY = f"""
UNWIND $keys AS key
MATCH (d:{Label.DOCUMENT} {{path_key: key}})
RETURN key, d.uri AS uri, d.anchors AS anchors
"""
# A declared id wins over a file name: doc://tsb-20-501 goes to the document that says it is
# TSB-20-501 before one that is merely named tsb-20-501.pdf.
DOCUMENTS_BY_DECLARED_ID = f"""
UNWIND $keys AS key
MATCH (d:{Label.DOCUMENT} {{doc_key: key}})
RETURN key, d.uri AS uri, d.anchors AS anchors
"""
DOCUMENTS_BY_FILE_NAME = f"""
UNWIND $keys AS key
MATCH (d:{Label.DOCUMENT} {{stem_key: key}})
RETURN key, d.uri AS uri, d.anchors AS anchors
"""
# A fragment names a section by one of its anchors (its heading's slug, an explicit id, its
# number, a PDF page it starts) or by its heading path, as section URIs spell it (#cause/coil-failure).
SECTIONS_BY_ANCHOR = f"""
UNWIND $wanted AS wanted
MATCH (s:{Label.SECTION} {{doc_uri: wanted[0]}})
WHERE wanted[1] IN s.anchors OR s.uri = wanted[0] + '#' + wanted[1]
RETURN wanted[0] AS document, wanted[1] AS anchor, s.uri AS uri, s.sort_pos AS position
"""
# The sections of documents where a fragment named none exactly: matched again ignoring punctuation.
SECTIONS_OF = f"""
UNWIND $documents AS document
MATCH (s:{Label.SECTION} {{doc_uri: document}})
RETURN document, s.uri AS uri, s.anchors AS anchors, s.sort_pos AS position, s.displayName AS title
"""
# Authors write a heading's slug by hand: `a-c-compressor` for "A/C Compressor" (slugged
# `ac-compressor`), `ecm-pcm` for "ECM/PCM" (`ecmpcm`). Compared without punctuation, they meet.
_PUNCTUATION = re.compile(r"[\W_]+", re.UNICODE)


@dataclass(frozen=True)
class Resolution:
    linked: int
    unresolved: int
    duplicate_ids: dict[str, list[str]]  # document id -> every document declaring it


def resolve(tx: ManagedTransaction, rows: list[LinkRow]) -> Resolution:
    """Create each row's LINKS_TO edge, or its UnresolvedLink with the reason. Rows must be fresh:
    their previous edge or record deleted by the caller."""
    if not rows:
        return Resolution(0, 0, {})
    by_path = _documents(tx, DOCUMENTS_BY_PATH_KEY, {row.key for row in rows if row.target_kind == "path"})
    id_keys = {row.key for row in rows if row.target_kind == "id"}
    by_id = _documents(tx, DOCUMENTS_BY_DECLARED_ID, id_keys)
    duplicates = {key: [doc["uri"] for doc in docs] for key, docs in by_id.items() if len(docs) > 1}
    by_id.update(_documents(tx, DOCUMENTS_BY_FILE_NAME, id_keys - set(by_id)))
    target_documents: dict[LinkRow, dict | None] = {}
    for row in rows:
        if row.target_kind == "path":
            target_documents[row] = by_path.get(row.key, [None])[0]
        elif row.target_kind == "id":
            target_documents[row] = by_id.get(row.key, [None])[0]
        elif row.target_kind == "anchor":
            target_documents[row] = {"uri": row.source_document, "anchors": None}
        else:
            target_documents[row] = None
    wanted = {(doc["uri"], row.anchor) for row, doc in target_documents.items() if doc is not None and row.anchor}
    sections, notes = _sections(tx, wanted)
    links: dict[tuple[Label, Label], list[dict]] = defaultdict(list)
    unresolved: dict[Label, list[dict]] = defaultdict(list)
    for row, doc in target_documents.items():
        target, found, reason = _target(row, doc, sections)
        note = notes.get((doc["uri"], row.anchor)) if doc is not None and row.anchor else None  # how a fallback landed, or why none did
        if target is None:
            unresolved[_label(row.source)].append({**row.as_dict(), "reason": note or reason})
        else:
            links[(_label(row.source), _label(target))].append({**row.as_dict(), "target": target, "anchor_found": found, "anchor_note": note})
    for pair, batch in links.items():
        tx.run(CREATE_LINKS[pair], rows=batch).consume()
    for label, batch in unresolved.items():
        tx.run(CREATE_UNRESOLVED[label], rows=batch).consume()
    return Resolution(
        linked=sum(map(len, links.values())),
        unresolved=sum(map(len, unresolved.values())),
        duplicate_ids=duplicates,
    )


def _target(row: LinkRow, doc: dict | None, sections: dict[str, dict[str, str]]) -> tuple[str | None, bool, str]:
    """(target uri or None, whether the anchor was found, the reason when unresolved)."""
    if row.target_kind == "invalid":
        return None, False, row.reason
    if doc is None:
        written_id = row.href.split(":", 1)[-1].lstrip("/").split("#", 1)[0]
        what = f"no document at {row.key}" if row.target_kind == "path" else f"no document with id {written_id!r}"
        return None, False, what
    if not row.anchor:
        return doc["uri"], True, ""
    section = sections.get(doc["uri"], {}).get(row.anchor)
    if section is not None:
        return section, True, ""
    if row.target_kind == "anchor":
        return None, False, f"no heading or id #{row.anchor} in this document"
    if doc.get("anchors") and row.anchor in doc["anchors"]:
        return doc["uri"], True, ""
    return doc["uri"], False, ""  # ends at the document; the missing anchor is flagged on the edge


def _documents(tx: ManagedTransaction, query: str, keys: set[str]) -> dict[str, list[dict]]:
    if not keys:
        return {}
    found: dict[str, list[dict]] = defaultdict(list)
    for record in tx.run(query, keys=sorted(keys)):
        found[record["key"]].append({"uri": record["uri"], "anchors": record["anchors"]})
    for docs in found.values():
        docs.sort(key=lambda doc: doc["uri"])  # a duplicated id resolves to the lowest URI
    return found


def loose(fragment: str) -> str:
    """A fragment without its punctuation, case folded."""
    return _PUNCTUATION.sub("", fragment).casefold()


def _sections(tx: ManagedTransaction, wanted: set[tuple[str, str]]) -> tuple[dict[str, dict[str, str]], dict[tuple[str, str], str]]:
    """document uri -> anchor -> section uri, for the wanted anchors, and a note (document, anchor)
    -> what was done for each fragment that no section names exactly. An exact anchor or heading
    path wins (first in reading order); else the one section whose anchor or path is the same once
    punctuation is ignored; else, for a heading path that went stale (the section moved to another
    parent), the one section its last segment names. Where several match, the fragment lands on
    none of them and its note names them all."""
    if not wanted:
        return {}, {}
    ordered = sorted(tx.run(SECTIONS_BY_ANCHOR, wanted=sorted(map(list, wanted))), key=lambda record: record["position"])
    found: dict[str, dict[str, str]] = defaultdict(dict)
    for record in ordered:
        found[record["document"]].setdefault(record["anchor"], record["uri"])
    missing = sorted((document, anchor) for document, anchor in wanted if anchor not in found.get(document, {}) and loose(anchor))
    notes: dict[tuple[str, str], str] = {}
    if not missing:
        return found, notes
    loosely: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))  # document -> loose anchor or path -> sections
    named: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))  # document -> anchor -> sections
    for record in tx.run(SECTIONS_OF, documents=sorted({document for document, _ in missing})):
        for form in [*(record["anchors"] or []), record["uri"].split("#", 1)[1]]:
            loosely[record["document"]][loose(form)].add(record["uri"])
        for anchor in [*(record["anchors"] or []), heading_slug(record["title"] or "")]:  # "inspection" names every "Inspection"
            named[record["document"]][anchor].add(record["uri"])
    for document, anchor in missing:
        matching = loosely[document].get(loose(anchor), set())
        if len(matching) == 1:
            found[document][anchor] = next(iter(matching))
            notes[(document, anchor)] = f"punctuation ignored: #{anchor} is #{_path(found[document][anchor])}"
        elif matching:
            notes[(document, anchor)] = f"#{anchor} matches {len(matching)} sections once punctuation is ignored: {', '.join(sorted(matching))}"
        elif "/" in anchor.strip("/"):
            last = anchor.strip("/").rsplit("/", 1)[1]
            moved = named[document].get(last) or loosely[document].get(loose(last), set())
            if len(moved) == 1:
                found[document][anchor] = next(iter(moved))
                notes[(document, anchor)] = f"path moved: #{anchor} is now #{_path(found[document][anchor])}"
            elif moved:
                notes[(document, anchor)] = f"path moved: #{anchor} names no section, and #{last} names {len(moved)}: {', '.join(sorted(moved))}"
    return found, notes


def _path(section_uri: str) -> str:
    return section_uri.split("#", 1)[1]
