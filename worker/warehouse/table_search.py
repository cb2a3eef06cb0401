"""What table search reads, kept in step with the metadata: each table's words as full-text
fields and one vector of its text, rewritten only when that text changes.

A table is found through its name and schema, its columns, their descriptions and the business
terms tagged on it or on its columns, all read as words (`work_orders` → "work orders"). A
date-sharded family (`ga_sessions_20160801` … `ga_sessions_20170801`) is searched through its
newest member, which carries the family's pattern and size: the other members hold no search
text and no vector, so 366 copies of one table never crowd the answer. Vectors are stored as
float32 (`db.create.setNodeVectorProperty`), the vector indexes' type; identical texts are
embedded once per refresh.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from neo4j import Driver

from worker.embedding.base import Embedder
from worker.graph.content import content_hash
from worker.graph.schema import EMBEDDING_PROPERTY, TABLE_SEARCH_FIELDS, Label, Rel
from worker.shared.words import family, unsharded, words

# Every table of the given schemas (all with $schemas null) with the text it is searched by.
TABLES = f"""
MATCH (s:{Label.SCHEMA})-[:{Rel.HAS_TABLE}]->(t:{Label.TABLE})
WHERE $schemas IS NULL OR s.id IN $schemas
CALL (t) {{
  OPTIONAL MATCH (t)-[:{Rel.HAS_COLUMN}]->(c:{Label.COLUMN})
  WITH c ORDER BY c.position
  RETURN collect(c.name) AS columns, collect(DISTINCT c.description) AS notes
}}
CALL (t) {{
  OPTIONAL MATCH (t)-[:{Rel.HAS_COLUMN}*0..1]->()-[:{Rel.TAGGED_WITH}]->(b:{Label.BUSINESS_TERM})
  WITH DISTINCT b ORDER BY b.name
  RETURN collect(b.name) + reduce(all = [], x IN collect(coalesce(b.synonyms, [])) | all + x) AS terms
}}
RETURN t.id AS id, t.name AS name, s.name AS schema, t.description AS description, columns, notes, terms,
       t.search_hash AS search_hash, t.embedding_hash AS embedding_hash
"""
WRITE_SEARCH = f"""
UNWIND $rows AS r
MATCH (t:{Label.TABLE} {{id: r.id}})
SET t += r.fields, t.search_hash = r.hash
"""
DROP_VECTORS = f"UNWIND $ids AS id MATCH (t:{Label.TABLE} {{id: id}}) REMOVE t.{EMBEDDING_PROPERTY}, t.embedding_hash"
TERM_TEXTS = f"""
MATCH (b:{Label.BUSINESS_TERM})
RETURN b.id AS id, b.embedding_hash AS hash, [b.name, coalesce(b.description, ''), 'also: ' + reduce(s = '', x IN coalesce(b.synonyms, []) | s + ' ' + x)] AS parts
"""
WRITE_VECTORS = """
UNWIND $rows AS r
MATCH (n:{label} {{id: r.id}})
CALL db.create.setNodeVectorProperty(n, $property, r.vector)
SET n.embedding_hash = r.hash
"""
BATCH = 256
# A table's vector reads its name, description, terms and this many of its columns: past them a
# wide table's text is truncated by the model anyway, and each extra token costs embedding time.
VECTOR_COLUMNS = 40


def text_of(parts: list[str]) -> str:
    return ". ".join(part.strip() for part in parts if part and part.strip())


@dataclass(frozen=True)
class TableText:
    """One table's searchable text: the full-text fields, and the text its vector is made of
    (None: a family member searched through another)."""

    id: str
    fields: dict[str, Any]
    vector_text: str | None

    @classmethod
    def of(cls, row: Any, members: int) -> TableText:
        name = " ".join(words(unsharded(row["name"]) if members > 1 else row["name"]))
        columns = [" ".join(words(column)) for column in row["columns"]]
        fields: dict[str, Any] = {
            "search_name": " ".join([*words(row["schema"]), name]),
            "search_columns": " | ".join(columns),
            "search_notes": " | ".join(row["notes"]) or None,
            "search_terms": " | ".join(row["terms"]) or None,
            "family": family(row["id"]) if members > 1 else None,
            "shards": members if members > 1 else None,
        }
        vector_text = text_of([name, row["description"] or "", ", ".join(row["terms"]), "columns: " + ", ".join(columns[:VECTOR_COLUMNS])])
        return cls(row["id"], fields, vector_text)

    @classmethod
    def hidden(cls, table_id: str) -> TableText:
        return cls(table_id, dict.fromkeys(TABLE_SEARCH_FIELDS) | {"family": None, "shards": None}, None)


def table_texts(rows: list[Any]) -> list[tuple[Any, TableText]]:
    """Each table's text; of a date-sharded family (two or more members) only the newest member
    is searched, as the family."""
    families: dict[str, list[Any]] = defaultdict(list)
    for row in rows:
        families[family(row["id"])].append(row)
    texts = []
    for members in families.values():
        newest = max(members, key=lambda row: row["id"])
        for row in members:
            texts.append((row, TableText.of(row, len(members)) if row is newest else TableText.hidden(row["id"])))
    return texts


@dataclass
class SearchReport:
    written: int = 0  # tables whose search text changed
    embedded: dict[str, int] = field(default_factory=dict)  # vectors computed, per label
    unchanged: int = 0


class TableSearchRefresher:
    def __init__(self, driver: Driver, database: str, embedder: Embedder | None) -> None:
        self.driver = driver
        self.database = database
        self.embedder = embedder

    def refresh(self, schemas: list[str] | None = None) -> SearchReport:
        """Bring the search text (and, with an embedder, the vectors) of the tables of `schemas`
        (schema ids; None: every table) and of every business term in step with the graph."""
        report = SearchReport()
        rows = self.driver.execute_query(TABLES, schemas=schemas, database_=self.database).records
        search_rows, stale, hidden = [], [], []
        for row, text in table_texts(rows):
            digest = content_hash(text.fields)
            if digest != row["search_hash"]:
                search_rows.append({"id": text.id, "fields": text.fields, "hash": digest})
            if self.embedder is None:
                continue
            if text.vector_text is None:
                if row["embedding_hash"] is not None:
                    hidden.append(text.id)
                continue
            vector_digest = content_hash([self.embedder.name, text.vector_text])
            if vector_digest == row["embedding_hash"]:
                report.unchanged += 1
            else:
                stale.append((text.id, text.vector_text, vector_digest))
        for start in range(0, len(search_rows), BATCH):
            self.driver.execute_query(WRITE_SEARCH, rows=search_rows[start : start + BATCH], database_=self.database)
        if hidden:
            self.driver.execute_query(DROP_VECTORS, ids=hidden, database_=self.database)
        report.written = len(search_rows)
        if self.embedder is not None:
            report.embedded[str(Label.TABLE)] = self._embed(Label.TABLE, stale)
            terms = []
            for row in self.driver.execute_query(TERM_TEXTS, database_=self.database).records:
                term_text = text_of(row["parts"])
                digest = content_hash([self.embedder.name, term_text])
                if digest == row["hash"]:
                    report.unchanged += 1
                else:
                    terms.append((row["id"], term_text, digest))
            report.embedded[str(Label.BUSINESS_TERM)] = self._embed(Label.BUSINESS_TERM, terms)
        return report

    def _embed(self, label: Label, stale: list[tuple[str, str, str]]) -> int:
        """Vectors for (id, text, hash) rows, each distinct text embedded once; returns how many were embedded."""
        assert self.embedder is not None
        if not stale:
            return 0
        distinct = list(dict.fromkeys(text for _, text, _ in stale))
        vectors = dict(zip(distinct, self.embedder.embed(distinct), strict=True))
        rows = [{"id": node_id, "hash": digest, "vector": vectors[text]} for node_id, text, digest in stale]
        for start in range(0, len(rows), BATCH):
            self.driver.execute_query(WRITE_VECTORS.format(label=label), rows=rows[start : start + BATCH], property=EMBEDDING_PROPERTY, database_=self.database)
        return len(distinct)
