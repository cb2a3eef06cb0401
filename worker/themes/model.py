"""What a themes run works on and produces, independent of the engine that ran Leiden."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np


@dataclass(frozen=True)
class EdgeArrays:
    """The undirected edges as positions in `DocumentGraph.linked`, for whole-graph arithmetic."""

    a: np.ndarray
    b: np.ndarray
    weight: np.ndarray


@dataclass(frozen=True)
class LinkArrays:
    """The directed links as positions in `DocumentGraph.documents`."""

    source: np.ndarray
    target: np.ndarray
    count: np.ndarray


@dataclass(frozen=True)
class LinkChange:
    """A document whose outgoing links changed since the last themes run."""

    signature: str | None  # its link signature now
    themed: dict[str, int]  # the outgoing links (target document -> count) the last run saw


@dataclass(frozen=True)
class DocumentGraph:
    """Documents as nodes, links collapsed to documents at both ends, undirected, weighted by count.

    `edges` is `directed` summed over both directions; the arrays are computed from `directed` alone
    (numpy, no loop over the links), and a graph patched from the last run's (`replaced`) patches
    them instead of building them again."""

    documents: list[str]  # every document uri, linked or not, in order
    edges: dict[tuple[str, str], int]  # (a, b) with a < b -> link count
    directed: dict[tuple[str, str], int] = field(default_factory=dict)  # (source, target) -> link count
    changed: dict[str, LinkChange] = field(default_factory=dict)  # uri -> its change since the last run
    titles: dict[str, str] = field(default_factory=dict)  # uri -> display name

    @property
    def linked(self) -> list[str]:
        """The documents with at least one link, in order."""
        return self._undirected[0]

    @property
    def arrays(self) -> EdgeArrays:
        return self._undirected[1]

    def linked_places(self, uris: Iterable[str]) -> np.ndarray:
        """The places in `linked` of those of `uris` that are linked (O(uris), no pass over the documents)."""
        nodes = self._undirected[2]
        places = np.array([self.position[uri] for uri in uris if uri in self.position], dtype=np.int64)
        found = np.minimum(np.searchsorted(nodes, places), max(len(nodes) - 1, 0))
        return found[nodes[found] == places] if len(nodes) else found[:0]

    @cached_property
    def position(self) -> dict[str, int]:
        """uri -> its place in `documents`."""
        return {uri: place for place, uri in enumerate(self.documents)}

    # The arrays do not keep the dicts' order: what is computed on them (sums of whole link counts,
    # sorts with explicit keys) does not depend on it.
    @cached_property
    def directed_arrays(self) -> LinkArrays:
        count = len(self.directed)
        return LinkArrays(
            np.fromiter((self.position[source] for source, _ in self.directed), dtype=np.int64, count=count),
            np.fromiter((self.position[target] for _, target in self.directed), dtype=np.int64, count=count),
            np.fromiter(self.directed.values(), dtype=np.float64, count=count),
        )

    @cached_property
    def _undirected(self) -> tuple[list[str], EdgeArrays, np.ndarray]:
        """The linked documents, the undirected edges as positions among them (both directions of
        a pair summed; documents are in order, so the smaller position is the smaller uri; the pairs
        in the order of `sorted(edges)`), and the linked documents' places in `documents`."""
        links, size = self.directed_arrays, len(self.documents)
        pairs, position = np.unique(np.minimum(links.source, links.target) * size + np.maximum(links.source, links.target), return_inverse=True)
        weight = np.bincount(position, weights=links.count, minlength=len(pairs))
        a, b = pairs // size, pairs % size
        nodes = np.unique(np.concatenate([a, b]))
        return [self.documents[place] for place in nodes.tolist()], EdgeArrays(np.searchsorted(nodes, a), np.searchsorted(nodes, b), weight), nodes

    def replaced(
        self, changed: dict[str, LinkChange], outgoing: dict[str, list[tuple[str, int]]], documents: set[str], titles: dict[str, str]
    ) -> DocumentGraph:
        """This graph with the changed documents' outgoing links replaced by `outgoing`. Their old
        links are the ones the last run saw (`LinkChange.themed`), so the edges change by the
        difference; the arrays are patched when no document was added."""
        directed, edges = dict(self.directed), dict(self.edges)

        def add(source: str, target: str, links: int) -> None:
            pair = (source, target) if source < target else (target, source)
            if total := edges.get(pair, 0) + links:
                edges[pair] = total
            else:
                edges.pop(pair, None)

        for uri, change in changed.items():
            for target, links in change.themed.items():
                directed.pop((uri, target), None)
                add(uri, target, -links)
        for uri, links_out in outgoing.items():
            for target, links in links_out:
                directed[(uri, target)] = links
                add(uri, target, links)
        same = len(documents) == len(self.documents)  # `documents` only grows from this graph's
        graph = DocumentGraph(self.documents if same else sorted(documents), edges, directed, changed, titles)
        if same and "directed_arrays" in self.__dict__:  # seed the new graph's caches from this one's
            position, old = self.position, self.directed_arrays
            kept = ~np.isin(old.source, [position[uri] for uri in changed])
            rows = [(position[uri], position[target], links) for uri, links_out in outgoing.items() for target, links in links_out]
            added_sources, added_targets, added_counts = (
                np.array([row[column] for row in rows], dtype=dtype) for column, dtype in enumerate((np.int64, np.int64, np.float64))
            )
            graph.__dict__.update(
                position=position,
                directed_arrays=LinkArrays(
                    np.concatenate([old.source[kept], added_sources]),
                    np.concatenate([old.target[kept], added_targets]),
                    np.concatenate([old.count[kept], added_counts]),
                ),
            )
        return graph

    @cached_property
    def changed_links(self) -> dict[str, dict[str, int]]:
        """The changed documents' outgoing links now: uri -> target -> count (their rows picked from
        the link arrays, shared by the frontier and the marks the run leaves)."""
        found: dict[str, dict[str, int]] = {uri: {} for uri in self.changed}
        links = self.directed_arrays
        sources = [self.position[uri] for uri in self.changed if uri in self.position]
        for row in np.flatnonzero(np.isin(links.source, sources)).tolist():
            found[self.documents[links.source[row]]][self.documents[links.target[row]]] = int(links.count[row])
        return found

    @cached_property
    def edits(self) -> dict[str, set[str]]:
        """The documents whose document-level links changed since the last run (an edit that only
        touched text is none), each with the documents its changed links lead to or came from."""
        now = self.changed_links
        found: dict[str, set[str]] = {}
        for uri, change in self.changed.items():
            ends = {target for target in change.themed.keys() | now[uri].keys() if change.themed.get(target) != now[uri].get(target)}
            if ends:
                found[uri] = ends
        return found

    @property
    def frontier(self) -> set[str]:
        """The documents at either end of a document-level link that changed since the last run."""
        return set(self.edits).union(*self.edits.values())


@dataclass(frozen=True)
class Partition:
    """Membership per level: levels[0] is the coarsest (the final Leiden level), finer after it."""

    levels: list[dict[str, int]]  # uri -> community number, per level
    conductance: list[dict[int, float]]  # per level: community number -> conductance
    engine: str


@dataclass(frozen=True)
class Theme:
    id: str
    level: int
    members: frozenset[str]
    conductance: float


EDITS_KEPT = 100  # edited documents a run names; it counts them all


@dataclass
class ThemeChanges:
    """What changed against the previous run, at level 0."""

    born: list[str] = field(default_factory=list)
    dissolved: list[str] = field(default_factory=list)
    split: dict[str, list[str]] = field(default_factory=dict)  # old id -> new ids its members went to
    merged: dict[str, list[str]] = field(default_factory=dict)  # new id -> old ids it took members from
    grew: dict[str, int] = field(default_factory=dict)  # id -> members gained (net)
    shrank: dict[str, int] = field(default_factory=dict)
    moved: list[dict] = field(default_factory=list)  # {"document", "from", "to"}; None for ungrouped
    # Why: the documents whose links changed since the run before (the first EDITS_KEPT of them by
    # uri) and how many there were; none for a first run. They change nothing by themselves.
    edited: list[str] = field(default_factory=list)
    edits: int = 0

    @property
    def empty(self) -> bool:
        return not (self.born or self.dissolved or self.split or self.merged or self.grew or self.shrank or self.moved)
