"""How long a resource read stays fresh follows the freshness the answer reports."""

from __future__ import annotations

from shapes.serving.mcp_server import MAX_TTL_SECONDS, ttl_seconds


def source(age: int | None, queued: int | None = 0) -> dict:
    return {"source": "documents", "age_seconds": age, "queued": queued}


def test_a_graph_with_events_waiting_is_stale_at_once() -> None:
    assert ttl_seconds({"sources": [source(3600), source(5, queued=2)]}) == 0.0


def test_a_quiet_graph_stays_fresh_a_tenth_of_its_youngest_age_up_to_the_cap() -> None:
    assert ttl_seconds({"sources": [source(50), source(3000)]}) == 5.0
    assert ttl_seconds({"sources": [source(10**6)]}) == MAX_TTL_SECONDS


def test_nothing_known_means_nothing_promised() -> None:
    assert ttl_seconds({}) == 0.0
    assert ttl_seconds({"sources": [source(None, queued=None)]}) == 0.0
