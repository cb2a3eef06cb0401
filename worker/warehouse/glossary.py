"""The business glossary: BusinessTerm nodes tagged onto tables and columns, following one TOML file.

Terms are keyed by their lower-cased name and record their source; a sync makes the source's own
terms match the file exactly (terms and tags removed from the file disappear), and leaves the terms
of any other source alone. A name two sources define belongs to the one that comes first (the
file, then Knowledge Catalog glossaries by name), whichever synced last: the other's definition is
reported as shadowed, so no order of syncs flips the term between them. A tag names a table or column by its full id or by
its tail (`service.work_orders.is_comeback`); a tag that matches nothing, or more than one thing,
is kept on the term as `unresolved_tags` and reported.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from neo4j import Driver, ManagedTransaction
from pydantic import BaseModel, ConfigDict, ValidationError

from worker.exceptions import LakegraphError
from worker.graph.content import content_hash
from worker.graph.schema import Label, Rel
from worker.graph.stamps import stamp


class Term(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    description: str = ""
    synonyms: list[str] = []
    tags: list[str] = []
    identifier: bool = False  # its tagged columns hold identifiers: their values are bridged to documents

    @property
    def id(self) -> str:
        return " ".join(self.name.lower().split())


class GlossaryFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    term: list[Term] = []


def read(path: Path) -> list[Term]:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        terms = GlossaryFile.model_validate(data).term
    except OSError as err:
        raise LakegraphError(f"cannot read the glossary {path}: {err.strerror}") from None
    except tomllib.TOMLDecodeError as err:
        raise LakegraphError(f"glossary {path} is not valid TOML: {err}") from None
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise LakegraphError(f"glossary {path}: {where}: {first['msg']}") from None
    names = [term.id for term in terms]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise LakegraphError(f"glossary {path}: terms defined twice: {', '.join(duplicates)}")
    return terms


MATCH_TAGS = f"""
UNWIND $tags AS tag
CALL (tag) {{
  MATCH (t:{Label.TABLE}) WHERE t.id = tag OR t.id ENDS WITH '.' + tag RETURN t.id AS id
  UNION
  MATCH (c:{Label.COLUMN}) WHERE c.id = tag OR c.id ENDS WITH '.' + tag RETURN c.id AS id
}}
RETURN tag, collect(id) AS ids
"""
UPSERT_TERMS = f"""
UNWIND $rows AS r
MERGE (b:{Label.BUSINESS_TERM} {{id: r.id}})
WITH b, r WHERE b.content_hash IS NULL OR b.content_hash <> r.hash
SET b += r.props, b.content_hash = r.hash, b.updated_at = datetime()
"""
# A sync owns only the terms of its own source (terms written before sources were recorded count
# as the file's): another glossary source's terms and tags are never removed by this one.
OWNED = "coalesce(b.source, $default_source) = $source"
DELETE_OTHER_TERMS = f"MATCH (b:{Label.BUSINESS_TERM}) WHERE {OWNED} AND NOT b.id IN $ids DETACH DELETE b"
DROP_TAGS = f"MATCH ()-[r:{Rel.TAGGED_WITH}]->(b:{Label.BUSINESS_TERM}) WHERE {OWNED} DELETE r"
TAG = {
    label: f"""
    UNWIND $rows AS r
    MATCH (n:{label} {{id: r.node}})
    MATCH (b:{Label.BUSINESS_TERM} {{id: r.term}})
    MERGE (n)-[:{Rel.TAGGED_WITH}]->(b)
    """
    for label in (Label.TABLE, Label.COLUMN)
}
FILE_SOURCE = "file"  # the TOML glossary file (`warehouse.glossary_path`)
SOURCES = f"MATCH (b:{Label.BUSINESS_TERM}) WHERE b.source STARTS WITH $prefix RETURN collect(DISTINCT b.source) AS sources"
TABLE_IDS = f"UNWIND $ids AS id MATCH (t:{Label.TABLE} {{id: id}}) RETURN t.id AS id"
OWNERS = f"UNWIND $ids AS id MATCH (b:{Label.BUSINESS_TERM} {{id: id}}) RETURN b.id AS id, coalesce(b.source, $default_source) AS source"


def precedence(source: str) -> tuple[bool, str]:
    """Which source a term two sources define belongs to: the lower, the file before the rest."""
    return (source != FILE_SOURCE, source)


@dataclass
class GlossaryReport:
    terms: int = 0
    tagged: int = 0
    unresolved: dict[str, list[str]] = field(default_factory=dict)  # term -> tags that matched nothing (or too much)
    shadowed: dict[str, str] = field(default_factory=dict)  # term -> the source whose definition it has (see precedence)

    def problem_text(self, unresolved_means: str) -> str:
        """What is wrong with the source's terms, as a problem's reason says it ("" if nothing)."""
        parts = []
        if self.unresolved:
            parts.append(f"{unresolved_means}: " + "; ".join(f"{term}: {', '.join(tags)}" for term, tags in sorted(self.unresolved.items())))
        if self.shadowed:
            parts.append(
                "defined first by another glossary, whose definition holds: " + "; ".join(f"{term} ({owner})" for term, owner in sorted(self.shadowed.items()))
            )
        return "; ".join(parts)


def sync(driver: Driver, database: str, terms: list[Term], source: str = FILE_SOURCE) -> GlossaryReport:
    """Make the terms of one glossary source match `terms`; other sources' terms stay as they are."""
    with driver.session(database=database) as session:
        return session.execute_write(_sync, terms, source)


def _sync(tx: ManagedTransaction, terms: list[Term], source: str) -> GlossaryReport:
    report = GlossaryReport(terms=len(terms))
    owners = {row["id"]: row["source"] for row in tx.run(OWNERS, ids=[term.id for term in terms], default_source=FILE_SOURCE)}
    report.shadowed = {term.name: owner for term in terms if (owner := owners.get(term.id, source)) != source and precedence(owner) < precedence(source)}
    terms = [term for term in terms if term.name not in report.shadowed]
    all_tags = sorted({tag for term in terms for tag in term.tags})
    matches = {row["tag"]: row["ids"] for row in tx.run(MATCH_TAGS, tags=all_tags)}
    rows, tag_rows = [], []
    for term in terms:
        unresolved = [tag for tag in term.tags if len(matches.get(tag, [])) != 1]
        if unresolved:
            report.unresolved[term.name] = unresolved
        props = {
            "name": term.name,
            "description": term.description,
            "synonyms": term.synonyms,
            "tags": term.tags,
            "identifier": term.identifier,
            "unresolved_tags": unresolved,
            "source": source,
        }
        rows.append({"id": term.id, "props": props, "hash": content_hash(props)})
        tag_rows += [{"node": matches[tag][0], "term": term.id} for tag in term.tags if tag not in unresolved]
    owned = {"source": source, "default_source": FILE_SOURCE}
    tx.run(DELETE_OTHER_TERMS, {"ids": [term.id for term in terms], **owned}).consume()
    tx.run(UPSERT_TERMS, rows=rows).consume()
    tx.run(DROP_TAGS, owned).consume()
    tables = {row["id"] for row in tx.run(TABLE_IDS, ids=[row["node"] for row in tag_rows])}
    tx.run(TAG[Label.TABLE], rows=[row for row in tag_rows if row["node"] in tables]).consume()
    tx.run(TAG[Label.COLUMN], rows=[row for row in tag_rows if row["node"] not in tables]).consume()
    report.tagged = len(tag_rows)
    stamp(tx, "glossary")
    return report


def sources(driver: Driver, database: str, prefix: str) -> list[str]:
    """The glossary sources whose terms the graph holds, of those starting with `prefix`."""
    return list(driver.execute_query(SOURCES, prefix=prefix, database_=database).records[0]["sources"])
