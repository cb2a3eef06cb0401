"""Queries of the document text index: words in the text fields, a scope as its complete segments."""

from __future__ import annotations

import pytest

from worker.graph.document_text import in_text, scoped

TEXT = 'displayName:("P0301") OR name:("P0301") OR text:("P0301")'


def test_words_are_looked_up_in_the_text_fields_only() -> None:
    assert in_text('"P0301"') == TEXT


@pytest.mark.parametrize(
    ("under", "phrase"),
    [
        ("lib/", "lib/"),
        ("lib/manu", "lib/"),  # a partial last segment is left to the caller's prefix check
        ("lib/manuals/engine#engine/ign", "lib/manuals/engine#engine/"),
        ("lib/manuals/engine#", "lib/manuals/engine#"),
        ('a"b\\c/', 'a\\"b\\\\c/'),  # quotes and backslashes cannot end the phrase
    ],
)
def test_a_scope_narrows_by_its_complete_segments(under: str, phrase: str) -> None:
    assert scoped('"P0301"', under) == f'+({TEXT}) +uri:"{phrase}"'


@pytest.mark.parametrize("under", [None, "", "lib", "//", "-/#"])
def test_a_scope_without_a_complete_word_is_not_narrowed(under: str | None) -> None:
    assert scoped('"P0301"', under) == TEXT
