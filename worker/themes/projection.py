"""The document-level link graph read from Neo4j: every section link collapsed to its documents,
and which documents' links changed since the themes were last computed."""

from __future__ import annotations

import json
from collections.abc import Iterable

import numpy as np
from neo4j import Driver, ManagedTransaction

from worker.documents import link_version
from worker.graph.batches import MOST_ROWS
from worker.graph.schema import Label
from worker.themes.model import DocumentGraph, LinkChange

# Documents come back a page at a time in uri order (the unique index gives the order), each page
# one collected list (tens of thousands of records cost the driver ten times more) whose size the
# caller bounds, each document with the outgoing links the writer keeps on it
# (worker.documents.link_version): one row per document instead of a walk over every section link
# (8 s of a 100k read). A store
# signed before the lists were kept has signed documents without them: their links are walked.
# A document's links changed since the last run when the writer labelled it so (see
# worker.documents.link_version) or its link signature differs from the one that run saw; that run
# left it the outgoing links it used, so the changed links themselves are known, not only the
# documents.
DOCUMENTS = f"""
MATCH (d:{Label.DOCUMENT}) WHERE d.uri > $after
WITH d ORDER BY d.uri LIMIT $page
RETURN collect([d.uri, d.displayName, d.link_targets, d.link_counts]) AS documents,
       collect(CASE WHEN {link_version.UNLISTED.format(node="d")} THEN d.uri END) AS unlisted,
       collect(CASE WHEN d:{Label.LINKS_CHANGED} OR coalesce(d.link_signature, '') <> coalesce(d.themed_signature, '')
               THEN [d.uri, d.link_signature, d.themed_links] END) AS changed
"""
# After the first run a worker reads only the labelled documents: O(changed), not O(documents),
# their outgoing links from the same lists.
CHANGED = f"""
MATCH (d:{Label.DOCUMENT}:{Label.LINKS_CHANGED})
RETURN collect([d.uri, d.displayName, d.link_signature, d.themed_links, d.link_targets, d.link_counts]) AS changed,
       collect(CASE WHEN {link_version.UNLISTED.format(node="d")} THEN d.uri END) AS unlisted
"""
# Documents a changed document now links to that the worker has not met (new, or linked for the first time).
DOCUMENT_BYTES = 8_192  # what a document's row costs the read (its uri, title and link lists), with room
MET = f"""
UNWIND $uris AS uri
MATCH (d:{Label.DOCUMENT} {{uri: uri}})
RETURN collect([d.uri, d.displayName]) AS documents
"""


def document_graph(driver: Driver, database: str, known: DocumentGraph | None = None, page: int = MOST_ROWS) -> DocumentGraph:
    """The graph now, read `page` documents to a query. Given `known`, the graph the last themes
    run saw (a worker keeps it between runs, and reads the whole graph again after any deletion),
    only the documents labelled as changed and their outgoing links are read, and `known` is
    patched with them."""
    with driver.session(database=database) as session:
        if known is None:
            return session.execute_read(_read, page)
        return session.execute_read(_patch, known)


def _read(tx: ManagedTransaction, page: int) -> DocumentGraph:
    """Documents, links and changes in one transaction, so the changes describe these links."""
    rows: list[list] = []
    unlisted: list[str] = []
    changed_rows: list[list] = []
    after = ""
    while True:
        found = tx.run(DOCUMENTS, after=after, page=page).single(strict=True)
        rows += found["documents"]
        unlisted += found["unlisted"]
        changed_rows += found["changed"]
        if len(found["documents"]) < page:
            break
        after = found["documents"][-1][0]
    documents = {uri for uri, *_ in rows}
    titles = {uri: title for uri, title, *_ in rows if title}
    outgoing = _outgoing(tx, ((uri, targets, counts) for uri, _, targets, counts in rows), unlisted)
    directed = {(source, target): links for source, links_out in outgoing.items() for target, links in links_out if target in documents}
    edges: dict[tuple[str, str], int] = {}
    for (source, target), links in directed.items():
        pair = (source, target) if source < target else (target, source)
        edges[pair] = edges.get(pair, 0) + links
    changed = {uri: LinkChange(signature, json.loads(themed) if themed else {}) for uri, signature, themed in changed_rows}
    return DocumentGraph(sorted(documents), edges, directed, changed, titles)


def _patch(tx: ManagedTransaction, known: DocumentGraph) -> DocumentGraph:
    """`known` with the labelled documents' outgoing links read again (see `DocumentGraph.replaced`)."""
    read = tx.run(CHANGED).single(strict=True)
    found = read["changed"]
    documents, titles = set(known.documents), dict(known.titles)

    def meet(rows: list) -> None:
        for uri, title, *_ in rows:
            documents.add(uri)
            if title:
                titles[uri] = title

    meet(found)
    changed = {uri: LinkChange(signature, json.loads(themed) if themed else {}) for uri, _, signature, themed, *_ in found}
    outgoing = _outgoing(tx, ((uri, targets, counts) for uri, *_, targets, counts in found), read["unlisted"])
    new = sorted({target for links_out in outgoing.values() for target, _ in links_out} - documents)
    meet(tx.run(MET, uris=new).single(strict=True)["documents"] if new else [])
    return known.replaced(changed, outgoing, documents, titles)


def _outgoing(tx: ManagedTransaction, listed: Iterable[tuple[str, list | None, list | None]], unlisted: list[str]) -> dict[str, list[tuple[str, int]]]:
    """Each document's outgoing links (target document, link count) from the lists the writer keeps;
    the documents signed before the lists were kept (`unlisted`) have theirs walked."""
    outgoing = {uri: list(zip(targets, counts or (), strict=True)) for uri, targets, counts in listed if targets}
    if unlisted:
        outgoing |= {record["uri"]: [(target, links) for target, links in record["edges"]] for record in tx.run(link_version.OUTGOING, uris=unlisted)}
    return outgoing


def conductance(graph: DocumentGraph, membership: dict[str, int]) -> dict[int, float]:
    """GDS's definition: weight leaving a community / (leaving + inside, counted from each end)."""
    return labelled_conductance(graph, np.fromiter((membership.get(uri, -1) for uri in graph.linked), dtype=np.int64, count=len(graph.linked)))


def labelled_conductance(graph: DocumentGraph, labels: np.ndarray) -> dict[int, float]:
    """`conductance` of each linked document's community number (-1: none), in the order of
    `graph.linked`. Sums by community number with bincount (no sort of the edges): a few
    milliseconds at 100k."""
    edges = graph.arrays
    if not len(labels) or labels.max() < 0:
        return {}
    ends_a, ends_b = labels[edges.a], labels[edges.b]
    crossing = ends_a != ends_b
    size = int(labels.max()) + 2  # community numbers shifted by one: -1 (no community) counts in bin 0
    total = np.bincount(ends_a + 1, weights=edges.weight, minlength=size) + np.bincount(ends_b + 1, weights=edges.weight, minlength=size)
    leaving = np.bincount(ends_a + 1, weights=edges.weight * crossing, minlength=size) + np.bincount(
        ends_b + 1, weights=edges.weight * crossing, minlength=size
    )
    return {int(bin_) - 1: round(float(leaving[bin_] / total[bin_]), 6) for bin_ in np.flatnonzero(total[1:]) + 1}
