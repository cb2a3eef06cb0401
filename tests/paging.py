"""Walking a shape's cursor: the pages of one call, and the rows they add up to."""

from __future__ import annotations

from typing import Any

from shapes.serving.service import Answer, Shapes
from shapes.spec.budget import rows_of
from shapes.spec.registry import SPECS


def walk(shapes: Shapes, name: str, **params: Any) -> list[Answer]:
    """Every page of a call, from the first to the one without a next cursor."""
    pages = [shapes.ask(name, **params)]
    while pages[-1].page.next_cursor:
        pages.append(shapes.ask(name, **params, cursor=pages[-1].page.next_cursor))
        assert len(pages) < 100_000, "the cursor does not end"
    return pages


def reassembled(pages: list[Answer]) -> list[tuple[str, Any]]:
    """The rows of the pages in order (an overview page stands for them and adds none)."""
    fields = SPECS[pages[0].shape].rows
    return [row for answer in pages if not answer.page.overview for row in rows_of(answer.result, fields)]
