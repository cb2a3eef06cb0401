"""Cutting rows to a budget and continuing with a cursor (shapes/spec/budget.py), as properties over
random results: pages stay within the budget, never split a row, and walk to exactly the whole."""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shapes.spec.budget import Rows, decode_cursor, encode_cursor, fit, paginate, rows_of
from shapes.spec.exceptions import ShapeError


@dataclass(frozen=True)
class Listing:
    title: str
    items: list[dict] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)


FIELDS = ("items", "counts")
CALL = {"query": "x", "cursor": None, "max_tokens": None}
listings = st.builds(
    Listing,
    st.text(max_size=40),
    st.lists(st.fixed_dictionaries({"uri": st.text(min_size=1, max_size=30), "n": st.integers()}), max_size=60),
    st.dictionaries(st.text(min_size=1, max_size=10), st.integers(), max_size=30),
)


def walk(listing: Listing, budget: int) -> list[tuple[Listing, object]]:
    pages, cursor = [], None
    while True:
        page, record = paginate(listing, FIELDS, CALL, cursor, budget, 0)
        pages.append((page, record))
        cursor = record.next_cursor
        if cursor is None:
            return pages


@settings(max_examples=200, deadline=None)
@given(listings, st.integers(min_value=200, max_value=3000))
def test_pages_fit_and_walk_to_exactly_the_whole(listing: Listing, budget: int) -> None:
    pages = walk(listing, budget)
    walked = [row for page, _ in pages for row in rows_of(page, FIELDS)]
    assert walked == rows_of(listing, FIELDS)
    for page, record in pages:
        assert record.total == len(walked)
        assert page.title == listing.title  # the fixed part is on every page
        if record.shown > 1:
            assert len(json.dumps(asdict(page))) + len(json.dumps(asdict(record))) <= budget


@dataclass(frozen=True)
class Row:
    name: str
    tags: list[str]
    nested: Listing | None = None


@dataclass(frozen=True)
class Table:
    rows: list[Row]


row_lists = st.lists(
    st.builds(Row, st.text(max_size=20), st.lists(st.text(max_size=8), max_size=4), st.none() | st.builds(Listing, st.text(max_size=10))),
    max_size=300,
)


@settings(max_examples=200, deadline=None)
@given(row_lists, st.integers(min_value=0, max_value=299), st.integers(min_value=0, max_value=12000))
def test_a_page_holds_the_longest_run_of_whole_rows_that_fits(rows: list[Row], start: int, room: int) -> None:
    """Measuring rows a chunk at a time takes exactly the rows measuring each alone would."""
    start = min(start, len(rows))
    expected, used = 0, 0
    for row in rows[start:]:
        used += len(json.dumps(asdict(row))) + 2
        if expected and used > room:
            break
        expected += 1
    assert fit(Rows(Table(rows), ("rows",)), start, room) == expected


def test_a_cursor_is_for_the_call_that_gave_it() -> None:
    listing = Listing("t", [{"uri": str(i), "n": i} for i in range(100)])
    _, record = paginate(listing, FIELDS, CALL, None, 400, 0)
    assert record.truncated and record.next_cursor
    with pytest.raises(ShapeError, match="other parameters"):
        paginate(listing, FIELDS, {**CALL, "query": "y"}, record.next_cursor, 400, 0)
    with pytest.raises(ShapeError, match="not a cursor"):
        paginate(listing, FIELDS, CALL, "garbage!", 400, 0)
    assert paginate(listing, FIELDS, {**CALL, "max_tokens": 9}, record.next_cursor, 400, 0)[1].offset == record.shown


def test_a_cursor_resumes_after_its_last_row_when_rows_move_and_refuses_when_it_is_gone() -> None:
    rows = [("items", {"uri": str(i), "n": i}) for i in range(10)]
    cursor = encode_cursor(4, rows[3], CALL)
    assert decode_cursor(cursor, rows, CALL) == 4
    assert decode_cursor(cursor, [("items", {"uri": "new", "n": -1}), *rows], CALL) == 5  # a row arrived before: nothing repeats
    assert decode_cursor(cursor, rows[1:], CALL) == 3  # a row before went: nothing is skipped
    with pytest.raises(ShapeError, match="changed since"):
        decode_cursor(cursor, rows[:3] + rows[4:], CALL)


def test_a_snapshot_serves_its_own_call_until_newer_ones_push_it_out() -> None:
    from shapes.serving.snapshots import KEPT, Snapshots

    kept = Snapshots()
    first = kept.keep("call-a", ["whole"])
    assert kept.get(first, "call-a") == ["whole"] and kept.get(first, "call-b") is None
    second = kept.keep("call-a", ["again"])
    for index in range(KEPT - 1):
        kept.keep(f"call-{index}", [index])
    assert kept.get(first, "call-a") is None and kept.get(second, "call-a") == ["again"]


def test_a_versioned_answer_is_kept_until_its_version_moves_and_a_full_cache_drops_its_quickest() -> None:
    from shapes.access.versioned import Versioned

    computed: list[str] = []

    def compute(key: str) -> str:
        computed.append(key)
        if key == "walk":
            time.sleep(0.05)  # a column's coverage: far longer to compute than the one-document answers
        return key.upper()

    kept: Versioned[str] = Versioned(2)
    for key in ("walk", "b", "walk", "b"):
        assert kept.get(1, key, lambda key=key: compute(key)) == key.upper()
    assert computed == ["walk", "b"]  # a full cache still answers what it holds
    for key in ("c", "walk", "d", "walk", "c"):
        kept.get(1, key, lambda key=key: compute(key))
    assert computed == ["walk", "b", "c", "d", "c"]  # each quick answer made room for the next; the walk stayed
    kept.get(2, "walk", lambda: compute("walk"))
    assert computed[-1] == "walk"  # a new version reads again
