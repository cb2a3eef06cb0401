"""The document-level link graph read from Neo4j: every section link collapsed to its documents,
and which documents' links changed since the themes were last computed."""

from __future__ import annotations

import json

import numpy as np
from neo4j import Driver, ManagedTransaction

from worker.documents import link_version
from worker.graph.schema import Label, Rel
from worker.themes.model import DocumentGraph, LinkChange

# Both come back as one collected list: tens of thousands of records cost the driver ten times more.
# A document's links changed since the last run when its link signature (kept by the writer, see
# worker.documents.link_version) differs from the one that run saw; that run left it the outgoing
# links it used, so the changed links themselves are known, not only the documents.
DOCUMENTS = f"""
MATCH (d:{Label.DOCUMENT})
RETURN collect([d.uri, elementId(d), d.displayName]) AS documents,
       collect(CASE WHEN coalesce(d.link_signature, '') <> coalesce(d.themed_signature, '')
               THEN [d.uri, d.link_signature, d.themed_links] END) AS changed
"""
DOCUMENT_LINKS = f"""
MATCH (s)-[:{Rel.LINKS_TO}]->(t)
WITH CASE WHEN s:{Label.SECTION} THEN s.doc_uri ELSE s.uri END AS a,
     CASE WHEN t:{Label.SECTION} THEN t.doc_uri ELSE t.uri END AS b
WHERE a <> b
WITH a, b, count(*) AS links
RETURN collect([a, b, links]) AS links
"""


def document_graph(driver: Driver, database: str, known: DocumentGraph | None = None) -> DocumentGraph:
    """The graph now. Given `known`, the graph the last themes run saw, only the outgoing links of
    the documents changed since are read (a worker keeps it between runs), not every link."""
    with driver.session(database=database) as session:
        return session.execute_read(_read, known)


def _read(tx: ManagedTransaction, known: DocumentGraph | None) -> DocumentGraph:
    """Documents, links and changes in one transaction, so the changes describe these links."""
    found = tx.run(DOCUMENTS).single()
    documents = {uri: element_id for uri, element_id, _ in found["documents"]}
    titles = {uri: title for uri, _, title in found["documents"] if title}
    if known is None:
        directed = {
            (source, target): links for source, target, links in tx.run(DOCUMENT_LINKS).single()["links"] if source in documents and target in documents
        }
    else:
        changed = {uri for uri, _, _ in found["changed"]}
        directed = {
            (source, target): links
            for (source, target), links in known.directed.items()
            if source not in changed and source in documents and target in documents
        }
        for record in tx.run(link_version.OUTGOING, uris=sorted(changed & documents.keys())):
            directed.update({(record["uri"], target): links for target, links in record["edges"] if target in documents})
    edges: dict[tuple[str, str], int] = {}
    for (source, target), links in directed.items():
        pair = (source, target) if source < target else (target, source)
        edges[pair] = edges.get(pair, 0) + links
    changed = {uri: LinkChange(signature, json.loads(themed) if themed else {}) for uri, signature, themed in found["changed"]}
    return DocumentGraph(sorted(documents), edges, documents, directed, changed, titles)


def conductance(graph: DocumentGraph, membership: dict[str, int]) -> dict[int, float]:
    """GDS's definition: weight leaving a community / (leaving + inside, counted from each end)."""
    edges = graph.arrays
    labels = np.array([membership.get(uri, -1) for uri in graph.linked], dtype=np.int64)
    ends = np.concatenate([labels[edges.a], labels[edges.b]])
    weights = np.concatenate([edges.weight, edges.weight])
    crossing = np.concatenate([labels[edges.a] != labels[edges.b]] * 2)
    communities, position = np.unique(ends, return_inverse=True)
    total = np.bincount(position, weights=weights, minlength=len(communities))
    leaving = np.bincount(position, weights=weights * crossing, minlength=len(communities))
    return {
        int(community): round(float(out / weight), 6) for community, out, weight in zip(communities, leaving, total, strict=True) if community != -1 and weight
    }
