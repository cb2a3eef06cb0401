"""The document-level link graph's version: a counter the writer bumps, in the transaction that
changes it, whenever some document's outgoing document-to-document links change.

Each Document keeps its outgoing links (target documents with counts: `link_targets`,
`link_counts`) and their signature; after a write, only the documents it touched are re-signed,
so knowing whether the link graph changed costs O(changed documents). Themes read the
document-level graph from these lists (a row per document, not a walk over every section link),
compare one number instead of reading every edge, and find the documents whose links changed by
their `LinksChanged` label; a second counter, of deletions, tells a themes worker that documents
it knew are gone (it then reads the whole graph again).
"""

from __future__ import annotations

from dataclasses import dataclass

from neo4j import ManagedTransaction

from worker.graph.content import content_hash
from worker.graph.schema import Label, Rel

SOURCE_ID = "documents"  # the documents' Source node (see graph.freshness) carries the counter
OUTGOING = f"""
UNWIND $uris AS uri
MATCH (d:{Label.DOCUMENT} {{uri: uri}})
CALL (d) {{
  CALL (d) {{
    MATCH (d)-[:{Rel.LINKS_TO}]->(t) RETURN t
    UNION ALL
    MATCH (:{Label.SECTION} {{doc_uri: d.uri}})-[:{Rel.LINKS_TO}]->(t) RETURN t
  }}
  WITH d, CASE WHEN t:{Label.SECTION} THEN t.doc_uri ELSE t.uri END AS target
  WHERE target <> d.uri
  WITH target, count(*) AS links ORDER BY target
  RETURN collect([target, links]) AS edges
}}
RETURN d.uri AS uri, d.link_signature AS stored, d.link_targets IS NULL AS unlisted, edges
"""
SIGN = f"""
UNWIND $rows AS r
MATCH (d:{Label.DOCUMENT} {{uri: r.uri}})
SET d.link_signature = r.signature, d.link_targets = r.targets, d.link_counts = r.counts, d:{Label.LINKS_CHANGED}
"""
# A store signed before the lists were kept: its signatures stand, the lists are added once (by a
# load), and a themes read walks the links of a document that has none yet.
UNLISTED = "{node}.link_signature IS NOT NULL AND {node}.link_targets IS NULL"
LIST = f"""
UNWIND $rows AS r
MATCH (d:{Label.DOCUMENT} {{uri: r.uri}})
SET d.link_targets = r.targets, d.link_counts = r.counts
"""
SIGNED = f"""
UNWIND $uris AS uri
MATCH (d:{Label.DOCUMENT} {{uri: uri}})
WHERE d.link_signature IS NOT NULL
RETURN count(d) > 0 AS linked
"""
BUMP = f"""
MERGE (s:{Label.SOURCE} {{id: '{SOURCE_ID}'}})
SET s.link_version = coalesce(s.link_version, 0) + 1
"""
COUNT_DELETION = f"""
MERGE (s:{Label.SOURCE} {{id: '{SOURCE_ID}'}})
SET s.deletions = coalesce(s.deletions, 0) + 1
"""
# Both counters and the number of documents (from the count store): what a themes run starts from.
# The count comes first and alone: counted beside other columns it would scan every document.
COUNTERS = f"""
MATCH (d:{Label.DOCUMENT})
WITH count(d) AS documents
OPTIONAL MATCH (s:{Label.SOURCE} {{id: '{SOURCE_ID}'}})
RETURN coalesce(s.link_version, 0) AS version, coalesce(s.deletions, 0) AS deletions, documents
"""


def resign(tx: ManagedTransaction, document_uris: set[str]) -> bool:
    """Re-sign these documents' outgoing links and keep their lists; bump the version if any
    signature changed (a list added to a document whose signature stands changes nothing)."""
    if not document_uris:
        return False
    changed, unlisted = [], []
    for record in tx.run(OUTGOING, uris=sorted(document_uris)):
        edges = record["edges"]
        row = {"uri": record["uri"], "signature": content_hash(edges) if edges else None}  # a document without links keeps no signature
        row |= {"targets": [target for target, _ in edges] or None, "counts": [links for _, links in edges] or None}
        if row["signature"] != record["stored"]:
            changed.append(row)
        elif edges and record["unlisted"]:
            unlisted.append(row)
    if changed:
        tx.run(SIGN, rows=changed).consume()
        tx.run(BUMP).consume()
    if unlisted:
        tx.run(LIST, rows=unlisted).consume()
    return bool(changed)


def forgetting(tx: ManagedTransaction, document_uris: list[str]) -> None:
    """Before deleting documents: their outgoing links leave the graph with them."""
    if not document_uris:
        return
    tx.run(COUNT_DELETION).consume()
    if tx.run(SIGNED, uris=document_uris).single(strict=True)["linked"]:
        tx.run(BUMP).consume()


@dataclass(frozen=True)
class Counters:
    version: int  # moves when some document's outgoing links change
    deletions: int  # moves when documents are deleted
    documents: int


def counters(tx: ManagedTransaction) -> Counters:
    record = tx.run(COUNTERS).single(strict=True)  # a count always gives its row
    return Counters(record["version"], record["deletions"], record["documents"])
