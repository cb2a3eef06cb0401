"""Level-triggered document sync: "make the graph match this path now", from the file's current state.

Because each call reads the file as it is, running it twice, late, or out of order is harmless —
which is what lets watcher events be coalesced, retried and replayed freely.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

from neo4j import Driver

from worker import problems
from worker.documents import link_version, uris
from worker.documents.libraries import libraries
from worker.documents.library import Library
from worker.documents.prepare import PreparedDocument, prepare
from worker.documents.rules import DocumentRules
from worker.documents.source import Skipped, read
from worker.documents.writer import DocumentWriter, TooLarge, WriteReport
from worker.graph.schema import Label
from worker.settings import Settings
from worker.shared.changes import Announce, announcer
from worker.task_names import RECONCILE_DOCUMENTS, SYNC_DOCUMENT

SOURCE = "documents"
ALL_KINDS: tuple[problems.Kind, ...] = ("skipped", "warning", "failed", "conflict")

Outcome = Literal["written", "unchanged", "deleted", "skipped", "absent", "conflict"]

# Every "stored but no longer present" comparison is scoped to the libraries at hand: loading or
# reconciling one library must never touch another (one loaded ad hoc, or by another deployment).
# One record holding every row: decoding 10,000 records one by one cost more than the query.
STORED_DOCUMENTS = f"""
MATCH (d:{Label.DOCUMENT}) WHERE d.library IN $libraries
RETURN collect([d.library, d.relpath, d.uri, d.content_hash, d.file_stamp, {link_version.UNLISTED.format(node="d")}]) AS rows
"""
# Files refused with a stamp (Skipped.stamp): the load does not read them again while it holds.
REFUSED = f"""
MATCH (p:{Label.PROBLEM}) WHERE p.source = $source AND p.kind = 'skipped' AND p.stamp IS NOT NULL
RETURN collect([p.key, p.stamp]) AS rows
"""
FOLDER_EXISTS = f"MATCH (f:{Label.FOLDER} {{uri: $uri}}) RETURN count(f) > 0 AS found"
ANY_DOCUMENT = f"MATCH (d:{Label.DOCUMENT}) WHERE d.library IN $libraries RETURN d.library AS library, d.relpath AS relpath LIMIT 1"
REHEARSAL_HASH = "rehearsal"  # no file hashes to it, so the rehearsed document counts as changed


@dataclass(frozen=True)
class StoredDocument:
    uri: str
    file_hash: str
    stamp: str | None  # the file's stamp when last read (Library.stamps)
    unlisted: bool  # signed before its outgoing links were kept on it (worker.documents.link_version): a load lists it


@dataclass
class ReconcileReport:
    files: int = 0
    outcomes: dict[str, int] = field(default_factory=dict)
    unconfigured: list[str] = field(default_factory=list)  # libraries in the graph the settings do not name
    started_at: float = 0.0  # epoch seconds: when a periodic repair began, for lag accounting
    seconds: float = 0.0

    def count(self, outcome: str) -> None:
        self.outcomes[outcome] = self.outcomes.get(outcome, 0) + 1


class DocumentSync:
    def __init__(self, settings: Settings, driver: Driver, database: str, announce: Announce | None = None) -> None:
        self.settings = settings
        self.driver = driver
        self.database = database
        self.libraries: dict[str, Library] = {library.name: library for library in libraries(settings)}
        self.writer = DocumentWriter(driver, database, {name: library.location for name, library in self.libraries.items()}, announce or announcer(settings))

    @property
    def rules(self) -> DocumentRules:
        return DocumentRules.of(self.settings.documents)

    def library(self, name: str) -> Library:
        try:
            return self.libraries[name]
        except KeyError:
            raise Skipped(f"no library named {name!r} in documents.libraries") from None

    def sync_path(self, library_name: str, relpath: str) -> Outcome:
        library = self.library(library_name)
        if library.is_folder(relpath):
            counts = self.sync_folder(library_name, relpath)
            return "written" if counts.outcomes else "unchanged"
        if not library.accepts(relpath) or not library.is_file(relpath):
            return self._remove(library, relpath)
        key = problem_key(library.name, relpath)
        rules = self.rules
        try:
            record = read(library, relpath, rules)
        except FileNotFoundError:
            return self._remove(library, relpath)
        except Skipped as skipped:
            self._record(key, "skipped", str(skipped), library.name, relpath, rules.refusal(skipped.stamp) if skipped.stamp else None)
            self._remove(library, relpath, keep_problems=True)
            return "skipped"
        stored = self.writer.stored_source(record.uri)
        if stored is not None and stored != (library.name, relpath) and library.is_file(stored[1]):
            self._record(key, "conflict", f"same URI {record.uri} as {stored[1]}; rename one of them", library.name, relpath)
            return "conflict"
        prepared = prepare(record, rules.id_schemes, library.where(relpath))
        try:
            report = self.writer.write([prepared])
        except TooLarge as err:  # its stored version, if any, stays: only this version does not fit
            self._record(key, "skipped", err.refusal(prepared, stored is not None), library.name, relpath)
            return "skipped"
        self.settle(prepared, report)
        return "written" if report.written else "unchanged"

    def warm_up(self) -> bool:
        """Rehearse an edit of one stored document (DocumentWriter.rehearse); False when none is stored."""
        found = self.driver.execute_query(ANY_DOCUMENT, libraries=sorted(self.libraries), database_=self.database).records
        if not found:
            return False
        library, relpath, rules = self.library(found[0]["library"]), found[0]["relpath"], self.rules
        prepared = prepare(read(library, relpath, rules), rules.id_schemes, library.where(relpath))
        self.writer.rehearse([replace(prepared, file_hash=REHEARSAL_HASH)])
        return True

    def sync_folder(self, library_name: str, relfolder: str) -> ReconcileReport:
        """A folder created, deleted or moved: load what is there now, drop what is not."""
        library = self.library(library_name)
        folder = uris.folder_uri(library.name, relfolder)
        report = ReconcileReport()
        if not library.is_folder(relfolder):
            self.writer.delete_under(folder)
            report.count("deleted")
            return report
        # what is there now, and what the graph holds below the folder (gone ones are removed below)
        present = set(library.walk(on_loop=self.loop_reporter(library), under=relfolder))
        present.update(self.writer.relpaths_under(folder))
        for relpath in sorted(present):
            report.files += 1
            report.count(self.sync_path(library.name, relpath))
        return report

    def refusals(self) -> dict[str, str]:
        """problem key → what each refused file is remembered by (DocumentRules.refusal)."""
        records = self.driver.execute_query(REFUSED, source=SOURCE, database_=self.database).records
        return dict(records[0]["rows"])

    def stored_documents(self) -> dict[tuple[str, str], StoredDocument]:
        """(library, relpath) → what the graph knows of every stored document of the configured libraries."""
        records = self.driver.execute_query(STORED_DOCUMENTS, libraries=sorted(self.libraries), database_=self.database).records
        return {(library, relpath): StoredDocument(uri, digest, found, unlisted) for library, relpath, uri, digest, found, unlisted in records[0]["rows"]}

    def _remove(self, library: Library, relpath: str, keep_problems: bool = False) -> Outcome:
        uri = uris.document_uri(library.name, relpath)
        stored = self.writer.stored_source(uri)
        if not keep_problems:
            problems.clear(self.driver, self.database, SOURCE, problem_key(library.name, relpath), ALL_KINDS)
        if stored == (library.name, relpath):
            self.writer.delete([uri])
            return "deleted"
        folder = uris.folder_uri(library.name, relpath)
        if self.driver.execute_query(FOLDER_EXISTS, uri=folder, database_=self.database).records[0]["found"]:
            self.writer.delete_under(folder)
            return "deleted"
        return "absent"

    def settle(self, record: PreparedDocument, report: WriteReport, cleared: bool = False) -> None:
        """Problems follow the document's current state: old ones cleared, current warnings recorded."""
        key = problem_key(record.library, record.relpath)
        if not cleared:
            problems.clear(self.driver, self.database, SOURCE, key, ALL_KINDS)
        if record.problems:
            self._record(key, "warning", "; ".join(record.problems), record.library, record.relpath)
        self.record_duplicate_ids(report.duplicate_ids)

    def record_duplicate_ids(self, duplicates: dict[str, list[str]]) -> None:
        for doc_id, holders in duplicates.items():
            problems.record(
                self.driver,
                self.database,
                SOURCE,
                f"id:{doc_id}",
                "conflict",
                f"document id {doc_id!r} is declared by {', '.join(holders)}; links by id go to {holders[0]}",
                RECONCILE_DOCUMENTS,
                [],
            )

    def _record(self, key: str, kind: problems.Kind, reason: str, library: str, relpath: str, stamp: str | None = None) -> None:
        problems.record(self.driver, self.database, SOURCE, key, kind, reason, SYNC_DOCUMENT, [library, relpath], stamp)

    def loop_reporter(self, library: Library) -> Callable[[Path], None]:
        def report(folder: Path) -> None:
            relfolder = folder.relative_to(library.location).as_posix()
            problems.record(
                self.driver,
                self.database,
                SOURCE,
                problem_key(library.name, relfolder),
                "skipped",
                "symlink loop: this folder is already part of the library",
                RECONCILE_DOCUMENTS,
                [],
            )

        return report


def problem_key(library: str, relpath: str) -> str:
    return f"{library}:{relpath}"
