"""Leiden on the document graph: Neo4j GDS when the plugin answers, leidenalg in-process otherwise.

Both take the previous run's level-0 membership as seeds (so a small edit does not reshuffle
everything), a fixed random seed, and return membership per level with conductance per community.
GDS gives intermediate levels (zoom) and computes conductance itself; every projection is
dropped, also when the run fails.
"""

from __future__ import annotations

import uuid
from typing import Protocol

from neo4j import Driver
from neo4j.exceptions import ClientError

from worker.errors import LakegraphError
from worker.graph.schema import Label
from worker.themes.model import DocumentGraph, Partition
from worker.themes.projection import conductance

GDS_VERSION = "RETURN gds.version() AS version"
PROJECT = f"""
UNWIND $edges AS e
MATCH (a:{Label.DOCUMENT} {{uri: e.a}})
MATCH (b:{Label.DOCUMENT} {{uri: e.b}})
WITH gds.graph.project($name, a, b, {{
    sourceNodeProperties: e.pa, targetNodeProperties: e.pb, relationshipProperties: {{weight: toFloat(e.w)}}
  }}, {{undirectedRelationshipTypes: ['*']}}) AS g
RETURN g.nodeCount AS nodes
"""
LEIDEN = """
CALL gds.leiden.stream($name, {
  relationshipWeightProperty: 'weight', gamma: $gamma, randomSeed: $random_seed, concurrency: 1,
  includeIntermediateCommunities: true, seedProperty: 'seed', maxLevels: $max_levels
})
YIELD nodeId, intermediateCommunityIds
RETURN gds.util.asNode(nodeId).uri AS uri, intermediateCommunityIds AS levels
"""
# GDS 2.13 fails (its Leiden result has no dendrogram) when a seeded run has nothing left to
# move; the same run unseeded is then the answer — ids stay stable through the overlap matching.
LEIDEN_UNSEEDED = LEIDEN.replace(", seedProperty: 'seed'", "")
NO_DENDROGRAM = "dendrogramManager"
CONDUCTANCE = """
CALL gds.conductance.stream($name, {communityProperty: $property, relationshipWeightProperty: 'weight', concurrency: 1})
YIELD community, conductance
RETURN community, conductance
"""
DROP = "CALL gds.graph.drop($name, false) YIELD graphName RETURN graphName"


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

    def _project(self, name: str, graph: DocumentGraph, properties: dict[str, dict[str, int]]) -> None:
        rows = [{"a": a, "b": b, "w": weight, "pa": properties[a], "pb": properties[b]} for (a, b), weight in graph.edges.items()]
        self.driver.execute_query(PROJECT, name=name, edges=rows, database_=self.database)

    def _drop(self, name: str) -> None:
        self.driver.execute_query(DROP, name=name, database_=self.database)

    def _leiden(self, name: str, gamma: float, random_seed: int, max_levels: int) -> list:
        params = {"name": name, "gamma": gamma, "random_seed": random_seed, "max_levels": max_levels}
        try:
            return self.driver.execute_query(LEIDEN, params, database_=self.database).records
        except ClientError as err:
            if NO_DENDROGRAM not in (err.message or ""):
                raise
            return self.driver.execute_query(LEIDEN_UNSEEDED, params, database_=self.database).records

    def partition(self, graph: DocumentGraph, gamma: float, seeds: dict[str, int], random_seed: int, max_levels: int) -> Partition:
        if not graph.edges:
            return Partition([{}], [{}], self.name)
        seeded = _seeded(graph, seeds)
        name = f"lakegraph-themes-{uuid.uuid4().hex[:12]}"
        scored = f"{name}-levels"
        try:
            self._project(name, graph, {uri: {"seed": seed} for uri, seed in seeded.items()})
            rows = self._leiden(name, gamma, random_seed, max_levels)
            depth = min(len(row["levels"]) for row in rows)
            # GDS lists levels finest first; level 0 here is the final, coarsest one.
            levels = [{row["uri"]: row["levels"][len(row["levels"]) - 1 - level] for row in rows} for level in range(depth)]
            self._project(scored, graph, {uri: {f"level{n}": levels[n][uri] for n in range(depth)} for uri in seeded})
            scores = [
                {row["community"]: round(row["conductance"], 6) for row in self.driver.execute_query(
                    CONDUCTANCE, name=scored, property=f"level{n}", database_=self.database).records}
                for n in range(depth)
            ]
            return Partition(levels, scores, self.name)
        except ClientError as err:
            raise LakegraphError(f"GDS Leiden failed: {err.message}") from None
        finally:
            for projection in (name, scored):
                self._drop(projection)


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
