"""Whole-token matching: the one rule for "this text mentions that identifier".

A term matches only where no word character touches it on either side: `P0301` is not in `P03011`,
`1` is not in `017`, `12345-AB` is in "replace 12345-AB now". Coverage proves negatives with it and
search snippets highlight with it, so a highlighted word is always one that coverage would count.
"""

from __future__ import annotations

import re
from collections.abc import Iterable


def token_pattern(term: str) -> re.Pattern[str]:
    """The term as a whole token (case-insensitive)."""
    return any_token_pattern([term])


def any_token_pattern(terms: Iterable[str]) -> re.Pattern[str]:
    """Any of the terms as a whole token, longest first so a longer term wins over its prefix."""
    ordered = sorted({term for term in terms if term}, key=lambda term: (-len(term), term))
    alternatives = "|".join(re.escape(term) for term in ordered)
    return re.compile(rf"(?<!\w)(?:{alternatives})(?!\w)", re.IGNORECASE)
