"""A page as text lines with where they sit: the raw material for headings, furniture and links.

pypdf reports text in fragments with their text and current transformation matrices; a fragment
ending in a newline ends a line. Each line keeps the baseline of its first visible fragment and
the largest font size drawn on it (0 when the producer's matrices hide it).
"""

from __future__ import annotations

from dataclasses import dataclass

from pypdf import PageObject


@dataclass(frozen=True)
class Line:
    page: int
    y: float  # baseline in PDF user space: larger is higher on the page
    size: float
    text: str


def page_lines(page: PageObject, index: int) -> list[Line]:
    lines: list[Line] = []
    parts: list[str] = []
    where: list[float | None] = [None, 0.0]  # y of the first visible fragment, largest size

    def end_line() -> None:
        text = " ".join("".join(parts).split())
        if text:
            lines.append(Line(index, where[0] if where[0] is not None else 0.0, round(where[1], 1), text))
        parts.clear()
        where[:] = [None, 0.0]

    def visit(text: str, cm: list[float], tm: list[float], font: object, size: float) -> None:
        pieces = text.split("\n")
        for number, piece in enumerate(pieces):
            if number:
                end_line()
            if piece.strip():
                if where[0] is None:
                    where[0] = tm[4] * cm[1] + tm[5] * cm[3] + cm[5]
                scale = abs(tm[3] * cm[3] + tm[1] * cm[2]) or 1.0
                where[1] = max(where[1], (size or 0.0) * scale)
            parts.append(piece)

    page.extract_text(visitor_text=visit)
    end_line()
    return lines
