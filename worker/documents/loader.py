"""The full load (`lakegraph load docs`): every library parsed in parallel, written in batches,
links resolved once every document exists, and documents no longer on disk removed.

A file whose stamp (Library.stamps: size and modification time on disk, size and MD5 in a
bucket) matches what the graph recorded is not read at all, unless readers of another version
read it; one whose stamp moved is read and hashed, and parsed only when its bytes changed."""

from __future__ import annotations

import multiprocessing
import os
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field

from worker import problems
from worker.documents.library import Library
from worker.documents.prepare import PreparedDocument, prepare
from worker.documents.resolver import LinkRow
from worker.documents.rules import DocumentRules
from worker.documents.source import Skipped, build, file_hash, read_by_these_readers
from worker.documents.sync import (
    ALL_KINDS,
    SOURCE,
    DocumentSync,
    ReconcileReport,
    StoredDocument,
    problem_key,
)
from worker.documents.writer import TooLarge
from worker.graph.batches import rows_per_batch
from worker.task_names import SYNC_DOCUMENT

# Documents written and links resolved per transaction: at most these, fewer where the server's
# transaction memory limit asks it (worker/graph/batches.py; a row's cost measured, with room).
WRITE_BATCH, DOCUMENT_BYTES = 200, 65_536
SECTION_BATCH, SECTION_BYTES = 20_000, 4_096  # and sections: a few long documents fill a batch too
RESOLVE_BATCH, LINK_BYTES = 5000, 8_192
PARSE_CHUNK = 32

Progress = Callable[[str, int, int], None]  # stage, done, total


@dataclass
class LoadReport:
    documents: int = 0
    sections: int = 0
    written: int = 0
    unchanged: int = 0
    read: int = 0  # files opened: the others were unchanged by their stamp alone
    parsed: int = 0  # files parsed: those read whose bytes had changed
    deleted: int = 0
    skipped: int = 0  # refused files: read and refused now, or refused before and unchanged since (not read)
    warned: int = 0  # files loaded with warnings (`lakegraph errors` lists them)
    conflicts: int = 0
    linked: int = 0
    unresolved: int = 0
    seconds: float = 0.0
    stage_seconds: dict[str, float] = field(default_factory=dict)

    @property
    def sections_per_second(self) -> float:
        return self.sections / self.seconds if self.seconds else 0.0


Job = tuple[Library, str, DocumentRules, StoredDocument | None]


@dataclass(frozen=True)
class Touched:
    """A file read again whose bytes are those the graph holds: only its stamp is new."""

    uri: str
    relpath: str
    stamp: str


@dataclass(frozen=True)
class Refused:
    """A file that cannot be loaded, and why; `refusal` (DocumentRules.refusal) when it is not to
    be read again until it changes."""

    library: str
    relpath: str
    reason: str
    refusal: str | None


Parsed = PreparedDocument | Touched | Refused


def _parse(job: Job) -> Parsed:
    """Read, parse and turn into graph rows: all the per-document CPU work, done in the pool. No
    exception leaves it: whatever goes wrong with one file is that file's refusal."""
    library, relpath, rules, known = job
    try:
        data, stamp = library.read_bytes(relpath, rules.max_bytes)
        if known is not None and known.file_hash == file_hash(data):
            return Touched(known.uri, relpath, stamp)
        return prepare(build(library.name, relpath, data, rules, stamp), rules.id_schemes, library.where(relpath))
    except Skipped as err:
        return Refused(library.name, relpath, str(err), rules.refusal(err.stamp) if err.stamp else None)
    except FileNotFoundError:
        return Refused(library.name, relpath, "vanished while loading", None)
    except Exception as err:  # reading failed (a bucket's error, say): recorded, read again next time
        return Refused(library.name, relpath, f"{type(err).__name__}: {err}", None)


def _parsed(jobs: list[Job], workers: int) -> Iterator[Parsed]:
    if workers <= 1 or len(jobs) < 2 * PARSE_CHUNK:
        yield from map(_parse, jobs)
        return
    # forkserver: workers fork from a clean single-threaded server, never from this process, whose
    # threads (progress bars, driver, supervisor) may hold locks a forked child would wait on forever.
    with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("forkserver")) as pool:
        yield from pool.map(_parse, jobs, chunksize=PARSE_CHUNK)


def parsed_documents(sync: DocumentSync, workers: int | None = None) -> Iterator[PreparedDocument]:
    """Every file of the configured libraries as the graph rows a first load writes (skipped files
    left out): the parsing half of a load, for what writes those rows by other means."""
    jobs: list[Job] = [
        (library, relpath, sync.rules, None) for library in sync.libraries.values() for relpath, _ in library.stamps(on_loop=lambda folder: None)
    ]
    for item in _parsed(jobs, workers or os.cpu_count() or 1):
        if isinstance(item, PreparedDocument):
            yield item


def load(sync: DocumentSync, progress: Progress = lambda stage, done, total: None, workers: int | None = None) -> LoadReport:
    began = time.monotonic()
    report = LoadReport()
    sync.writer.ensure_libraries(set(sync.libraries))  # a load skipping every file still repairs them
    stored = sync.stored_documents()
    refusals = sync.refusals()
    rules = sync.rules
    present: set[tuple[str, str]] = set()
    seen_uris: dict[str, str] = {}
    jobs: list[Job] = []
    for library in sync.libraries.values():
        for relpath, found in library.stamps(on_loop=sync.loop_reporter(library)):
            present.add((library.name, relpath))
            known = stored.get((library.name, relpath))
            if known is not None and known.stamp is not None and known.stamp == found and read_by_these_readers(known.file_hash):
                seen_uris[known.uri] = relpath
                report.documents += 1
                report.unchanged += 1
            elif found is not None and refusals.get(problem_key(library.name, relpath)) == rules.refusal(found):
                report.skipped += 1
            else:
                jobs.append((library, relpath, rules, known))
    stamp = time.monotonic()

    deferred: list[LinkRow] = []
    written: set[str] = set()
    touched: dict[str, str] = {}
    refused_uris: list[str] = []  # stored documents whose file is refused now: removed, as a sync removes them
    batch: list[PreparedDocument] = []

    def write(documents: list[PreparedDocument]) -> None:
        """Write the documents, halving a batch the server cannot hold until each part fits: one
        document too large for it is refused with the reason, its stored version kept."""
        try:
            outcome = sync.writer.write(documents, defer_links=True)
        except TooLarge as err:
            if len(documents) > 1:
                write(documents[: len(documents) // 2])
                write(documents[len(documents) // 2 :])
            else:
                refuse(documents[0], err)
            return
        written.update(outcome.written)
        report.written += len(outcome.written)
        report.unchanged += len(outcome.unchanged)
        report.linked += outcome.linked
        report.unresolved += outcome.unresolved
        deferred.extend(outcome.deferred_links)
        problems.clear_many(sync.driver, sync.database, SOURCE, [problem_key(r.library, r.relpath) for r in documents], ALL_KINDS)
        for record in documents:
            if record.problems or outcome.duplicate_ids:
                sync.settle(record, outcome, cleared=True)

    def refuse(record: PreparedDocument, why: TooLarge) -> None:
        report.documents -= 1
        report.sections -= len(record.sections)
        report.skipped += 1
        reason = why.refusal(record, (record.library, record.relpath) in stored)
        problems.record(
            sync.driver, sync.database, SOURCE, problem_key(record.library, record.relpath), "skipped", reason, SYNC_DOCUMENT, [record.library, record.relpath]
        )

    def flush() -> None:
        write(batch)
        batch.clear()

    report.read = len(jobs)
    write_batch = rows_per_batch(sync.writer.limit, DOCUMENT_BYTES, WRITE_BATCH, least=10)
    section_batch = rows_per_batch(sync.writer.limit, SECTION_BYTES, SECTION_BATCH)
    resolve_batch = rows_per_batch(sync.writer.limit, LINK_BYTES, RESOLVE_BATCH)
    for done, item in enumerate(_parsed(jobs, workers or os.cpu_count() or 1), start=1):
        report.parsed += isinstance(item, PreparedDocument)
        if isinstance(item, Touched):
            seen_uris[item.uri] = item.relpath
            report.documents += 1
            report.unchanged += 1
            touched[item.uri] = item.stamp
        elif isinstance(item, Refused):
            report.skipped += 1
            key = problem_key(item.library, item.relpath)
            problems.record(sync.driver, sync.database, SOURCE, key, "skipped", item.reason, SYNC_DOCUMENT, [item.library, item.relpath], item.refusal)
            if (item.library, item.relpath) in stored:
                refused_uris.append(stored[(item.library, item.relpath)].uri)
        elif item.uri in seen_uris:
            report.conflicts += 1
            problems.record(
                sync.driver,
                sync.database,
                SOURCE,
                f"{item.library}:{item.relpath}",
                "conflict",
                f"same URI {item.uri} as {seen_uris[item.uri]}; rename one of them",
                SYNC_DOCUMENT,
                [item.library, item.relpath],
            )
        else:
            seen_uris[item.uri] = item.relpath
            report.documents += 1
            report.sections += len(item.sections)
            report.warned += bool(item.problems)
            batch.append(item)
            if len(batch) >= write_batch or sum(len(record.sections) for record in batch) >= section_batch:
                flush()
        progress("documents", done, len(jobs))
    if batch:
        flush()
    if touched:
        sync.writer.restamp(touched)
    report.stage_seconds["parse+write"] = time.monotonic() - stamp
    stamp = time.monotonic()

    for start in range(0, len(deferred), resolve_batch):
        resolution = sync.writer.resolve(deferred[start : start + resolve_batch])
        report.linked += resolution.linked
        report.unresolved += resolution.unresolved
        sync.record_duplicate_ids(resolution.duplicate_ids)
        progress("links", min(start + resolve_batch, len(deferred)), len(deferred))
    sync.writer.resign(written | {row.source_document for row in deferred} | {known.uri for known in stored.values() if known.unlisted})
    report.stage_seconds["links"] = time.monotonic() - stamp

    # Stored when the load began and absent from disk now; a document a watcher added meanwhile is
    # not in `stored`, so it is never mistaken for stale.
    stale = [known.uri for key, known in sorted(stored.items()) if key not in present] + refused_uris
    if stale:
        report.deleted = len(sync.writer.delete(stale).deleted)
    report.seconds = time.monotonic() - began
    return report


def reconcile(sync: DocumentSync) -> ReconcileReport:
    """Compare every file of the configured libraries with the graph and repair each difference,
    in batches through the load's own path (one transaction per file made 200 repairs take about
    5 s), parsing in this process (a Celery worker's children may not have children). Libraries
    the graph holds but the settings do not name are reported, never touched: they may have been
    loaded on purpose (`load docs NAME=PATH`); `forget` removes one."""
    report = ReconcileReport(started_at=time.time())
    loaded = load(sync, workers=1)
    report.files = loaded.documents + loaded.skipped + loaded.conflicts
    for outcome, count in (("written", loaded.written), ("deleted", loaded.deleted), ("skipped", loaded.skipped), ("conflict", loaded.conflicts)):
        if count:
            report.outcomes[outcome] = count
    report.unconfigured = [name for name in sync.writer.library_names() if name not in sync.libraries]
    report.seconds = round(time.time() - report.started_at, 3)
    return report
