"""Search snippets highlight whole tokens only — the rule coverage counts by."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from shapes.search import _snippet
from worker.shared.tokens import token_pattern

MARKED = re.compile(r"«([^»]*)»")


def test_a_digit_inside_a_code_is_not_highlighted() -> None:
    snippet = _snippet("TSB-24-017 Recurring P0301 misfire", ["p0301", "misfire", "cylinder", "1", "misfire"])
    assert snippet == "TSB-24-017 Recurring «P0301» «misfire»"


def test_a_code_is_highlighted_as_a_whole_between_punctuation() -> None:
    assert _snippet("Fit IC-3051B (not IC-3051).", ["ic", "3051"]) == "Fit «IC»-3051B (not «IC»-«3051»)."


def test_the_window_opens_at_the_first_whole_token_match() -> None:
    text = "x" * 300 + " P03011 is another code; " + "y " * 100 + "the P0301 section"
    snippet = _snippet(text, ["p0301"])
    assert "«P0301»" in snippet and "P03011" not in snippet


def test_coverage_and_snippets_agree_on_what_a_token_is() -> None:
    assert token_pattern("1").search("TSB-24-017") is None
    assert token_pattern("017").search("TSB-24-017") is not None


words = st.lists(st.sampled_from(["1", "01", "017", "p0301", "coil", "ic", "a"]), min_size=1, max_size=4)
texts = st.lists(st.sampled_from(["TSB-24-017", "P0301", "P03011", "coil", "coils", "IC-3051", "1", "a1", " ", "-", "(", "017"]), max_size=30)


@given(texts.map(" ".join), words)
def test_every_mark_is_a_whole_token_of_the_query_and_every_whole_token_is_marked(text: str, query: list[str]) -> None:
    snippet = _snippet(text, query)
    plain = snippet.replace("«", "").replace("»", "")
    for match in MARKED.finditer(snippet):
        assert match.group(1).lower() in query
    unmarked = MARKED.sub(lambda match: "\0" * len(match.group(1)), snippet)
    for word in query:
        assert token_pattern(word).search(unmarked) is None, (snippet, word)
    assert plain.strip("…") in " ".join(text.split())


def test_a_long_text_is_never_cut_inside_a_token() -> None:
    text = "coils " * 60 + "coil"
    snippet = _snippet(text, ["coil"])
    assert "«coil»" in snippet and all(word in ("coils", "«coil»") for word in snippet.strip("…").split())
