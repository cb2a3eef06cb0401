"""Answers sized for an agent: a shape's rows are cut at a whole row so the answer fits a budget,
and the answer says how many rows exist, whether it was cut, and the cursor that continues it.

Each spec names the fields of its result that hold rows (lists, or dicts read as their items, in
the order given); everything else in the result is the answer's fixed part and is always shown.
The budget is measured on the answer's JSON, freshness and page included, at four characters a
token — an estimate that needs no tokenizer download — and holds for the answer as printed: the
JSON as `--json` prints it (`printed`), and its text rendering, which the service cuts further
where it runs longer than the JSON.

A cursor is the offset of the next row plus a hash of the last row shown and of the call's other
parameters, and the id of the snapshot its walk reads (`shapes/serving/snapshots.py`). Continuing checks
that row is still where it was; if rows were added or removed before it, the walk resumes right
after it wherever it now is, and if it is gone the cursor is refused rather than silently
skipping or repeating rows.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, is_dataclass, replace
from typing import Any

from shapes.spec.exceptions import Conflict, NotFound

CHARS_PER_TOKEN = 4
PAGE_RESERVE = 300  # characters the page record itself takes in an answer
CURSORLESS = ("cursor", "max_tokens")  # parameters a cursor may differ in


@dataclass(frozen=True)
class Page:
    total: int  # rows in the whole answer
    offset: int  # rows before this page
    shown: int  # rows in this page
    truncated: bool  # rows remain after this page
    next_cursor: str | None  # the same call with this cursor continues (None: this is the end)
    budget_tokens: int
    overview: bool = False  # this page summarises deeper levels; its cursor walks every row from the first


FIT_CHUNK = 64  # rows measured in one encoding while a page has room for all of them


def _encode(value: Any) -> Any:
    """JSON for what the encoder does not know: a dataclass as its fields (read in place, where
    `asdict` deep-copies every row), anything else as text."""
    return vars(value) if is_dataclass(value) else str(value)


def size(value: Any) -> int:
    """Characters of `value` as JSON (dataclasses as their fields)."""
    return len(json.dumps(value, default=_encode))


def printed(data: Any) -> str:
    """An answer's data as one JSON document: what `--json` prints and what the budget measures."""
    return json.dumps(data, default=_encode)


class Rows:
    """The result's rows in order, each as (the field it came from, the item; dict fields give
    their items), read in place: a page looks at its own rows, not at tens of thousands."""

    def __init__(self, result: Any, fields: tuple[str, ...]) -> None:
        self.parts: list[tuple[str, Sequence[Any]]] = []
        for name in fields:
            value = getattr(result, name)
            self.parts.append((name, list(value.items()) if isinstance(value, dict) else value))
        self.total = sum(len(part) for _, part in self.parts)

    def __len__(self) -> int:
        return self.total

    def __getitem__(self, index: int) -> tuple[str, Any]:
        for name, part in self.parts:
            if index < len(part):
                return name, part[index]
            index -= len(part)
        raise IndexError(index)

    def between(self, start: int, end: int) -> Iterator[tuple[str, Any]]:
        for name, part in self.parts:
            if start < len(part) and end > 0:
                yield from ((name, item) for item in part[max(start, 0) : end])
            start, end = start - len(part), end - len(part)


def rows_of(result: Any, fields: tuple[str, ...]) -> list[tuple[str, Any]]:
    """Every row of the result, in order."""
    rows = Rows(result, fields)
    return list(rows.between(0, len(rows)))


def with_rows(result: Any, fields: tuple[str, ...], rows: Iterable[tuple[str, Any]]) -> Any:
    """The result holding only `rows` in its row fields."""
    kept: dict[str, list[Any]] = {name: [] for name in fields}
    for field, item in rows:
        kept[field].append(item)
    return replace(result, **{name: dict(items) if isinstance(getattr(result, name), dict) else items for name, items in kept.items()})


def _row_hash(row: tuple[str, Any]) -> str:
    field, item = row
    return hashlib.sha256(f"{field}\0{json.dumps(item, default=_encode, sort_keys=True)}".encode()).hexdigest()[:16]


def call_hash(params: dict[str, Any]) -> str:
    call = {name: value for name, value in params.items() if name not in CURSORLESS}
    return hashlib.sha256(json.dumps(call, default=str, sort_keys=True).encode()).hexdigest()[:16]


def encode_cursor(offset: int, last: tuple[str, Any] | None, params: dict[str, Any], snapshot: str = "") -> str:
    """The cursor continuing at `offset`, after the row `last` (None: from the first row)."""
    state = {"o": offset, "r": _row_hash(last) if last else "", "p": call_hash(params), "s": snapshot}
    return base64.urlsafe_b64encode(json.dumps(state, separators=(",", ":")).encode()).decode().rstrip("=")


def _state(cursor: str) -> dict[str, Any]:
    try:
        state = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        int(state["o"]), str(state["r"]), str(state["p"]), str(state.get("s", ""))
    except (ValueError, KeyError, TypeError):
        raise NotFound("not a cursor this shape gave: pass next_cursor from the page before, unchanged") from None
    return state


def snapshot_of(cursor: str) -> str:
    """The id of the snapshot a cursor's walk reads ("" for none)."""
    return str(_state(cursor).get("s", ""))


def decode_cursor(cursor: str, rows: Rows | list[tuple[str, Any]], params: dict[str, Any]) -> int:
    """The offset a cursor continues from, in the rows as they are now."""
    state = _state(cursor)
    offset, last, call = int(state["o"]), str(state["r"]), str(state["p"])
    if call != call_hash(params):
        raise NotFound("this cursor belongs to a call with other parameters: repeat that call's parameters with it")
    if offset == 0:
        return 0
    if offset <= len(rows) and _row_hash(rows[offset - 1]) == last:
        return offset
    for index in range(len(rows)):
        if _row_hash(rows[index]) == last:
            return index + 1
    raise Conflict("the answer changed since this cursor was given (its last row is gone): start again without a cursor")


def fit(rows: Rows, start: int, room: int) -> int:
    """How many rows from `start` fit in `room` characters: whole rows, at least one. Each row
    counts its JSON and two characters of separator; a chunk of rows is measured in one encoding
    (a list's JSON is exactly that sum), and row by row only once a chunk would overflow."""
    count, used = 0, 0
    while start + count < len(rows):
        chunk = [item for _, item in rows.between(start + count, start + count + FIT_CHUNK)]
        together = size(chunk)
        if used + together > room:
            break
        used += together
        count += len(chunk)
    for _, item in rows.between(start + count, len(rows)):
        used += size(item) + 2
        if count and used > room:
            break
        count += 1
    return count


def paginate(
    result: Any,
    fields: tuple[str, ...],
    params: dict[str, Any],
    cursor: str | None,
    budget_chars: int,
    other_chars: int,
    snapshot: Callable[[], str] = str,
) -> tuple[Any, Page]:
    """The page of `result` that fits `budget_chars` with `other_chars` (freshness) beside it;
    a cut page's cursor names `snapshot()`, where the whole `result` is kept for the pages after it."""
    rows = Rows(result, fields)
    start = decode_cursor(cursor, rows, params) if cursor else 0
    fixed = size(with_rows(result, fields, []))
    count = fit(rows, start, budget_chars - fixed - other_chars - PAGE_RESERVE)
    end = start + count
    more = end < len(rows)
    next_cursor = encode_cursor(end, rows[end - 1] if end else None, params, snapshot()) if more else None
    page = Page(len(rows), start, count, more, next_cursor, budget_chars // CHARS_PER_TOKEN)
    return with_rows(result, fields, rows.between(start, end)), page


def overview_page(result: Any, fields: tuple[str, ...], params: dict[str, Any], budget_chars: int, total: int, snapshot: Callable[[], str]) -> Page:
    """The page record of an overview: what it shows stands for all `total` rows, walked from the first."""
    shown = len(Rows(result, fields))
    return Page(total, 0, shown, True, encode_cursor(0, None, params, snapshot()), budget_chars // CHARS_PER_TOKEN, overview=True)
