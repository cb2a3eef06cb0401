"""Which of many warehouse values a text mentions, by the one whole-token rule coverage uses.

`token_pattern(value)` says a value is mentioned where it occurs case-insensitively with no word
character touching it on either side. Run as one regular expression per value, that costs a pass
over every text per value — hours for 100,000 values over 100,000 sections. A bridged value
starts and ends with a word character (`bridgeable`), so every place it occurs begins where a
word begins and ends where a word ends: the matcher walks the text's words once and looks up each
run of up to as many words as the longest value has, which finds exactly what the pattern finds.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable

WORD = re.compile(r"\w+")


def bridgeable(value: str) -> bool:
    """A value that can only occur as a run of whole words: it starts and ends with a word character."""
    return bool(value) and WORD.match(value[0]) is not None and WORD.match(value[-1]) is not None


class ValueMatcher:
    def __init__(self, values: Iterable[str]) -> None:
        self._values: dict[str, list[str]] = defaultdict(list)  # lower-cased -> the values spelled so
        self._first_words: set[str] = set()
        self.longest = 1  # words in the longest value
        for value in sorted(set(values)):
            if not bridgeable(value):
                continue
            words = WORD.findall(value.lower())
            self._values[value.lower()].append(value)
            self._first_words.add(words[0])
            self.longest = max(self.longest, len(words))

    def __len__(self) -> int:
        return sum(len(spellings) for spellings in self._values.values())

    def mentions(self, text: str) -> Counter[str]:
        """Each value the text mentions, with how many times (non-overlapping, as the pattern counts)."""
        found: Counter[str] = Counter()
        if not self._values or not text:
            return found
        spans = [match.span() for match in WORD.finditer(text)]
        ends: dict[str, int] = {}  # where each value's last counted occurrence ended
        for index, (start, first_end) in enumerate(spans):
            if text[start:first_end].lower() not in self._first_words:
                continue
            for _, end in spans[index : index + self.longest]:
                spellings = self._values.get(text[start:end].lower())
                if spellings is None or ends.get(spellings[0], -1) > start:
                    continue
                ends[spellings[0]] = end
                for value in spellings:
                    found[value] += 1
        return found
