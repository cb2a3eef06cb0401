"""Identifiers read as words, the one way both sides of table search split them.

The write side indexes a table's name and columns as these words (`work_orders` → "work
orders", `customerID` → "customer id"), so a question's words meet them; the read side splits
a question the same way and says which columns its words matched. Lucene's English analyzer
stems both sides inside the index; `stem` is the small rule the read side uses to explain a hit.
"""

from __future__ import annotations

import re

_CHUNKS = re.compile(r"[^\W_]+")
# Inside an ASCII chunk: an acronym before a capitalised word (HTTPServer), a capitalised or
# lower-case word, a run of capitals, a run of digits.
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
# BigQuery's date-sharded tables end in YYYYMMDD (`ga_sessions_20170801`); a query names the
# family with a wildcard (`ga_sessions_*`), and the family answers as one table.
_SHARD = re.compile(r"(?:19|20)\d{6}$")
# Words that carry no meaning of their own in a question about data.
STOP_WORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "do",
        "does",
        "for",
        "from",
        "has",
        "have",
        "how",
        "i",
        "in",
        "into",
        "is",
        "it",
        "its",
        "me",
        "my",
        "of",
        "on",
        "or",
        "our",
        "per",
        "show",
        "so",
        "than",
        "that",
        "the",
        "their",
        "them",
        "there",
        "these",
        "they",
        "this",
        "those",
        "to",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
        "each",
        "all",
        "any",
        "many",
        "much",
        "list",
        "give",
        "find",
        "get",
    ]
)


def words(text: str) -> list[str]:
    """Lower-case words of an identifier or a sentence: snake_case, camelCase, digits and
    punctuation split; a non-ASCII word (`Fahrzeug`, `車両`) kept whole."""
    found: list[str] = []
    for chunk in _CHUNKS.findall(text):
        parts = _CAMEL.findall(chunk) if chunk.isascii() else [chunk]
        found.extend(part.lower() for part in parts)
    return found


def stem(word: str) -> str:
    """Plural and -ing forms folded (`vehicles` → `vehicle`, `categories` → `category`): enough
    to say which column a question's word matched."""
    for suffix, replacement in (("ies", "y"), ("sses", "ss"), ("ses", "s"), ("ing", "")):
        if word.endswith(suffix) and len(word) > len(suffix) + 2:
            return word[: -len(suffix)] + replacement
    if word.endswith("s") and not word.endswith(("ss", "us", "is")) and len(word) > 3:
        return word[:-1]
    return word


def meaningful(text: str) -> list[str]:
    """A question's words without stop words, in order, each once."""
    return list(dict.fromkeys(word for word in words(text) if word not in STOP_WORDS))


def family(table_id: str) -> str:
    """The id a date-sharded table answers under (`...ga_sessions_*`); any other table's own id."""
    return _SHARD.sub("*", table_id)


def unsharded(name: str) -> str:
    """A table name without its shard date: the family's name, as its members' text says it."""
    return _SHARD.sub("", name).rstrip("_") or name
