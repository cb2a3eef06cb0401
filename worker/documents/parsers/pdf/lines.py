"""A page as text lines with where they sit: the raw material for headings, furniture and links.

pypdf reports text in fragments with their text and current transformation matrices; a fragment
ending in a newline ends a line. Each line keeps the baseline of its first visible fragment and
the largest font size drawn on it (0 when the producer's matrices hide it).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pypdf import PageObject


@dataclass(frozen=True)
class Line:
    page: int
    y: float  # baseline in PDF user space: larger is higher on the page
    size: float
    text: str


@dataclass
class _Collector:
    page: int
    lines: list[Line] = field(default_factory=list)
    parts: list[str] = field(default_factory=list)
    y: float | None = None  # baseline of the line's first visible fragment
    size: float = 0.0

    def visit(self, text: str, cm: list[float], tm: list[float], font: object, size: float) -> None:
        for number, piece in enumerate(text.split("\n")):
            if number:
                self.end_line()
            if piece.strip():
                if self.y is None:
                    self.y = tm[4] * cm[1] + tm[5] * cm[3] + cm[5]
                scale = abs(tm[3] * cm[3] + tm[1] * cm[2]) or 1.0
                self.size = max(self.size, (size or 0.0) * scale)
            self.parts.append(piece)

    def end_line(self) -> None:
        text = " ".join("".join(self.parts).split())
        if text:
            self.lines.append(Line(self.page, self.y or 0.0, round(self.size, 1), text))
        self.parts.clear()
        self.y, self.size = None, 0.0


def page_lines(page: PageObject, index: int) -> list[Line]:
    collector = _Collector(index)
    page.extract_text(visitor_text=collector.visit)
    collector.end_line()
    return collector.lines
