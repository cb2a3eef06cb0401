"""What a shape keeps per version of its sources is keyed on the call's one reading of them."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from shapes.freshness import CALL_READING, Freshness, SourceFreshness, versions

if TYPE_CHECKING:
    from neo4j import Driver

NO_GRAPH = cast("Driver", None)  # within a call the stamps come from its reading: no read of the graph


def test_within_a_call_the_versions_are_the_readings_stamps_and_move_with_them() -> None:
    def reading(changes: int) -> Freshness:
        return Freshness("2026-12-06T21:00:00Z", [SourceFreshness("documents", "2026-12-06T20:59:00Z", None, 60, changes, 0)])

    called = CALL_READING.set(reading(7))
    try:
        first = versions(NO_GRAPH, "neo4j", "documents", "warehouse")
        assert first == (("2026-12-06T20:59:00Z", 7), (None, None))  # a source with no change yet
    finally:
        CALL_READING.reset(called)
    called = CALL_READING.set(reading(8))
    try:
        assert versions(NO_GRAPH, "neo4j", "documents", "warehouse") != first
    finally:
        CALL_READING.reset(called)
    assert CALL_READING.get(None) is None  # set only while a call is answered
