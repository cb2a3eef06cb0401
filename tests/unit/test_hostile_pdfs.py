"""Hostile PDFs (tests/hostile_pdfs.py) through the document builder every load path uses: each
file is a document or a refusal with its reason, never another exception; a page that needs a
codec not installed loses only that page; pypdf's warnings reach the log and the file's problems,
never the terminal; a parse past documents.parse_seconds is refused, in any thread."""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import replace

import pytest

from tests import hostile_pdfs
from tests.corpora import PDF_SAMPLES
from worker.documents.rules import DocumentRules
from worker.documents.source import DocumentRecord, Skipped, build

RULES = DocumentRules.defaults()
SLOW_BOOK = PDF_SAMPLES / "009-pdflatex-geotopo" / "GeoTopo-komprimiert.pdf"  # 117 pages: about 6 s to parse

pytestmark = pytest.mark.corpus


def outcome(name: str, data: bytes, rules: DocumentRules = RULES) -> DocumentRecord | str:
    try:
        return build("lib", name, data, rules, stamp="s")
    except Skipped as refused:
        assert refused.stamp == "s", "a refusal remembers the stamp of the bytes it refused"
        return str(refused)


@pytest.mark.parametrize("name", sorted(hostile_pdfs.crafted()))
def test_a_page_needing_a_missing_codec_loses_only_that_page(name: str) -> None:
    record = outcome(name, hostile_pdfs.crafted()[name])
    assert isinstance(record, DocumentRecord), record
    assert hostile_pdfs.GOOD_TEXT in record.text
    assert any(problem.startswith("page 2: text unreadable (") for problem in record.problems), record.problems


def test_every_fuzzed_real_pdf_loads_or_is_refused_with_a_reason_and_the_terminal_stays_quiet(
    capfd: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    files = hostile_pdfs.fuzzed()
    assert len(files) >= 100
    with caplog.at_level(logging.DEBUG, logger="worker.documents.parsers.pdf.library_log"):
        outcomes = {name: outcome(name, data) for name, data in files.items()}  # anything but Skipped fails here
    refused = {name: reason for name, reason in outcomes.items() if isinstance(reason, str)}
    loaded = {name: record for name, record in outcomes.items() if isinstance(record, DocumentRecord)}
    assert refused and loaded, "the fuzzing both breaks files past repair and leaves some readable"
    assert all(reason.strip() for reason in refused.values())
    warned = [record for record in loaded.values() if any(problem.startswith("pypdf warned") for problem in record.problems)]
    assert warned, "files pypdf had to repair say so in their problems"
    assert capfd.readouterr().err == "", "pypdf's warnings never reach the terminal"
    assert any(message.startswith("pypdf: ") for message in caplog.messages), "they go to the log, at debug level"


# A stop that lands in a garbage-collector callback or a finalizer is reported by Python and dropped
# there; the watchdog raises it again until the parse ends (worker/documents/time_limit.py), which
# is what this test holds. The report is expected, not a leak.
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_a_parse_past_its_time_limit_is_refused_in_any_thread() -> None:
    rules = replace(RULES, parse_seconds=0.5)
    results: dict[str, object] = {}

    def parse(where: str) -> None:
        began = time.monotonic()
        results[where] = (outcome(SLOW_BOOK.name, SLOW_BOOK.read_bytes(), rules), time.monotonic() - began)

    parse("main")
    workers = [threading.Thread(target=parse, args=(f"thread {index}",)) for index in range(2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert set(results) == {"main", "thread 0", "thread 1"}
    for found, seconds in results.values():  # type: ignore[misc]
        assert found == "parsing took longer than documents.parse_seconds (0.5 s)"
        assert seconds < 3
    assert isinstance(outcome(SLOW_BOOK.name, SLOW_BOOK.read_bytes()), DocumentRecord), "under the default limit it loads"
