"""The value matcher finds exactly what coverage's whole-token pattern finds, value by value."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from worker.bridge.matcher import ValueMatcher, bridgeable
from worker.documents.tokens import token_pattern

ALPHABET = "aAbB01-. _/\n"
values = st.lists(st.text(ALPHABET, min_size=1, max_size=8), min_size=1, max_size=12)
texts = st.text(ALPHABET + "xyz9", max_size=200)


@settings(max_examples=400, deadline=None)
@given(values, texts)
def test_the_matcher_counts_what_the_token_pattern_counts(candidates: list[str], text: str) -> None:
    matcher = ValueMatcher(candidates)
    found = matcher.mentions(text)
    for value in set(candidates):
        expected = len(token_pattern(value).findall(text)) if bridgeable(value) else 0
        assert found[value] == expected, (value, text)


def test_examples_of_the_rule() -> None:
    matcher = ValueMatcher(["P0301", "12345-AB", "12345", "IC-3051", "-x", "a b"])
    assert matcher.mentions("P03011 and p0301, then P0301.") == {"P0301": 2}
    assert matcher.mentions("replace 12345-AB now") == {"12345-AB": 1, "12345": 1}
    assert matcher.mentions("IC-3051B supersedes IC-3051") == {"IC-3051": 1}
    assert matcher.mentions("a b a b a") == {"a b": 2}
    assert "-x" not in matcher.mentions("y -x z")  # not bridgeable: it does not start with a word character
    assert len(matcher) == 5
