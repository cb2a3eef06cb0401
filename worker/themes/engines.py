"""Leiden on the document graph: Neo4j GDS when the plugin answers, leidenalg in-process otherwise.

Both run unseeded, with a fixed random seed, one thread and the graph in a fixed order, so a run
is a function of the link graph alone: N runs on an unchanged graph give the same themes, and
edits followed by their reversal bring back the same themes. (Seeding with the previous run's
membership broke both: each run started from the last one's result and drifted further — on a real
3,088-page estate, 41 themes became 2 on the next unchanged run.) Ids stay stable across runs by
matching memberships afterwards (`identity.assign_ids`). Both return membership per level with
conductance per community.
GDS gives the finer intermediate levels for zooming in the same run; conductance is scored here
with GDS's formula; every projection is dropped, also when the run fails.
"""

from __future__ import annotations

import uuid
from typing import Protocol

from neo4j import Driver
from neo4j.exceptions import ClientError

from worker.exceptions import LakegraphError
from worker.themes.model import DocumentGraph, Partition
from worker.themes.projection import conductance

GDS_VERSION = "RETURN gds.version() AS version"
# Three columns, one row per linked pair: source, target, link count. Each document is numbered by
# its place among the linked ones, in pair order (GDS numbers the nodes in the order it meets them,
# so the order is fixed): no node is looked up (element id seeks cost 3-4 s of a 100k projection),
# and Leiden's node ids are those places. Columns rather than a list per pair: 441k pairs project
# in 1.1 s instead of 1.2-1.7 s.
PROJECT = """
UNWIND range(0, size($source) - 1) AS i
WITH gds.graph.project($name, $source[i], $target[i], {relationshipProperties: {weight: $weight[i]}}, {undirectedRelationshipTypes: ['*']}) AS g
RETURN g.nodeCount AS nodes
"""
# Leiden runs to convergence (GDS's own level limit, 10); `max_levels` only says how many levels are
# kept for zooming. Stopped after three levels, as it once was, the final level was not converged
# and a 1 % link edit cost one theme in six its id on a real estate; converged, one in thirty.
LEIDEN_CONFIG = "relationshipWeightProperty: 'weight', gamma: $gamma, randomSeed: $random_seed, concurrency: 1"
# One run gives every level: the final one last in each chain, the finer ones before it.
LEIDEN_LEVELS = f"""
CALL gds.leiden.stream($name, {{{LEIDEN_CONFIG}, includeIntermediateCommunities: true}})
YIELD nodeId, intermediateCommunityIds
RETURN collect([nodeId, intermediateCommunityIds]) AS levels
"""
DROP = "CALL gds.graph.drop($name, false) YIELD graphName RETURN graphName"


class Engine(Protocol):
    name: str

    def partition(self, graph: DocumentGraph, gamma: float, random_seed: int, max_levels: int) -> Partition: ...


class GdsEngine:
    name = "gds"

    def __init__(self, driver: Driver, database: str) -> None:
        self.driver = driver
        self.database = database

    def available(self) -> bool:
        try:
            self.driver.execute_query(GDS_VERSION, database_=self.database)
        except ClientError:
            return False
        return True

    def _run(self, query: str, **params: object) -> list:
        return self.driver.execute_query(query, params, database_=self.database).records

    def partition(self, graph: DocumentGraph, gamma: float, random_seed: int, max_levels: int) -> Partition:
        if not graph.edges:
            return Partition([{}], [{}], self.name)
        nodes, edges = graph.linked, graph.arrays
        name = f"lakegraph-themes-{uuid.uuid4().hex[:12]}"
        params = {"name": name, "gamma": gamma, "random_seed": random_seed}
        try:
            columns = {"source": edges.a.tolist(), "target": edges.b.tolist(), "weight": edges.weight.tolist()}
            self.driver.execute_query(PROJECT, name=name, **columns, database_=self.database)
            stacked = {nodes[node]: chain for node, chain in self._run(LEIDEN_LEVELS, **params)[0]["levels"]}
            depth = min(len(chain) for chain in stacked.values())
            # GDS lists the finest first and the final level last: the final level, then coarsest first
            levels = [{uri: chain[level] for uri, chain in stacked.items()} for level in range(depth - 1, max(-1, depth - 1 - max_levels), -1)]
            conductances = [conductance(graph, membership) for membership in levels]
            return Partition(levels, conductances, self.name)
        except ClientError as err:
            raise LakegraphError(f"GDS Leiden failed: {getattr(err, 'message', None) or err}") from None
        finally:
            self.driver.execute_query(DROP, name=name, database_=self.database)


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
