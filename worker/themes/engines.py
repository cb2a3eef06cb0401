"""Leiden on the document graph: Neo4j GDS when the plugin answers, leidenalg in-process otherwise.

Both take the previous run's level-0 membership as seeds (so a small edit does not reshuffle
everything), a fixed random seed, and return membership per level with conductance per community.
GDS scores the final level's conductance itself and gives the finer intermediate levels for
zooming (scored with the same formula here); every projection is dropped, also when the run fails.
"""

from __future__ import annotations

import uuid
from typing import Protocol

from neo4j import Driver
from neo4j.exceptions import ClientError

from worker.errors import LakegraphError
from worker.themes.model import DocumentGraph, Partition
from worker.themes.projection import conductance

GDS_VERSION = "RETURN gds.version() AS version"
# Rows are [source element id, target element id, link count, source seed, target seed]: element
# id seeks instead of uri index lookups halve the projection's time.
PROJECT = """
UNWIND $rows AS e
MATCH (a) WHERE elementId(a) = e[0]
MATCH (b) WHERE elementId(b) = e[1]
WITH gds.graph.project($name, a, b, {
    sourceNodeProperties: {seed: e[3]}, targetNodeProperties: {seed: e[4]}, relationshipProperties: {weight: toFloat(e[2])}
  }, {undirectedRelationshipTypes: ['*']}) AS g
RETURN g.nodeCount AS nodes
"""
# `sudo: true` waives GDS's memory guard: it sizes any seeded Leiden at about 1.5 GiB whatever the
# graph (10,000 documents need 5 MiB unseeded), which would refuse every run on a 1 GiB heap.
LEIDEN_CONFIG = (
    "relationshipWeightProperty: 'weight', gamma: $gamma, randomSeed: $random_seed, concurrency: 1, "
    "maxLevels: $max_levels, sudo: true"
)
# Level 0 (the final level) is mutated into the projection so GDS can score it.
LEIDEN_MUTATE = f"""
CALL gds.leiden.mutate($name, {{{LEIDEN_CONFIG}, seedProperty: 'seed', mutateProperty: 'community'}})
YIELD ranLevels RETURN ranLevels
"""
FINAL_LEVEL = """
CALL gds.graph.nodeProperty.stream($name, 'community') YIELD nodeId, propertyValue
RETURN collect([gds.util.asNode(nodeId).uri, propertyValue]) AS membership
"""
CONDUCTANCE = """
CALL gds.conductance.stream($name, {communityProperty: 'community', relationshipWeightProperty: 'weight', concurrency: 1})
YIELD community, conductance
RETURN collect([community, conductance]) AS scores
"""
# The finer levels for zooming.
LEIDEN_LEVELS = f"""
CALL gds.leiden.stream($name, {{{LEIDEN_CONFIG}, seedProperty: 'seed', includeIntermediateCommunities: true}})
YIELD nodeId, intermediateCommunityIds
RETURN collect([gds.util.asNode(nodeId).uri, intermediateCommunityIds]) AS levels
"""
DROP = "CALL gds.graph.drop($name, false) YIELD graphName RETURN graphName"
# GDS 2.13 fails (its Leiden result has no dendrogram) when a seeded run has nothing left to
# move; the same run unseeded is then the answer — ids stay stable through the overlap matching.
NO_DENDROGRAM = "dendrogramManager"
SEED = ", seedProperty: 'seed'"


class Engine(Protocol):
    name: str

    def partition(self, graph: DocumentGraph, gamma: float, seeds: dict[str, int], random_seed: int, max_levels: int) -> Partition: ...


def _seeded(graph: DocumentGraph, seeds: dict[str, int]) -> dict[str, int]:
    """Every linked document gets a seed: its previous community, else a fresh number of its own."""
    fresh = max(seeds.values(), default=-1) + 1
    result = {}
    for uri in graph.linked:
        if uri in seeds:
            result[uri] = seeds[uri]
        else:
            result[uri], fresh = fresh, fresh + 1
    return result


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
        """A GDS call, retried unseeded when seeded Leiden trips over its missing dendrogram."""
        try:
            return self.driver.execute_query(query, params, database_=self.database).records
        except ClientError as err:
            if NO_DENDROGRAM not in (err.message or "") or SEED not in query:
                raise
            return self.driver.execute_query(query.replace(SEED, ""), params, database_=self.database).records

    def partition(self, graph: DocumentGraph, gamma: float, seeds: dict[str, int], random_seed: int, max_levels: int) -> Partition:
        if not graph.edges:
            return Partition([{}], [{}], self.name)
        seeded = _seeded(graph, seeds)
        ids = graph.element_ids
        name = f"lakegraph-themes-{uuid.uuid4().hex[:12]}"
        params = {"name": name, "gamma": gamma, "random_seed": random_seed, "max_levels": max_levels}
        try:
            rows = [[ids[a], ids[b], weight, seeded[a], seeded[b]] for (a, b), weight in graph.edges.items()]
            self.driver.execute_query(PROJECT, name=name, rows=rows, database_=self.database)
            self._run(LEIDEN_MUTATE, **params)
            final = dict(self._run(FINAL_LEVEL, name=name)[0]["membership"])
            scores = {community: round(value, 6) for community, value in self._run(CONDUCTANCE, name=name)[0]["scores"]}
            levels, conductances = [final], [scores]
            if max_levels > 1:
                stacked = dict(self._run(LEIDEN_LEVELS, **params)[0]["levels"])
                depth = min(len(chain) for chain in stacked.values())
                for level in range(depth - 2, -1, -1):  # GDS lists the finest first; the last one is the final level
                    membership = {uri: chain[level] for uri, chain in stacked.items()}
                    levels.append(membership)
                    conductances.append(conductance(graph.edges, membership))
            return Partition(levels, conductances, self.name)
        except (ClientError, KeyError) as err:
            raise LakegraphError(f"GDS Leiden failed: {getattr(err, 'message', None) or err}") from None
        finally:
            self.driver.execute_query(DROP, name=name, database_=self.database)


class LeidenalgEngine:
    """In-process Leiden (leidenalg on igraph) for a Neo4j without GDS: one level, same contract."""

    name = "leidenalg"

    def partition(self, graph: DocumentGraph, gamma: float, seeds: dict[str, int], random_seed: int, max_levels: int) -> Partition:
        import igraph
        import leidenalg

        if not graph.edges:
            return Partition([{}], [{}], self.name)
        nodes = graph.linked
        index = {uri: position for position, uri in enumerate(nodes)}
        network = igraph.Graph(n=len(nodes), edges=[(index[a], index[b]) for a, b in graph.edges])
        network.es["weight"] = list(graph.edges.values())
        seeded = _seeded(graph, seeds)
        numbering = {seed: number for number, seed in enumerate(sorted(set(seeded.values())))}
        found = leidenalg.find_partition(
            network, leidenalg.RBConfigurationVertexPartition, weights="weight", resolution_parameter=gamma,
            seed=random_seed, initial_membership=[numbering[seeded[uri]] for uri in nodes],
        )
        membership = {uri: int(found.membership[index[uri]]) for uri in nodes}
        return Partition([membership], [conductance(graph.edges, membership)], self.name)
