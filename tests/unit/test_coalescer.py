"""The watcher's coalescing: a change seen complete (closed after writing, moved, deleted) at once,
the events of a write under way as one job after a quiet window (with a test clock)."""

from __future__ import annotations

from pathlib import Path

from watchdog.events import FileClosedEvent, FileClosedNoWriteEvent, FileModifiedEvent, FileMovedEvent, FileOpenedEvent

from worker import task_names as names
from worker.documents.file_events import LibraryHandler
from worker.warehouse.glossary_file import GlossaryHandler
from worker.watching import Coalescer, Job


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_events_of_a_write_under_way_become_one_job_after_a_quiet_window() -> None:
    clock = Clock()
    coalescer = Coalescer(0.2, clock)
    job = Job(names.SYNC_DOCUMENT, ("lib", "a.md"))
    for step in range(10):
        clock.now = step * 0.05
        coalescer.add(job)
    clock.now = 0.45 + 0.1
    assert coalescer.due() == []  # last event at 0.45: due at 0.65
    clock.now = 0.66
    assert coalescer.due() == [job]
    assert coalescer.due() == []


def test_a_settled_change_is_due_at_once_and_ends_the_wait() -> None:
    clock = Clock()
    coalescer = Coalescer(0.2, clock)
    job = Job(names.SYNC_DOCUMENT, ("lib", "a.md"))
    coalescer.add(job)  # modified: the write is under way
    clock.now = 0.01
    assert coalescer.due() == []
    coalescer.add(job, settled=True)  # closed after writing: the file is complete
    assert coalescer.due() == [job]
    assert coalescer.due() == []  # one job for the whole save


def test_library_events_that_settle_a_file(tmp_path: Path) -> None:
    from worker.documents.library import FolderLibrary

    coalescer = Coalescer(0.2, Clock())
    handler = LibraryHandler(FolderLibrary("lib", tmp_path, (".md",)), coalescer)
    handler.on_any_event(FileModifiedEvent(str(tmp_path / "a.md")))
    assert coalescer.due() == []
    handler.on_any_event(FileClosedEvent(str(tmp_path / "a.md")))
    handler.on_any_event(FileMovedEvent(str(tmp_path / ".a.md.swp"), str(tmp_path / "b.md")))
    assert coalescer.due() == [Job(names.SYNC_DOCUMENT, ("lib", "a.md")), Job(names.SYNC_DOCUMENT, ("lib", "b.md"))]


def test_paths_are_independent_and_everything_flushes_at_shutdown() -> None:
    clock = Clock()
    coalescer = Coalescer(0.2, clock)
    first, second = Job("t", ("lib", "a.md")), Job("t", ("lib", "b.md"))
    coalescer.add(first)
    clock.now = 0.15
    coalescer.add(second)
    clock.now = 0.25
    assert coalescer.due() == [first]
    assert coalescer.due(everything=True) == [second]


def test_reading_the_glossary_does_not_trigger_another_sync(tmp_path: Path) -> None:
    """inotify reports the sync's own read of the file (opened, closed unchanged): a feedback loop
    that re-synced the glossary every 200 ms until those events were ignored."""
    glossary = tmp_path / "glossary.toml"
    coalescer = Coalescer(0.0, lambda: 0.0)
    handler = GlossaryHandler(glossary, coalescer)
    handler.on_any_event(FileOpenedEvent(str(glossary)))
    handler.on_any_event(FileClosedNoWriteEvent(str(glossary)))
    assert len(coalescer) == 0
    handler.on_any_event(FileClosedEvent(str(glossary)))  # closed after writing: a change
    assert len(coalescer) == 1
