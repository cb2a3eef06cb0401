"""The coverage shape: which identifiers (fault codes, part numbers, terms) no document mentions.

A term counts as mentioned only where it occurs as a whole token sequence — `P0301` is not found
in `P03011`, `12345-AB` is found in "replace 12345-AB now" — in a document's or section's name
or text. Full-text narrows the candidates (a phrase query), an exact token match on the stored
text decides, so the negative is proved, not guessed from similarity.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from neo4j import Driver
from pydantic import Field

from shapes.errors import ShapeError
from shapes.spec import Params, ShapeSpec
from shapes.search import escape
from worker.documents.tokens import token_pattern
from worker.graph.schema import DOCUMENT_TEXT_INDEX

MAX_TERMS = 500
MAX_TERM = 200
CANDIDATES = 2000
MAX_URIS = 25

CANDIDATE_NODES = f"""
CALL db.index.fulltext.queryNodes('{DOCUMENT_TEXT_INDEX}', $lucene, {{limit: $limit}}) YIELD node
WHERE node.uri STARTS WITH $under
RETURN node.uri AS uri, coalesce(node.displayName, '') + '\\n' + coalesce(node.name, '') + '\\n' + coalesce(node.text, '') AS text
"""


@dataclass(frozen=True)
class CoverageResult:
    terms: list[str]
    under: str | None
    missing: list[str] = field(default_factory=list)
    found: dict[str, list[str]] = field(default_factory=dict)  # term -> uris (at most MAX_URIS)
    mentions: dict[str, int] = field(default_factory=dict)  # term -> how many documents/sections mention it


def coverage(driver: Driver, database: str, terms: list[str], under: str | None) -> CoverageResult:
    cleaned = list(dict.fromkeys(term.strip() for term in terms if term.strip()))
    if not cleaned:
        raise ShapeError("no terms: give identifiers such as fault codes or part numbers")
    if len(cleaned) > MAX_TERMS:
        raise ShapeError(f"too many terms ({len(cleaned)}; at most {MAX_TERMS} per call)")
    if any(len(term) > MAX_TERM for term in cleaned):
        raise ShapeError(f"a term is longer than {MAX_TERM} characters")
    result = CoverageResult(cleaned, under)
    for term in cleaned:
        pattern = token_pattern(term)
        rows = driver.execute_query(
            CANDIDATE_NODES, lucene=f'"{escape(term)}"', limit=CANDIDATES, under=under or "", database_=database,
        ).records
        uris = sorted(row["uri"] for row in rows if pattern.search(row["text"]))
        if uris:
            result.found[term] = uris[:MAX_URIS]
            result.mentions[term] = len(uris)
        else:
            result.missing.append(term)
    return result


def render(result: CoverageResult) -> str:
    scope = f" under {result.under}" if result.under else ""
    lines = [f"{len(result.terms)} terms{scope}: {len(result.missing)} mentioned nowhere, {len(result.found)} found"]
    if result.missing:
        lines.append("missing (no document or section mentions them):")
        lines += [f"  {term}" for term in result.missing]
    if result.found:
        lines.append("found:")
        for term, uris in result.found.items():
            more = result.mentions[term] - len(uris)
            lines.append(f"  {term}  ({result.mentions[term]} places)")
            lines += [f"    {uri}" for uri in uris] + ([f"    … and {more} more"] if more else [])
    return "\n".join(lines)


class CoverageParams(Params):
    terms: list[str] = Field(description="Identifiers such as fault codes or part numbers", max_length=MAX_TERMS)
    under: str | None = Field(None, description="Only count mentions at or below this URI")


SPEC = ShapeSpec(
    name="coverage",
    purpose="Which identifiers (fault codes, part numbers) no document or section mentions, and where the others are.",
    guide="An exact token match, so a gap is proved: similarity search cannot do that.",
    params=CoverageParams,
    output=CoverageResult,
    run=lambda shapes, p: coverage(shapes.driver, shapes.database, p.terms, p.under or None),
    render=render,
    rows=("missing", "found", "mentions"),
    needs="documents",
    arguments=("terms",),
)
