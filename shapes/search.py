"""The search shape: Lucene full-text over documents and sections (never folders), scoped to a
URI subtree, with caller-supplied expansion terms OR-ed in.

Scoping filters the complete ranked stream before taking k, so a scoped search returns k hits
whenever k exist below the scope — not whatever of a global top-k happens to fall inside it.
User text is escaped: Lucene operators in a query are words, never syntax errors.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pydantic import Field

from shapes.access.scope import narrowed, visible
from shapes.spec import Params, ShapeSpec, Words
from shapes.spec.exceptions import ShapeError
from worker.graph import document_text
from worker.graph.schema import DOCUMENT_TEXT_INDEX, Label
from worker.shared.tokens import any_token_pattern

if TYPE_CHECKING:
    from neo4j import Driver

    from worker.shared.grants import Grant

MAX_QUERY = 1000
MAX_K = 200
SNIPPET = 80
GRANT_MARGIN = 8  # within a grant, the index's best GRANT_MARGIN * k hits are filtered first
_LUCENE_SPECIAL = re.compile(r'([+\-!(){}\[\]^"~*?:\\/]|&&|\|\|)')
_WORD = re.compile(r"\w")
_RESERVED = {"AND", "OR", "NOT", "TO"}

SEARCH = f"""
CALL db.index.fulltext.queryNodes('{DOCUMENT_TEXT_INDEX}', $lucene, $options) YIELD node, score
WHERE node.uri STARTS WITH $under AND {visible("node.uri")}
WITH node, score LIMIT $k
OPTIONAL MATCH (d:{Label.DOCUMENT} {{uri: split(node.uri, '#')[0]}})
RETURN node.uri AS uri, node.displayName AS name, [label IN labels(node) WHERE label IN ['Document', 'Section']][0] AS kind,
       node.text AS text, score, d.displayName AS document
"""


@dataclass(frozen=True)
class Hit:
    uri: str
    kind: str
    name: str
    breadcrumb: str
    snippet: str
    score: float


@dataclass(frozen=True)
class SearchResult:
    query: str
    under: str | None
    expand: list[str]
    lucene: str
    hits: list[Hit] = field(default_factory=list)


def escape(text: str) -> str:
    """Lucene syntax in user text becomes plain words."""
    words = []
    for word in text.split():
        escaped = _LUCENE_SPECIAL.sub(r"\\\1", word)
        words.append(escaped.lower() if word in _RESERVED else escaped)
    return " ".join(words)


def _ranked(driver: Driver, database: str, found: tuple[str, dict[str, int]], under: str | None, k: int, grant: Grant) -> list:
    """The best k hits of the index query `found` (Lucene, options) under `under` the grant sees."""
    return driver.execute_query(SEARCH, lucene=found[0], options=found[1], under=under or "", k=k, **grant.cypher(), database_=database).records


def search(driver: Driver, database: str, query: str, under: str | None, k: int, expand: list[str], grant: Grant) -> SearchResult:
    """The k best hits at or below `under` that the grant sees (filtered in the ranked stream, so
    a restricted caller still gets k when k exist within its grant)."""
    expand = [term for term in expand if term.strip()]
    if not query.strip():
        raise ShapeError("empty query: give some words to search for")
    if len(query) > MAX_QUERY or any(len(term) > MAX_QUERY for term in expand):
        raise ShapeError(f"query too long (at most {MAX_QUERY} characters)")
    if not 1 <= k <= MAX_K:
        raise ShapeError(f"k must be between 1 and {MAX_K}, got {k}")
    parts = [escape(query)] + [escape(term) for term in expand]
    lucene = " OR ".join(f"({part})" for part in parts if part)
    found = narrowed(lucene, under, grant, k)
    if found is None:
        return SearchResult(query, under, expand, lucene)
    if under or grant.everything:
        records = _ranked(driver, database, found, under, k, grant)
    else:
        # Unscoped within a grant: first the best GRANT_MARGIN * k hits of the whole index (Lucene
        # ranks only those, as for the local user) filtered to the grant; only when fewer than k
        # of them are in it, every hit of the grant's own phrase (p95 20 -> 12 ms at 10k documents,
        # a grant of half the library).
        best = (document_text.scoped(lucene, None), document_text.index_options(None, GRANT_MARGIN * k))
        records = _ranked(driver, database, best, None, k, grant)
        if len(records) < k:
            records = _ranked(driver, database, found, None, k, grant)
    words = [word for part in [query, *expand] for word in re.findall(r"\w+", part.lower())]
    hits = [
        Hit(
            uri=row["uri"],
            kind=row["kind"],
            name=row["name"] or row["uri"],
            breadcrumb=_breadcrumb(row["uri"], row["document"]),
            snippet=_snippet(row["text"] or row["name"] or "", words),
            score=round(row["score"], 4),
        )
        for row in records
    ]
    return SearchResult(query, under, expand, lucene, hits)


def _breadcrumb(uri: str, document: str | None) -> str:
    path, _, heading = uri.partition("#")
    crumbs = path.split("/")[:-1] + [document or path.rsplit("/", 1)[-1]] + (heading.split("/") if heading else [])
    return " › ".join(crumbs)


def _snippet(text: str, words: list[str]) -> str:
    """A window of text around the first match, with matched words in «» — whole tokens only, the
    rule coverage counts by, so `1` is never marked inside `017`."""
    flat = " ".join(text.split())
    pattern = any_token_pattern(words) if words else None
    first = pattern.search(flat) if pattern else None
    start = _token_edge(flat, max(0, first.start() - SNIPPET) if first else 0)
    window = flat[start : _token_edge(flat, start + 2 * SNIPPET + 40)]
    if pattern:
        window = pattern.sub(lambda match: f"«{match.group(0)}»", window)
    return ("…" if start else "") + window + ("…" if start + len(window) < len(flat) else "")


def _token_edge(text: str, at: int) -> int:
    """`at`, moved back to the start of the token it falls inside, so a snippet cuts no ordinary
    token (a token longer than a snippet is cut where it must be)."""
    at = min(at, len(text))
    for back in range(at, max(0, at - SNIPPET // 2), -1):
        if back == len(text) or not (_WORD.match(text[back - 1]) and _WORD.match(text[back])):
            return back
    return at


def render(result: SearchResult) -> str:
    scope = f" under {result.under}" if result.under else ""
    lines = [f"{len(result.hits)} hits for {result.query!r}{scope}" + (f" (+ {', '.join(result.expand)})" if result.expand else "")]
    for hit in result.hits:
        lines += [f"{hit.score:>7.3f}  {hit.name}  [{hit.kind}]  {hit.uri}", f"         {hit.breadcrumb}", f"         {hit.snippet}"]
    return "\n".join(lines)


class SearchParams(Params):
    query: Words = Field(description="Words to find; Lucene syntax is treated as plain text", max_length=MAX_QUERY)
    under: str | None = Field(None, description="Only hits at or below this URI (a library, folder or document)")
    k: int = Field(10, ge=1, le=MAX_K, description="Hits to return")
    expand: list[str] = Field([], description="Synonyms or related phrasings, OR-ed in: ['rough idle', 'shudder']")


SPEC = ShapeSpec(
    name="search",
    purpose="Full-text search over documents and sections, scoped to a URI subtree.",
    guide="Still k hits inside the scope. Pass expand with synonyms you know; each hit has its URI, breadcrumb and a highlighted snippet.",
    params=SearchParams,
    output=SearchResult,
    refers={"uri": "outline"},
    run=lambda shapes, p, grant: search(shapes.driver, shapes.database, p.query, p.under or None, p.k, p.expand, grant),
    scoped=True,
    render=render,
    rows=("hits",),
    needs="documents",
    arguments=("query",),
)
