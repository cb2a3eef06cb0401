"""Leiden on the document graph: Neo4j GDS when the plugin answers, leidenalg in-process otherwise.

Both run unseeded, with a fixed random seed, one thread and the graph in a fixed order, so a run
is a function of the link graph alone: N runs on an unchanged graph give the same themes, and
edits followed by their reversal bring back the same themes. (Seeding with the previous run's
membership broke both: each run started from the last one's result and drifted further — on a real
3,088-page estate, 41 themes became 2 on the next unchanged run.) Ids stay stable across runs by
matching memberships afterwards (`identity.assign_ids`). Both return membership per level with
conductance per community.
GDS gives the finer intermediate levels for zooming in the same run; every projection is dropped,
also when the run fails.
"""

from __future__ import annotations

import uuid
from functools import cached_property
from typing import TYPE_CHECKING, Protocol

from neo4j import Driver
from neo4j.exceptions import ClientError

from worker.exceptions import LakegraphError
from worker.themes.model import DocumentGraph, Partition
from worker.themes.projection import conductance

if TYPE_CHECKING:
    from graphdatascience import GraphDataScience

GDS_VERSION = "RETURN gds.version() AS version"
# Three columns, one row per linked pair: source, target, link count. Each document is numbered by
# its place among the linked ones, in pair order (GDS numbers the nodes in the order it meets them,
# so the order is fixed): no node is looked up (element id seeks cost 3-4 s of a 100k projection),
# and Leiden's node ids are those places. Columns rather than a list per pair: 441k pairs project
# in 1.1 s instead of 1.2-1.7 s. (The client's own `graph.construct` sends data frames row by row
# as lists, and needs GDS's enterprise Arrow server to do better; its `project.cypher` runs this.)
PROJECT = """
UNWIND range(0, size($source) - 1) AS i
RETURN gds.graph.project($name, $source[i], $target[i], {relationshipProperties: {weight: $weight[i]}}, {undirectedRelationshipTypes: ['*']})
"""
# Leiden runs to convergence (GDS's own level limit, 10); `max_levels` only says how many levels are
# kept for zooming. Stopped after three levels, as it once was, the final level was not converged
# and a 1 % link edit cost one theme in six its id on a real estate; converged, one in thirty.


class Engine(Protocol):
    name: str

    def partition(self, graph: DocumentGraph, gamma: float, random_seed: int, max_levels: int) -> Partition: ...


class GdsEngine:
    """Leiden in Neo4j GDS through its Python client (`graphdatascience`, imported by the first run
    from scratch): the projection, Leiden with its intermediate levels, and the projection's drop.
    Conductance is scored here, with GDS's formula (`projection.conductance`): GDS reads it from a
    community property of the projected graph, so each level would cost a mutate and a stream of
    its own, where numpy scores every level in milliseconds — and the updates, which run no GDS,
    score the same way. A test holds the two equal."""

    name = "gds"

    def __init__(self, driver: Driver, database: str) -> None:
        self.driver = driver
        self.database = database

    def available(self) -> bool:
        """Asked in plain Cypher: where GDS is absent, its client is never imported."""
        try:
            self.driver.execute_query(GDS_VERSION, database_=self.database)
        except ClientError:
            return False
        return True

    @cached_property
    def client(self) -> GraphDataScience:
        from graphdatascience import GraphDataScience

        return GraphDataScience(self.driver, database=self.database, arrow=False, show_progress=False)

    def partition(self, graph: DocumentGraph, gamma: float, random_seed: int, max_levels: int) -> Partition:
        if not graph.edges:
            return Partition([{}], [{}], self.name)
        nodes, edges = graph.linked, graph.arrays
        gds, name = self.client, f"lakegraph-themes-{uuid.uuid4().hex[:12]}"
        try:
            projected = gds.graph.project.cypher(PROJECT, name=name, source=edges.a.tolist(), target=edges.b.tolist(), weight=edges.weight.tolist()).graph
            found = gds.leiden.stream(
                projected,
                gamma=gamma,
                random_seed=random_seed,
                concurrency=1,
                include_intermediate_communities=True,  # every level: the final one last, the finer ones before it
                relationship_weight_property="weight",
            )
            stacked = {nodes[node]: chain for node, chain in zip(found["nodeId"].tolist(), found["intermediateCommunityIds"].tolist(), strict=True)}
            depth = min(len(chain) for chain in stacked.values())
            # GDS lists the finest first and the final level last: the final level, then coarsest first
            levels = [{uri: chain[level] for uri, chain in stacked.items()} for level in range(depth - 1, max(-1, depth - 1 - max_levels), -1)]
            conductances = [conductance(graph, membership) for membership in levels]
            return Partition(levels, conductances, self.name)
        except (ClientError, ValueError) as err:  # the server's refusal, or the client's (a projection of nothing)
            raise LakegraphError(f"GDS Leiden failed: {getattr(err, 'message', None) or err}") from None
        finally:
            gds.graph.drop(name, fail_if_missing=False)


class LeidenalgEngine:
    """In-process Leiden (leidenalg on igraph) for a Neo4j without GDS: one level, same contract."""

    name = "leidenalg"

    def partition(self, graph: DocumentGraph, gamma: float, random_seed: int, max_levels: int) -> Partition:
        import igraph
        import leidenalg

        if not graph.edges:
            return Partition([{}], [{}], self.name)
        nodes = graph.linked
        index = {uri: position for position, uri in enumerate(nodes)}
        ordered = sorted(graph.edges.items())
        network = igraph.Graph(n=len(nodes), edges=[(index[a], index[b]) for (a, b), _ in ordered])
        network.es["weight"] = [weight for _, weight in ordered]
        found = leidenalg.find_partition(
            network,
            leidenalg.RBConfigurationVertexPartition,
            weights="weight",
            resolution_parameter=gamma,
            seed=random_seed,
            n_iterations=-1,
        )
        membership = {uri: int(found.membership[index[uri]]) for uri in nodes}
        return Partition([membership], [conductance(graph, membership)], self.name)
