"""The coverage shape: which identifiers (fault codes, part numbers, terms) no document mentions.

A term counts as mentioned only where it occurs as a whole token sequence — `P0301` is not found
in `P03011`, `12345-AB` is found in "replace 12345-AB now" — in a document's or section's name
or text. Full-text narrows the candidates (a phrase query), an exact token match on the stored
text decides, so the negative is proved, not guessed from similarity.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated

from pydantic import Field, StringConstraints

from shapes.access.scope import narrowed, visible
from shapes.search import escape
from shapes.spec import Params, ShapeSpec, Words
from shapes.spec.exceptions import ShapeError
from worker.graph.document_text import NODE_TEXT
from worker.graph.schema import DOCUMENT_TEXT_INDEX
from worker.shared.tokens import token_pattern

if TYPE_CHECKING:
    from neo4j import Driver

    from worker.shared.grants import Grant

MAX_TERMS = 500
MAX_TERM = 200
CANDIDATES = 2000
MAX_URIS = 25

# Every term's candidates in one round trip (a term per row): full-text narrows (to the scope too,
# inside Lucene: worker/graph/document_text.py), the caller's exact token match decides. The scope
# filters the hits before they are counted against the cap: capped first (the index's own limit),
# a scoped term whose first hits all lay in other libraries was reported missing at 100k documents.
CANDIDATE_NODES = f"""
UNWIND $terms AS term
CALL (term) {{
  CALL db.index.fulltext.queryNodes('{DOCUMENT_TEXT_INDEX}', term.lucene, $options) YIELD node
  WITH node WHERE node.uri STARTS WITH $under AND {visible("node.uri")}
  LIMIT $limit
  RETURN collect([node.uri, {NODE_TEXT.format(node="node")}]) AS candidates
}}
RETURN term.term AS term, candidates
"""


@dataclass(frozen=True)
class TermFound:
    term: str
    mentions: int  # documents and sections that mention it (at least, when `capped`)
    uris: list[str]  # the first MAX_URIS of them, in URI order
    capped: bool = False  # the candidates reached the cap: more places may mention it


@dataclass(frozen=True)
class CoverageResult:
    asked: int  # distinct terms asked about
    under: str | None
    nowhere: int  # how many no document or section mentions (`missing` may be a page of them)
    somewhere: int  # how many are mentioned (`found` may be a page of them)
    missing: list[str] = field(default_factory=list)
    found: list[TermFound] = field(default_factory=list)


def coverage(driver: Driver, database: str, terms: list[str], under: str | None, grant: Grant, limit: int = CANDIDATES) -> CoverageResult:
    """`limit` caps each term's full-text candidates in scope (a term is checked in at most that
    many places). Within a restricted grant, a term is missing when no place the grant shows
    mentions it."""
    cleaned = list(dict.fromkeys(term.strip() for term in terms if term.strip()))
    if not cleaned:
        raise ShapeError("no terms: give identifiers such as fault codes or part numbers")
    if len(cleaned) > MAX_TERMS:
        raise ShapeError(f"too many terms ({len(cleaned)}; at most {MAX_TERMS} per call)")
    if any(len(term) > MAX_TERM for term in cleaned):
        raise ShapeError(f"a term is longer than {MAX_TERM} characters")
    missing, found = [], []
    queries = {term: narrowed(f'"{escape(term)}"', under, grant, limit) for term in cleaned}
    asked = [{"term": term, "lucene": query[0]} for term, query in queries.items() if query is not None]
    options = next((query[1] for query in queries.values() if query is not None), {})
    rows = driver.execute_query(CANDIDATE_NODES, terms=asked, limit=limit, options=options, under=under or "", **grant.cypher(), database_=database).records
    candidates = {term: [] for term in cleaned} | {row["term"]: row["candidates"] for row in rows}
    for term in cleaned:
        pattern = token_pattern(term)
        uris = sorted(uri for uri, text in candidates[term] if pattern.search(text))
        if uris:
            found.append(TermFound(term, len(uris), uris[:MAX_URIS], len(candidates[term]) >= limit))
        else:
            missing.append(term)
    return CoverageResult(len(cleaned), under, len(missing), len(found), missing, found)


def render(result: CoverageResult) -> str:
    scope = f" under {result.under}" if result.under else ""
    lines = [f"{result.asked} terms{scope}: {result.nowhere} mentioned nowhere, {result.somewhere} found"]
    if result.missing:
        lines.append("missing (no document or section mentions them):")
        lines += [f"  {term}" for term in result.missing]
    if result.found:
        lines.append("found:")
        for row in result.found:
            more = row.mentions - len(row.uris)
            lines.append(f"  {row.term}  ({row.mentions}{'+' if row.capped else ''} places)")
            lines += [f"    {uri}" for uri in row.uris] + ([f"    … and {more} more"] if more else [])
    return "\n".join(lines)


class CoverageParams(Params):
    terms: list[Annotated[Words, StringConstraints(max_length=MAX_TERM)]] = Field(
        description="Identifiers such as fault codes or part numbers", min_length=1, max_length=MAX_TERMS
    )
    under: str | None = Field(None, description="Only count mentions at or below this URI")


SPEC = ShapeSpec(
    name="coverage",
    purpose="Which identifiers (fault codes, part numbers) no document or section mentions, and where the others are.",
    guide="An exact token match, so a gap is proved: similarity search cannot do that.",
    params=CoverageParams,
    output=CoverageResult,
    refers={"uris": "outline"},
    run=lambda shapes, p, grant: coverage(shapes.driver, shapes.database, p.terms, p.under or None, grant),
    render=render,
    rows=("missing", "found"),
    needs="documents",
    arguments=("terms",),
    scoped=True,
)
