"""The document-level link graph read from Neo4j: every section link collapsed to its documents."""

from __future__ import annotations

from neo4j import Driver

from worker.graph.schema import Label, Rel
from worker.themes.model import DocumentGraph

# Both come back as one collected list: tens of thousands of records cost the driver ten times more.
DOCUMENTS = f"MATCH (d:{Label.DOCUMENT}) RETURN collect([d.uri, elementId(d)]) AS documents"
DOCUMENT_LINKS = f"""
MATCH (s)-[:{Rel.LINKS_TO}]->(t)
WITH CASE WHEN s:{Label.SECTION} THEN s.doc_uri ELSE s.uri END AS a,
     CASE WHEN t:{Label.SECTION} THEN t.doc_uri ELSE t.uri END AS b
WHERE a <> b
WITH a, b, count(*) AS links
RETURN collect([a, b, links]) AS links
"""


def document_graph(driver: Driver, database: str) -> DocumentGraph:
    documents = dict(driver.execute_query(DOCUMENTS, database_=database).records[0]["documents"])
    directed = {
        (source, target): links
        for source, target, links in driver.execute_query(DOCUMENT_LINKS, database_=database).records[0]["links"]
        if source in documents and target in documents
    }
    edges: dict[tuple[str, str], int] = {}
    for (source, target), links in directed.items():
        pair = (source, target) if source < target else (target, source)
        edges[pair] = edges.get(pair, 0) + links
    return DocumentGraph(sorted(documents), edges, documents, directed)


def conductance(edges: dict[tuple[str, str], int], membership: dict[str, int]) -> dict[int, float]:
    """GDS's definition: weight leaving a community / (leaving + inside, counted from each end)."""
    leaving: dict[int, float] = {}
    total: dict[int, float] = {}
    for (a, b), weight in edges.items():
        for here, there in ((a, b), (b, a)):
            community = membership.get(here)
            if community is None:
                continue
            total[community] = total.get(community, 0.0) + weight
            if membership.get(there) != community:
                leaving[community] = leaving.get(community, 0.0) + weight
    return {community: round(leaving.get(community, 0.0) / weight, 6) for community, weight in total.items() if weight}
