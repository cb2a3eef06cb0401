"""A themes update that moves only the documents whose links changed (a dynamic frontier).

Leiden from scratch is chaotic: one changed link early in its random visiting order sends every
later choice elsewhere, so a 2 % edit of a real estate's links cost one theme in seven its id.
Seeding it with the previous membership and letting every document move was not enough either
(0.86 kept at 2 %, and edits followed by their reversal did not bring the same themes back).
Here the documents at either end of a changed document-level link are free to move; every other
document keeps its theme. Each theme's fixed members collapse into one node (its inside links as a
self-loop, so the objective is the same modularity with resolution gamma), leaving a graph of a few
hundred nodes that Leiden optimises with the fixed nodes held in place: a refresh costs the size of
the change, and a graph without changes gives back the very same themes.
"""

from __future__ import annotations

from collections.abc import Iterable

import igraph
import leidenalg
import numpy as np

from worker.themes.model import DocumentGraph

BINCOUNT_LIMIT = 4_000_000  # pairs of collapsed nodes summed in one array (32 MB of float64)


def labels(graph: DocumentGraph, previous: dict[str, int], frontier: Iterable[str], gamma: float, random_seed: int) -> np.ndarray:
    """The new community of every linked document, in the order of `graph.linked`. `previous` holds
    the last run's communities (numbers >= 0); documents outside it (new, or ungrouped) move
    freely, like the frontier. One pass over the documents reads `previous`; the frontier is
    placed by lookup."""
    nodes = graph.linked
    count = len(nodes)
    held = np.fromiter((previous.get(uri, -1) for uri in nodes), dtype=np.int64, count=count)
    known = held >= 0
    free = ~known
    free[graph.linked_places(frontier)] = True
    # communities numbered as met (leidenalg wants them below the node count): a document's previous
    # community, or one of its own when it had none (a new document)
    community = _numbered_as_met(np.where(known, held, held.max(initial=0) + 1 + np.arange(count)))
    # nodes of the collapsed graph, numbered as met: each free document alone, each community's fixed members together
    unit = _numbered_as_met(np.where(free, count + np.arange(count), community))
    _, first = np.unique(unit, return_index=True)  # each node's first document
    starts, fixed = community[first].tolist(), (~free[first]).tolist()
    edges, size = graph.arrays, len(starts)
    ends_a, ends_b = unit[edges.a], unit[edges.b]
    keys = np.minimum(ends_a, ends_b) * size + np.maximum(ends_a, ends_b)
    if size * size <= BINCOUNT_LIMIT:  # a few hundred themes and the frontier: sum by key, no sort
        summed = np.bincount(keys, weights=edges.weight, minlength=size * size)
        pairs = np.flatnonzero(summed)
        weights = summed[pairs]
    else:
        pairs, position = np.unique(keys, return_inverse=True)
        weights = np.bincount(position, weights=edges.weight, minlength=len(pairs))
    network = igraph.Graph(n=size, edges=np.stack([pairs // size, pairs % size], axis=1).tolist())
    network.es["weight"] = weights.tolist()
    partition = leidenalg.RBConfigurationVertexPartition(
        network,
        weights="weight",
        resolution_parameter=gamma,
        initial_membership=starts,
    )
    optimiser = leidenalg.Optimiser()
    optimiser.set_rng_seed(random_seed)
    optimiser.optimise_partition(partition, n_iterations=-1, is_membership_fixed=fixed)
    return np.asarray(partition.membership, dtype=np.int64)[unit]


def _numbered_as_met(keys: np.ndarray) -> np.ndarray:
    """Each key replaced by the rank of its first occurrence: [7, 3, 7, 9] -> [0, 1, 0, 2]."""
    _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    rank = np.empty(len(first), dtype=np.int64)
    rank[np.argsort(first)] = np.arange(len(first))
    return rank[inverse.reshape(-1)]
