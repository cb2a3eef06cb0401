"""Rows as an aligned text table: the text form of the cypher and run_sql shapes."""

from __future__ import annotations

from typing import Any

MAX_WIDTH = 60


def render_rows(columns: list[str], rows: list[list[Any]], truncated: bool, milliseconds: float) -> str:
    if not rows:
        return f"no rows ({milliseconds} ms)"
    cells = [["null" if value is None else str(value) for value in row] for row in rows]
    widths = [len(column) for column in columns]
    for row in cells:
        widths = [max(width, len(cell)) for width, cell in zip(widths, row, strict=True)]
    widths = [min(width, MAX_WIDTH) for width in widths]

    def line(values: list[str]) -> str:
        return "  ".join(value[:MAX_WIDTH].ljust(width) for value, width in zip(values, widths, strict=True)).rstrip()

    lines = [line(columns), line(["-" * width for width in widths])] + [line(row) for row in cells]
    lines.append(f"{len(rows)} rows{' (truncated at the row cap)' if truncated else ''}, {milliseconds} ms")
    return "\n".join(lines)
