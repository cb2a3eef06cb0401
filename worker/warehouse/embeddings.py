"""Vectors for table, column and business-term text, recomputed only when that text changes.

Each node keeps the hash of the text (and model) its vector came from; a refresh reads every
candidate's current text, embeds just those whose hash differs, and writes them in batches.
Vectors are stored as float32 (`db.create.setNodeVectorProperty`), the vector indexes' type.
"""

from __future__ import annotations

from dataclasses import dataclass

from neo4j import Driver

from worker.embedding.base import Embedder
from worker.graph.content import content_hash
from worker.graph.schema import EMBEDDING_PROPERTY, Label, Rel

TABLE_TEXTS = f"""
MATCH (t:{Label.TABLE})
OPTIONAL MATCH (t)-[:{Rel.HAS_COLUMN}]->(c:{Label.COLUMN})
WITH t, c ORDER BY c.position
WITH t, collect(c.name) AS columns
RETURN t.id AS id, t.embedding_hash AS hash,
       [t.name, coalesce(t.description, ''), 'columns: ' + reduce(s = '', name IN columns | s + ' ' + name)] AS parts
"""
COLUMN_TEXTS = f"""
MATCH (t:{Label.TABLE})-[:{Rel.HAS_COLUMN}]->(c:{Label.COLUMN})
RETURN c.id AS id, c.embedding_hash AS hash, [t.name + ' ' + c.name, coalesce(c.type, ''), coalesce(c.description, '')] AS parts
"""
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
SOURCES = {Label.TABLE: TABLE_TEXTS, Label.COLUMN: COLUMN_TEXTS, Label.BUSINESS_TERM: TERM_TEXTS}
BATCH = 256


def text_of(parts: list[str]) -> str:
    """Identifiers read as words: `work_orders` embeds like "work orders"."""
    return ". ".join(part.replace("_", " ").strip() for part in parts if part and part.strip())


@dataclass
class EmbeddingReport:
    embedded: dict[str, int]
    unchanged: int


class EmbeddingRefresher:
    def __init__(self, driver: Driver, database: str, embedder: Embedder) -> None:
        self.driver = driver
        self.database = database
        self.embedder = embedder

    def refresh(self) -> EmbeddingReport:
        embedded: dict[str, int] = {}
        unchanged = 0
        for label, query in SOURCES.items():
            stale = []
            for row in self.driver.execute_query(query, database_=self.database).records:
                text = text_of(row["parts"])
                digest = content_hash([self.embedder.name, text])
                if digest == row["hash"]:
                    unchanged += 1
                else:
                    stale.append((row["id"], text, digest))
            for start in range(0, len(stale), BATCH):
                batch = stale[start : start + BATCH]
                vectors = self.embedder.embed([text for _, text, _ in batch])
                rows = [{"id": node_id, "hash": digest, "vector": vector} for (node_id, _, digest), vector in zip(batch, vectors, strict=True)]
                self.driver.execute_query(WRITE_VECTORS.format(label=label), rows=rows, property=EMBEDDING_PROPERTY, database_=self.database)
            embedded[str(label)] = len(stale)
        return EmbeddingReport(embedded, unchanged)
