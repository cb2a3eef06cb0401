"""The join path shape: how to join table A to table B, with the exact ON clauses and evidence.

Declared keys come first: the fewest hops over REFERENCES alone wins when one exists within the
hop limit. Otherwise learned joins (JOINS_WITH) may be used, each costing more than a declared
hop and less the higher its confidence (cost 1 declared, 2 − confidence learned), so the path
returned is the cheapest by that measure. Composite keys become one hop with `AND`-ed equalities.
"""

from __future__ import annotations

import heapq
from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pydantic import Field

from shapes.access.scope import visible_table
from shapes.access.versioned import Versioned
from shapes.freshness import versions
from shapes.spec import Params, ShapeSpec, Words
from shapes.spec.exceptions import Conflict, NotFound, ShapeError
from worker.graph.schema import Label, Rel
from worker.shared.grants import EVERYTHING, Grant

if TYPE_CHECKING:
    from neo4j import Driver

MAX_HOPS = 6
KEPT_GRAPHS = 8  # join graphs kept for one version: the whole one and those of the grants asking
FIND_TABLE = f"""
MATCH (t:{Label.TABLE}) WHERE (t.id = $name OR t.id ENDS WITH '.' + $name) AND {visible_table("t.id")}
RETURN t.id AS id ORDER BY id LIMIT 10
"""
EDGES = f"""
MATCH (ta:{Label.TABLE})-[:{Rel.HAS_COLUMN}]->(a:{Label.COLUMN})-[k:{Rel.REFERENCES}]->(b:{Label.COLUMN})<-[:{Rel.HAS_COLUMN}]-(tb:{Label.TABLE})
RETURN 'declared' AS kind, ta.id AS left, tb.id AS right, k.constraint AS name, a.name AS left_column, b.name AS right_column,
       1.0 AS confidence, null AS executions, null AS queries, null AS users, null AS last_seen, k.ordinal AS ordinal
UNION ALL
MATCH (ta:{Label.TABLE})-[:{Rel.HAS_COLUMN}]->(a:{Label.COLUMN})-[j:{Rel.JOINS_WITH}]->(b:{Label.COLUMN})<-[:{Rel.HAS_COLUMN}]-(tb:{Label.TABLE})
WHERE ta <> tb AND j.confidence >= $min_confidence
RETURN 'learned' AS kind, ta.id AS left, tb.id AS right, null AS name, a.name AS left_column, b.name AS right_column,
       j.confidence AS confidence, j.executions AS executions, j.distinct_queries AS queries, j.distinct_users AS users,
       j.last_seen AS last_seen, 0 AS ordinal
"""


@dataclass(frozen=True)
class Hop:
    left: str  # table id, already in the path
    right: str  # table id joined in by this hop
    kind: str  # declared or learned
    pairs: list[tuple[str, str]]  # (left column, right column)
    on: str
    evidence: dict


@dataclass(frozen=True)
class JoinPath:
    source: str
    target: str
    max_hops: int
    hops: list[Hop] = field(default_factory=list)
    found: bool = False
    reason: str = ""

    @property
    def sql(self) -> str:
        if not self.hops:
            return ""
        lines = [f"FROM {_quote(self.source)} AS {_alias(self.source)}"]
        lines += [f"JOIN {_quote(hop.right)} AS {_alias(hop.right)} ON {hop.on}" for hop in self.hops]
        return "\n".join(lines)


@dataclass(frozen=True)
class _Edge:
    kind: str
    left: str
    right: str
    pairs: tuple[tuple[str, str], ...]
    evidence: dict

    @property
    def cost(self) -> float:
        return 1.0 if self.kind == "declared" else 2.0 - float(self.evidence["confidence"])


def _alias(table_id: str) -> str:
    return table_id.rsplit(".", 1)[-1]


def _quote(table_id: str) -> str:
    return f"`{table_id}`"


def _within(graph: dict[str, list[_Edge]], grant: Grant) -> dict[str, list[_Edge]]:
    return {table: [edge for edge in out if grant.sees_table(edge.right)] for table, out in graph.items() if grant.sees_table(table)}


class JoinPathShape:
    def __init__(self, driver: Driver, database: str) -> None:
        self.driver = driver
        self.database = database
        self.graphs: Versioned[dict[str, list[_Edge]]] = Versioned(KEPT_GRAPHS)

    def resolve(self, name: str, grant: Grant = EVERYTHING) -> str:
        """The table `name` means among those the grant sees: a table outside them is not found,
        in the same words as one that does not exist."""
        name = name.strip().strip("`")
        if not name:
            raise ShapeError("empty table name")
        found = [row["id"] for row in self.driver.execute_query(FIND_TABLE, name=name, **grant.cypher(), database_=self.database).records]
        if not found:
            raise NotFound(f"no table named {name!r}; `lakegraph table-context QUESTION` finds tables by meaning")
        if len(found) > 1 and name not in found:
            raise Conflict(f"{name!r} is ambiguous: {', '.join(found)}; give more of its id")
        return name if name in found else found[0]

    def __call__(self, table_a: str, table_b: str, max_hops: int = 3, min_confidence: float = 0.0, grant: Grant = EVERYTHING) -> JoinPath:
        """The cheapest path over the tables the grant sees: no hop passes a table the caller may
        not see, so a path that would is not found."""
        if not 1 <= max_hops <= MAX_HOPS:
            raise ShapeError(f"max hops must be between 1 and {MAX_HOPS}, got {max_hops}")
        source, target = self.resolve(table_a, grant), self.resolve(table_b, grant)
        if source == target:
            raise ShapeError(f"{source} is both ends; a self-join needs no path")
        edges = self._edges(min_confidence, grant)
        declared_only = {table: [edge for edge in out if edge.kind == "declared"] for table, out in edges.items()}
        for graph in (declared_only, edges):
            path = _cheapest(graph, source, target, max_hops)
            if path is not None:
                hops = [_hop(edge) for edge in path]
                return JoinPath(source, target, max_hops, hops, True)
        return JoinPath(source, target, max_hops, [], False, f"no chain of declared keys or learned joins of at most {max_hops} hops connects them")

    def _edges(self, min_confidence: float, grant: Grant) -> dict[str, list[_Edge]]:
        """The join graph (within a restricted grant, its part between tables the grant sees),
        rebuilt only when the warehouse or query log changed since the last call."""
        stamps = versions(self.driver, self.database, "warehouse", "query-log")
        whole = self.graphs.get(stamps, (min_confidence, EVERYTHING.key), lambda: self._read_edges(min_confidence))
        if grant.everything:
            return whole
        return self.graphs.get(stamps, (min_confidence, grant.key), lambda: _within(whole, grant))

    def _read_edges(self, min_confidence: float) -> dict[str, list[_Edge]]:
        """Both directions of every table pair, composite keys grouped by constraint name."""
        grouped: dict[tuple[str, ...], list] = defaultdict(list)
        for row in self.driver.execute_query(EDGES, min_confidence=min_confidence, database_=self.database).records:
            key: tuple[str, ...]
            if row["kind"] == "declared":
                key = ("declared", row["left"], row["right"], row["name"])
            else:
                key = ("learned", row["left"], row["right"], row["left_column"], row["right_column"])
            grouped[key].append(row)
        graph: dict[str, list[_Edge]] = defaultdict(list)
        for key, rows in grouped.items():
            rows.sort(key=lambda row: row["ordinal"] or 0)
            first = rows[0]
            evidence = (
                {"constraint": first["name"], "confidence": 1.0}
                if key[0] == "declared"
                else {name: first[name] for name in ("confidence", "executions", "queries", "users", "last_seen")}
            )
            pairs = tuple((row["left_column"], row["right_column"]) for row in rows)
            left, right = first["left"], first["right"]
            graph[left].append(_Edge(key[0], left, right, pairs, evidence))
            graph[right].append(_Edge(key[0], right, left, tuple((b, a) for a, b in pairs), evidence))
        return graph


def _cheapest(graph: dict[str, list[_Edge]], source: str, target: str, max_hops: int) -> list[_Edge] | None:
    """Dijkstra over (table, hops used), so the hop limit never hides a cheaper longer path."""
    queue: list[tuple[float, int, int, str, tuple[_Edge, ...]]] = [(0.0, 0, 0, source, ())]
    best: dict[tuple[str, int], float] = {}
    tie = 0
    while queue:
        cost, hops, _, table, path = heapq.heappop(queue)
        if table == target:
            return list(path)
        if hops == max_hops:
            continue
        for edge in sorted(graph.get(table, []), key=lambda edge: (edge.cost, edge.right)):
            if any(step.left == edge.right for step in path) or edge.right == source:
                continue
            state = (edge.right, hops + 1)
            total = cost + edge.cost
            if total < best.get(state, float("inf")):
                best[state] = total
                tie += 1
                heapq.heappush(queue, (total, hops + 1, tie, edge.right, (*path, edge)))
    return None


def _hop(edge: _Edge) -> Hop:
    left, right = _alias(edge.left), _alias(edge.right)
    on = " AND ".join(f"{left}.{a} = {right}.{b}" for a, b in edge.pairs)
    return Hop(edge.left, edge.right, edge.kind, list(edge.pairs), on, edge.evidence)


def render(path: JoinPath) -> str:
    if not path.found:
        return f"no join path from {path.source} to {path.target}: {path.reason}"
    kinds = {hop.kind for hop in path.hops}
    lines = [f"{path.source} → {path.target}: {len(path.hops)} hop(s), {' + '.join(sorted(kinds))}"]
    for number, hop in enumerate(path.hops, 1):
        if hop.kind == "declared":
            why = f"declared key {hop.evidence['constraint']}"
        else:
            ev = hop.evidence
            why = f"learned: confidence {ev['confidence']:.2f}, {ev['executions']} executions, {ev['queries']} queries, {ev['users']} users, last {ev['last_seen']}"
        lines.append(f"  {number}. {hop.left} ⋈ {hop.right} ON {hop.on}   ({why})")
    lines += ["", path.sql]
    return "\n".join(lines)


class JoinPathParams(Params):
    table_a: Words = Field(description="A table id or its tail: 'service.work_orders' or 'work_orders'")
    table_b: Words = Field(description="The table to reach")
    max_hops: int = Field(3, ge=1, le=MAX_HOPS, description="Longest chain of joins to consider")


SPEC = ShapeSpec(
    name="join_path",
    purpose="The real join path between two tables, with the ON clauses to write and each hop's evidence.",
    guide="Declared keys first, then joins learned from the query log by confidence.",
    params=JoinPathParams,
    output=JoinPath,
    refers={"source": "table", "target": "table", "left": "table", "right": "table"},
    run=lambda shapes, p, grant: shapes.join_paths(p.table_a, p.table_b, p.max_hops, grant=grant),
    render=render,
    rows=("hops",),
    needs="tables",
    arguments=("table_a", "table_b"),
    scoped=True,
)
