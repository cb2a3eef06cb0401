"""Make the graph match documents: one transaction per batch, only changed nodes written.

A document whose file hash is unchanged is a no-op. Otherwise its sections are compared by
content hash: new and changed ones are written, vanished ones deleted with their links,
NEXT_SECTION rebuilt, and every link whose target may have moved is resolved again — links out
of changed sections, links into deleted sections, and UnresolvedLinks waiting for this document.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from neo4j import Driver, ManagedTransaction
from neo4j.exceptions import ConstraintError, Neo4jError

from worker.bridge.mentions import MentionIndex
from worker.documents import link_version, uris
from worker.documents.prepare import PreparedDocument
from worker.documents.resolver import LinkRow, Resolution, resolve
from worker.graph.batches import chunks, rows_per_batch, transaction_limit
from worker.graph.content import content_hash
from worker.graph.engine_errors import MEMORY_LIMITS, explain
from worker.graph.locks import LIBRARY_NAMES, lock_libraries
from worker.graph.schema import Label, Rel
from worker.graph.stamps import stamp
from worker.shared.changes import Announce, Change


@dataclass
class WriteReport:
    written: list[str] = field(default_factory=list)  # documents whose nodes changed
    unchanged: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    linked: int = 0
    unresolved: int = 0
    duplicate_ids: dict[str, list[str]] = field(default_factory=dict)
    deferred_links: list[LinkRow] = field(default_factory=list)

    def absorb(self, resolution: Resolution | WriteReport) -> None:
        self.linked += resolution.linked
        self.unresolved += resolution.unresolved
        self.duplicate_ids.update(resolution.duplicate_ids)


class TooLarge(Exception):
    """A write that needs more transaction memory than the server allows, saying the server's words
    and what to change. The driver would retry it for 30 s in vain, so a write running out stops at
    once; one running out at its commit is past the driver's retries when it is raised."""

    def refusal(self, document: PreparedDocument, stored: bool) -> str:
        """Why `document` alone was not written, as its problem records it."""
        kept = "; the graph keeps its stored version" if stored else ""
        return f"its {len(document.sections):,} sections do not fit one write{kept}: {self}"


@contextmanager
def _refused_past_memory() -> Iterator[None]:
    """The server's out-of-memory error as `TooLarge`; any other error as it is."""
    try:
        yield
    except Neo4jError as err:
        if err.code in MEMORY_LIMITS:
            raise TooLarge(explain(err)) from err
        raise


def _within_memory(work: Callable[..., WriteReport]) -> Callable[..., WriteReport]:
    """`work` as a transaction function that stops the driver's retries when memory runs out."""

    def guarded(tx: ManagedTransaction, *args: Any) -> WriteReport:
        with _refused_past_memory():
            return work(tx, *args)

    return guarded


RESIGN_BATCH, SIGNATURE_BYTES = 2000, 8_192  # documents re-signed per transaction, at most (see `limit`)
# Documents deleted per transaction, each with its sections, links and mentions: a library, a moved
# folder or a reconcile's leftovers go in as many transactions as it takes, never in one that
# grows with them (a batch already gone is simply not found again when the work is repeated).
DELETE_BATCH = 100

STORED_HASHES = f"""
UNWIND $uris AS uri
MATCH (d:{Label.DOCUMENT} {{uri: uri}})
OPTIONAL MATCH (s:{Label.SECTION} {{doc_uri: uri}})
RETURN uri, d.content_hash AS file_hash, d.file_stamp AS file_stamp, d.own_hash AS own_hash,
       collect([s.uri, s.content_hash]) AS sections
"""
RESTAMP = f"UNWIND $rows AS r MATCH (d:{Label.DOCUMENT} {{uri: r.uri}}) SET d.file_stamp = r.stamp"


def _under_container(node: str) -> str:
    """Cypher that hangs `node` under row r's parent, a Library or a Folder."""
    return f"""
WITH {node}, r
OPTIONAL MATCH (pl:{Label.LIBRARY} {{uri: r.parent}})
OPTIONAL MATCH (pf:{Label.FOLDER} {{uri: r.parent}})
WITH {node}, coalesce(pf, pl) AS parent
MERGE (parent)-[:{Rel.HAS}]->({node})
"""


MERGE_LIBRARY = f"""
UNWIND $rows AS r
MERGE (l:{Label.LIBRARY} {{uri: r.uri}})
ON CREATE SET l.name = r.uri, l.displayName = r.uri, l.sort_pos = 0, l.content_hash = r.hash,
              l.updated_at = datetime()
SET l.source_path = r.source_path
"""
MERGE_FOLDERS = f"""
UNWIND $rows AS r
MERGE (f:{Label.FOLDER} {{uri: r.uri}})
ON CREATE SET f.name = r.name, f.displayName = r.name, f.sort_pos = 0, f.source_path = r.source_path,
              f.content_hash = r.hash, f.updated_at = datetime()
""" + _under_container("f")
UPSERT_DOCUMENTS = f"""
UNWIND $rows AS r
MERGE (d:{Label.DOCUMENT} {{uri: r.uri}})
SET d.content_hash = r.file_hash, d.file_stamp = r.file_stamp, d.source_path = r.source_path
WITH d, r
CALL (d, r) {{
  WITH d, r WHERE d.own_hash IS NULL OR d.own_hash <> r.own_hash
  SET d += r.props, d.own_hash = r.own_hash, d.updated_at = datetime()
}}
""" + _under_container("d")
UPSERT_SECTIONS = f"""
UNWIND $rows AS r
MERGE (s:{Label.SECTION} {{uri: r.uri}})
SET s += r.props, s.updated_at = datetime()
WITH s
OPTIONAL MATCH (s)<-[old:{Rel.HAS}]-()
DELETE old
"""
# A new document's sections are created without a lookup (its tree is linked below by uri, as an
# edit's is): rows stay small, where carrying the tree as one list per row made Neo4j account for
# the whole list on every row (a 60,000-section file took more than the 1 GiB limit).
CREATE_SECTIONS = f"""
UNWIND $rows AS props
CREATE (s:{Label.SECTION})
SET s = props, s.updated_at = datetime()
"""
LINK_PARENTS = {
    parent: f"""
    UNWIND $rows AS r
    MATCH (p:{parent} {{uri: r.parent}})
    MATCH (s:{Label.SECTION} {{uri: r.uri}})
    MERGE (p)-[:{Rel.HAS}]->(s)
    """
    for parent in (Label.DOCUMENT, Label.SECTION)
}
DELETE_SECTIONS = f"""
UNWIND $uris AS uri
MATCH (s:{Label.SECTION} {{uri: uri}})
OPTIONAL MATCH (s)-[:{Rel.HAS_UNRESOLVED}]->(u:{Label.UNRESOLVED_LINK})
DETACH DELETE s, u
"""
DROP_READING_ORDER = f"""
UNWIND $documents AS document
MATCH (:{Label.SECTION} {{doc_uri: document}})-[r:{Rel.NEXT_SECTION}]->()
DELETE r
"""
LINK_READING_ORDER = f"""
UNWIND $pairs AS pair
MATCH (a:{Label.SECTION} {{uri: pair[0]}})
MATCH (b:{Label.SECTION} {{uri: pair[1]}})
CREATE (a)-[:{Rel.NEXT_SECTION}]->(b)
"""
DROP_OUTBOUND = {
    source: f"""
    UNWIND $uris AS uri
    MATCH (s:{source} {{uri: uri}})
    CALL (s) {{ MATCH (s)-[l:{Rel.LINKS_TO}]->() DELETE l }}
    CALL (s) {{ MATCH (s)-[:{Rel.HAS_UNRESOLVED}]->(u:{Label.UNRESOLVED_LINK}) DETACH DELETE u }}
    """
    for source in (Label.DOCUMENT, Label.SECTION)
}
LINK_ROW = "{source: src.uri, ordinal: l.ordinal, href: l.href, text: l.text, kind: l.kind, target_kind: l.target_kind, key: l.key, anchor: l.anchor}"
TAKE_LINKS_INTO_SECTIONS = f"""
UNWIND $uris AS uri
MATCH (src)-[l:{Rel.LINKS_TO}]->(:{Label.SECTION} {{uri: uri}})
WITH src, l, {LINK_ROW} AS row
DELETE l
RETURN row
"""
LINKS_INTO_DOCUMENT = f"""
  MATCH (src)-[l:{Rel.LINKS_TO}]->(:{Label.DOCUMENT} {{uri: uri}}) RETURN src, l
  UNION
  MATCH (src)-[l:{Rel.LINKS_TO}]->(:{Label.SECTION} {{doc_uri: uri}}) RETURN src, l
"""
TAKE_RECHECKABLE_LINKS_INTO_DOCUMENTS = f"""
UNWIND $rows AS r
WITH r, r.uri AS uri
CALL (uri) {{ {LINKS_INTO_DOCUMENT} }}
WITH r, src, l
WHERE l.anchor_found = false OR l.anchor_note IS NOT NULL OR (l.target_kind = 'id' AND NOT l.key IN [r.doc_key, r.stem_key])
WITH src, l, {LINK_ROW} AS row
DELETE l
RETURN row
"""
TAKE_ALL_LINKS_INTO_DOCUMENTS = f"""
UNWIND $uris AS uri
CALL (uri) {{ {LINKS_INTO_DOCUMENT} }}
WITH src, l, {LINK_ROW} AS row
DELETE l
RETURN row
"""
TAKE_WAITING = f"""
UNWIND $keys AS key
MATCH (u:{Label.UNRESOLVED_LINK} {{key: key}})
WITH u, u {{.source, .ordinal, .href, .text, .kind, .target_kind, .key, .anchor}} AS row
DETACH DELETE u
RETURN row
"""
DELETE_DOCUMENTS = f"""
UNWIND $uris AS uri
MATCH (d:{Label.DOCUMENT} {{uri: uri}})
OPTIONAL MATCH (s:{Label.SECTION} {{doc_uri: uri}})
WITH d, collect(s) AS sections
CALL (d, sections) {{
  UNWIND [d] + sections AS node
  OPTIONAL MATCH (node)-[:{Rel.HAS_UNRESOLVED}]->(u:{Label.UNRESOLVED_LINK})
  DETACH DELETE u
}}
FOREACH (s IN sections | DETACH DELETE s)
DETACH DELETE d
"""
DOCUMENTS_UNDER = f"""
MATCH (d:{Label.DOCUMENT}) WHERE d.uri STARTS WITH $prefix
RETURN d.uri AS uri, d.relpath AS relpath
"""
PRUNE_FOLDERS = f"""
UNWIND $uris AS uri
MATCH (f:{Label.FOLDER} {{uri: uri}})
WHERE NOT (f)-[:{Rel.HAS}]->()
DETACH DELETE f
"""
DOCUMENTS_OF_LIBRARY = f"MATCH (d:{Label.DOCUMENT} {{library: $library}}) RETURN d.uri AS uri ORDER BY uri"
DELETE_LIBRARY = f"""
MATCH (l:{Label.LIBRARY} {{uri: $library}})
OPTIONAL MATCH (l)-[:{Rel.HAS}*]->(f:{Label.FOLDER})
DETACH DELETE f, l
"""
STORED_SOURCE = f"MATCH (d:{Label.DOCUMENT} {{uri: $uri}}) RETURN d.relpath AS relpath, d.library AS library"


class DocumentWriter:
    def __init__(self, driver: Driver, database: str, roots: dict[str, str], announce: Announce | None = None) -> None:
        """`announce` hears which documents each committed write changed (worker/shared/changes.py)."""
        self.driver = driver
        self.database = database
        self.roots = roots  # library → where it lives (Library.location), for source_path
        self.announce = announce
        self.mentions = MentionIndex()

    @cached_property
    def limit(self) -> int:
        """The server's transaction memory limit, read once: a load's batches are sized from it."""
        return transaction_limit(self.driver, self.database)

    def _session(self):
        return self.driver.session(database=self.database)

    def write(self, records: list[PreparedDocument], defer_links: bool = False) -> WriteReport:
        """Upsert documents in one transaction. With defer_links, their links are returned instead
        of resolved (a full load resolves them once every document exists). `TooLarge` when the
        server's transaction memory cannot hold them: nothing is written.

        Two workers may both find a document new and race to create its sections; the loser's
        transaction fails on the uri constraint and simply runs again, now seeing the winner's."""
        write = _within_memory(self._write)
        with self._session() as session, _refused_past_memory():  # out of memory at commit, after the driver's retries
            try:
                report = session.execute_write(write, records, defer_links)
            except ConstraintError:
                report = session.execute_write(write, records, defer_links)
        self._announce(report.written)
        return report

    def _announce(self, uris: Iterable[str]) -> None:
        keys = tuple(sorted(set(uris)))
        if keys and self.announce is not None:
            self.announce(Change("documents", keys))

    def rehearse(self, records: list[PreparedDocument]) -> None:
        """Run a write and roll it back: Neo4j plans its queries (about a second each on a cold
        server, which the first edit after a start would wait for) and the graph does not change."""
        with self._session() as session, session.begin_transaction() as tx:
            self._write(tx, records, defer_links=False)
            tx.rollback()

    def ensure_libraries(self, names: set[str]) -> None:
        """Every named library's node exists, even when a load finds nothing to write."""
        with self._session() as session:
            session.execute_write(self._lock_libraries, names)

    def restamp(self, stamps: dict[str, str]) -> None:
        """New stamps for documents whose bytes did not change (touched, copied back)."""
        rows = [{"uri": uri, "stamp": found} for uri, found in sorted(stamps.items())]
        self.driver.execute_query(RESTAMP, rows=rows, database_=self.database)

    def resolve(self, rows: list[LinkRow]) -> Resolution:
        """Resolve links deferred by `write`; `resign` the documents afterwards. The links are a
        change of the documents source, stamped with them (cached link listings follow the stamp)."""
        with self._session() as session:
            resolution = session.execute_write(_resolve_and_stamp, rows)
        self._announce(row.source_document for row in rows)
        return resolution

    def resign(self, document_uris: set[str]) -> None:
        """Re-sign documents' links after deferred resolution (see link_version), in batches."""
        with self._session() as session:
            for batch in chunks(sorted(document_uris), rows_per_batch(self.limit, SIGNATURE_BYTES, RESIGN_BATCH)):
                session.execute_write(link_version.resign, set(batch))

    def delete(self, document_uris: list[str]) -> WriteReport:
        """Delete documents, DELETE_BATCH to a transaction. Links between two of them are not
        resolved again on the way: both ends go."""
        report, dying = WriteReport(), set(document_uris)
        with self._session() as session:
            for batch in chunks(sorted(dying), DELETE_BATCH):
                done = session.execute_write(self._delete, list(batch), dying)
                report.deleted += done.deleted
                report.absorb(done)
        self._announce(report.deleted)
        return report

    def delete_under(self, folder_uri: str) -> WriteReport:
        """Delete every document below a folder (a folder deleted or moved away)."""
        report = self.delete(self.uris_under(folder_uri))
        with self._session() as session:
            session.execute_write(lambda tx: tx.run(PRUNE_FOLDERS, uris=[folder_uri]).consume())
        self._announce([folder_uri])
        return report

    def forget_library(self, name: str) -> WriteReport:
        """Remove a whole library (its documents, folders and node); links into it become unresolved."""
        with self._session() as session:
            found = [record["uri"] for record in session.run(DOCUMENTS_OF_LIBRARY, library=name)]
        report = self.delete(found)
        with self._session() as session:
            session.execute_write(lambda tx: tx.run(DELETE_LIBRARY, library=name).consume())
        self._announce([name])
        return report

    def uris_under(self, folder_uri: str) -> list[str]:
        with self._session() as session:
            return [record["uri"] for record in session.run(DOCUMENTS_UNDER, prefix=folder_uri + "/")]

    def library_names(self) -> list[str]:
        with self._session() as session:
            return [record["name"] for record in session.run(LIBRARY_NAMES)]

    def relpaths_under(self, folder_uri: str) -> list[str]:
        """The stored relpaths of every document below a folder."""
        with self._session() as session:
            return [record["relpath"] for record in session.run(DOCUMENTS_UNDER, prefix=folder_uri + "/")]

    def stored_source(self, uri: str) -> tuple[str, str] | None:
        with self._session() as session:
            record = session.run(STORED_SOURCE, uri=uri).single()
        return None if record is None or record["relpath"] is None else (record["library"], record["relpath"])

    def _write(self, tx: ManagedTransaction, documents: list[PreparedDocument], defer_links: bool) -> WriteReport:
        report = WriteReport()
        self._lock_libraries(tx, {doc.library for doc in documents})
        stored = {row["uri"]: row for row in tx.run(STORED_HASHES, uris=[doc.uri for doc in documents])}
        changed = [doc for doc in documents if doc.uri not in stored or stored[doc.uri]["file_hash"] != doc.file_hash]
        changed_uris = {doc.uri for doc in changed}
        report.unchanged = [doc.uri for doc in documents if doc.uri not in changed_uris]
        touched = [  # the same bytes under a new stamp: only the stamp moves, so the next load skips them
            {"uri": doc.uri, "stamp": doc.file_stamp} for doc in documents if doc.uri not in changed_uris and stored[doc.uri]["file_stamp"] != doc.file_stamp
        ]
        if touched:
            tx.run(RESTAMP, rows=touched).consume()
        if not changed:
            return report
        self._ensure_folders(tx, changed)

        document_rows: list[dict[str, Any]] = []
        created: list[dict[str, Any]] = []  # the props of each section of a new document
        section_rows: list[dict[str, Any]] = []
        parents: defaultdict[Label, list[dict[str, str]]] = defaultdict(list)
        pairs: list[list[str]] = []
        dirty_sources: list[str] = []
        fresh_rows: list[LinkRow] = []
        gone: list[str] = []
        for doc in changed:
            old = stored.get(doc.uri)
            document_rows.append(
                {
                    "uri": doc.uri,
                    "parent": doc.parent,
                    "file_hash": doc.file_hash,
                    "file_stamp": doc.file_stamp,
                    "source_path": f"{self.roots[doc.library]}/{doc.relpath}",
                    "own_hash": doc.own_hash,
                    "props": doc.props,
                }
            )
            if old is None or old["own_hash"] != doc.own_hash:
                dirty_sources.append(doc.uri)
                fresh_rows.extend(doc.links)
            report.written.append(doc.uri)
            if old is None:  # a new document: its sections created, not merged
                for position, section in enumerate(doc.sections):
                    created.append(section.props)
                    parents[Label.SECTION if section.parent_index >= 0 else Label.DOCUMENT].append({"uri": section.uri, "parent": section.parent})
                    fresh_rows.extend(section.links)
                    if position:
                        pairs.append([doc.sections[position - 1].uri, section.uri])
                continue
            old_sections = {uri: digest for uri, digest in old["sections"] if uri is not None}
            for position, section in enumerate(doc.sections):
                if old_sections.get(section.uri) != section.props["content_hash"]:
                    section_rows.append({"uri": section.uri, "props": section.props})
                    parents[Label.SECTION if section.parent_index >= 0 else Label.DOCUMENT].append({"uri": section.uri, "parent": section.parent})
                    dirty_sources.append(section.uri)
                    fresh_rows.extend(section.links)
                if position:
                    pairs.append([doc.sections[position - 1].uri, section.uri])
            gone.extend(sorted(set(old_sections) - {section.uri for section in doc.sections}))

        # Links into sections about to vanish must find a new target once they are gone.
        recheck = [_row(record["row"]) for record in tx.run(TAKE_LINKS_INTO_SECTIONS, uris=gone)]
        for label in (Label.DOCUMENT, Label.SECTION):
            sources = [uri for uri in dirty_sources if (("#" in uri) == (label == Label.SECTION))]
            if sources:
                tx.run(DROP_OUTBOUND[label], uris=sources).consume()
        tx.run(DELETE_SECTIONS, uris=gone).consume()
        tx.run(UPSERT_DOCUMENTS, rows=document_rows).consume()
        tx.run(CREATE_SECTIONS, rows=created).consume()
        tx.run(UPSERT_SECTIONS, rows=section_rows).consume()
        for label, rows in parents.items():
            tx.run(LINK_PARENTS[label], rows=rows).consume()
        updated = [doc.uri for doc in changed if doc.uri in stored]
        tx.run(DROP_READING_ORDER, documents=updated).consume()
        tx.run(LINK_READING_ORDER, pairs=pairs).consume()
        rewritten = {row["uri"]: row["props"] for row in [*document_rows, *section_rows]}
        rewritten.update((props["uri"], props) for props in created)
        self.mentions.rewrite(tx, list(rewritten.items()))

        dirty = set(dirty_sources)
        recheck = [row for row in recheck if row.source not in dirty]
        keys = sorted({key for doc in changed for key in (doc.path_key, *doc.id_keys, doc.uri) if key})
        recheck += [_row(record["row"]) for record in tx.run(TAKE_WAITING, keys=keys)]
        recheck += [
            _row(record["row"])
            for record in tx.run(
                TAKE_RECHECKABLE_LINKS_INTO_DOCUMENTS,
                rows=[{"uri": doc.uri, "doc_key": doc.props["doc_key"], "stem_key": doc.props["stem_key"]} for doc in changed if doc.uri in stored],
            )
        ]
        recheck = [row for row in recheck if row.source not in dirty]
        if defer_links:
            report.deferred_links = fresh_rows
            report.absorb(resolve(tx, recheck))
        else:
            report.absorb(resolve(tx, fresh_rows + recheck))
        # Deferred links are resolved by the caller, which then re-signs the written documents once.
        written = set() if defer_links else {doc.uri for doc in changed}
        link_version.resign(tx, written | {row.source_document for row in recheck})
        if report.written:
            stamp(tx, "documents")
        return report

    def _lock_libraries(self, tx: ManagedTransaction, names: set[str]) -> None:
        """Create missing library nodes and write-lock them all, in name order (no deadlock)."""
        ordered = sorted(names)
        tx.run(
            MERGE_LIBRARY, rows=[{"uri": name, "hash": content_hash(name), "source_path": self.roots[name]} for name in ordered if name in self.roots]
        ).consume()
        lock_libraries(tx, ordered)

    def _ensure_folders(self, tx: ManagedTransaction, records: list[PreparedDocument]) -> None:
        folders: dict[str, dict] = {}
        for record in records:
            relfolder = ""
            for uri, name in uris.folder_chain(record.library, record.relpath):
                parent = uris.folder_uri(record.library, relfolder)
                relfolder = f"{relfolder}/{name}" if relfolder else name
                folders[uri] = {
                    "uri": uri,
                    "name": name,
                    "parent": parent,
                    "hash": content_hash(uri),
                    "source_path": f"{self.roots[record.library]}/{relfolder}",
                }
        ordered = sorted(folders.values(), key=lambda row: row["uri"].count("/"))
        if ordered:
            tx.run(MERGE_FOLDERS, rows=ordered).consume()

    def _delete(self, tx: ManagedTransaction, document_uris: list[str], dying: set[str]) -> WriteReport:
        """`document_uris` go now; links into them from documents that stay are resolved again
        (those from `dying`, deleted now or in the caller's next batches, go with their source)."""
        report = WriteReport()
        if not document_uris:
            return report
        self._lock_libraries(tx, {uri.split("/", 1)[0] for uri in document_uris})
        inbound = [_row(record["row"]) for record in tx.run(TAKE_ALL_LINKS_INTO_DOCUMENTS, uris=document_uris)]
        inbound = [row for row in inbound if row.source_document not in dying]
        link_version.forgetting(tx, document_uris)
        tx.run(DELETE_DOCUMENTS, uris=document_uris).consume()
        candidates = {uri.rsplit("/", depth)[0] for uri in document_uris for depth in range(1, uri.count("/") + 1)}
        for folder in sorted(candidates, key=lambda uri: -uri.count("/")):  # deepest first
            tx.run(PRUNE_FOLDERS, uris=[folder]).consume()
        report.deleted = list(document_uris)
        report.absorb(resolve(tx, inbound))
        link_version.resign(tx, {row.source_document for row in inbound})
        stamp(tx, "documents")
        return report


def _resolve_and_stamp(tx: ManagedTransaction, rows: list[LinkRow]) -> Resolution:
    resolution = resolve(tx, rows)
    stamp(tx, "documents")
    return resolution


def _row(data: dict) -> LinkRow:
    return LinkRow(
        data["source"],
        data["ordinal"],
        data["href"],
        data["text"],
        data["kind"],
        data["target_kind"],
        data["key"],
        data["anchor"],
        data.get("reason") or "",
    )
