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


def update(graph: DocumentGraph, previous: dict[str, int], frontier: Iterable[str], gamma: float, random_seed: int) -> dict[str, int]:
    """The new membership (uri -> community) of every linked document. `previous` holds the last
    run's communities; documents outside it (new, or ungrouped) move freely, like the frontier."""
    nodes = graph.linked
    free = set(frontier) | {uri for uri in nodes if uri not in previous}
    labels: dict[object, int] = {}  # communities numbered as met: leidenalg wants them below the node count
    unit = np.empty(len(nodes), dtype=np.int64)  # node of the collapsed graph, per document
    starts: list[int] = []  # per collapsed node: its starting community
    fixed: list[bool] = []
    held: dict[int, int] = {}  # community -> the node holding its fixed members
    for position, uri in enumerate(nodes):
        community = labels.setdefault(previous.get(uri, uri), len(labels))  # a new document: a community of its own
        if uri in free:
            unit[position] = len(starts)
            starts.append(community)
            fixed.append(False)
        else:
            if community not in held:
                held[community] = len(starts)
                starts.append(community)
                fixed.append(True)
            unit[position] = held[community]
    edges, size = graph.arrays, len(starts)
    ends_a, ends_b = unit[edges.a], unit[edges.b]
    pairs, position = np.unique(np.minimum(ends_a, ends_b) * size + np.maximum(ends_a, ends_b), return_inverse=True)
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
    membership = np.asarray(partition.membership)[unit]
    return dict(zip(nodes, membership.tolist(), strict=True))
