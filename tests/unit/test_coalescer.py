"""The watcher's coalescing: an isolated event at once, a burst on one path as one more job after a
quiet window (with a test clock)."""

from __future__ import annotations

from pathlib import Path

from watchdog.events import FileClosedEvent, FileClosedNoWriteEvent, FileOpenedEvent

from worker.documents.watcher import Coalescer, GlossaryHandler, Job


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_an_isolated_event_is_due_at_once() -> None:
    clock = Clock()
    coalescer = Coalescer(0.2, clock)
    job = Job("lakegraph.sync_document", ("lib", "a.md"))
    coalescer.add(job)
    assert coalescer.due() == [job]
    clock.now = 0.5  # quiet for longer than the window: the next edit is isolated again
    coalescer.add(job)
    assert coalescer.due() == [job]


def test_a_burst_on_one_path_becomes_its_first_job_and_one_more_after_it() -> None:
    clock = Clock()
    coalescer = Coalescer(0.2, clock)
    job = Job("lakegraph.sync_document", ("lib", "a.md"))
    coalescer.add(job)
    assert coalescer.due() == [job]  # the first event: at once
    for step in range(1, 10):
        clock.now = step * 0.05
        coalescer.add(job)
        assert coalescer.due() == []
    clock.now = 0.45 + 0.1
    assert coalescer.due() == []  # last event at 0.45: due at 0.65
    clock.now = 0.66
    assert coalescer.due() == [job]
    assert coalescer.due() == []


def test_paths_are_independent_and_everything_flushes_at_shutdown() -> None:
    clock = Clock()
    coalescer = Coalescer(0.2, clock)
    first, second = Job("t", ("lib", "a.md")), Job("t", ("lib", "b.md"))
    coalescer.add(first)
    coalescer.add(second)
    assert coalescer.due() == [first, second]  # each isolated on its own path
    clock.now = 0.1
    coalescer.add(first)  # a second event on each: now bursts
    clock.now = 0.15
    coalescer.add(second)
    clock.now = 0.31
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
