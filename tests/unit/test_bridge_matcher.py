"""The value matcher finds exactly what coverage's whole-token pattern finds, value by value."""

from __future__ import annotations

import re
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from worker.bridge.matcher import ValueMatcher, bridgeable
from worker.shared.tokens import token_pattern

ALPHABET = "aAbB01-. _/\n"
IDENTIFIER = re.compile(r"(?<![\w.-])(?=[\w.-]*\d)(?=[\w.-]*[A-Za-z])\w[\w.-]*\w")
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


def test_the_matcher_agrees_with_the_pattern_on_the_real_estate(powershell_docs: Path) -> None:
    """Real text: 120 PowerShell pages against 250 identifiers taken from them (versions, error
    codes, KB numbers, file names), every count compared with the pattern's."""
    pages = sorted(powershell_docs.rglob("*.md"))[::25][:120]
    texts = [page.read_text(encoding="utf-8", errors="replace") for page in pages]
    found = sorted({match.group(0) for text in texts for match in IDENTIFIER.finditer(text)})
    values = found[:: max(1, len(found) // 250)][:250]
    assert len(values) >= 200
    matcher = ValueMatcher([*values, *(value.lower() for value in values[:20])])  # two spellings of some
    mentioned = 0
    for text in texts:
        counts = matcher.mentions(text)
        for value in values:
            assert counts[value] == len(token_pattern(value).findall(text)), (value, text[:80])
        mentioned += len(counts)
    assert mentioned > 250  # the values do occur: the comparison is not of empty answers
