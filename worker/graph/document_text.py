"""Queries of the document text index (`schema.DOCUMENT_TEXT_INDEX`): words are matched in the text
fields only, and a scope is narrowed inside Lucene by the `uri` field, so a call scoped to one
library or folder reads that scope's hits, not every library's.

The scope clause is a phrase of the scope's complete path segments. Lucene analyzes it as it
analyzed every uri, and `/` and `#` always end a token, so each uri under the scope holds that
phrase: the clause never drops a node in scope. It may keep a few outside it (the same words
deeper in another path); the caller's `uri STARTS WITH` decides, exactly as before.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from worker.graph.schema import DOCUMENT_SCOPE_FIELD, DOCUMENT_TEXT_FIELDS

SEGMENT_ENDS = "/#"
# Cypher for a node's text as coverage and the bridge read it (its display name, name and text),
# so the two always agree on what is mentioned; `node_text` is the same in Python.
NODE_TEXT = "coalesce({node}.displayName, '') + '\\n' + coalesce({node}.name, '') + '\\n' + coalesce({node}.text, '')"


def node_text(props: Mapping[str, object]) -> str:
    return f"{props.get('displayName') or ''}\n{props.get('name') or ''}\n{props.get('text') or ''}"


def in_text(lucene: str) -> str:
    """`lucene` matched in the text fields only (never in a node's uri)."""
    return " OR ".join(f"{field}:({lucene})" for field in DOCUMENT_TEXT_FIELDS)


def scoped(lucene: str, under: str | None) -> str:
    """`lucene` in the text fields, narrowed to the nodes whose uri holds `under`'s complete
    segments (a partial last segment, `lib/gui` of `lib/guide/`, is left to the caller's check)."""
    text = in_text(lucene)
    complete = (under or "")[: max((under or "").rfind(end) for end in SEGMENT_ENDS) + 1]
    if not any(char.isalnum() for char in complete):  # no token to narrow by
        return text
    return f'+({text}) +{DOCUMENT_SCOPE_FIELD}:"{_phrase(complete)}"'


def within(lucene: str, prefixes: Sequence[str]) -> str:
    """`lucene` in the text fields, narrowed to the nodes at or below any of `prefixes` (a grant's
    URI prefixes, whole segments each): the same phrase rule as `scoped`, one clause per prefix."""
    phrases = " ".join(f'{DOCUMENT_SCOPE_FIELD}:"{_phrase(prefix)}"' for prefix in prefixes)
    return f"+({in_text(lucene)}) +({phrases})"


def _phrase(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def index_options(under: str | None, limit: int) -> dict[str, int]:
    """`db.index.fulltext.queryNodes` options for a query whose caller keeps its best `limit` hits.
    Unscoped, nothing filters the hits after the index, so Lucene itself keeps only the best
    `limit` instead of ranking every hit (a common word at 100k documents: p50 42 -> 21 ms). A
    scoped query ranks every hit in scope: the caller's `STARTS WITH` may still drop a few."""
    return {} if under else {"limit": limit}
