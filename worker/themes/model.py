"""What a themes run works on and produces, independent of the engine that ran Leiden."""

from __future__ import annotations

from dataclasses import dataclass, field

from worker.graph.content import content_hash


@dataclass(frozen=True)
class DocumentGraph:
    """Documents as nodes, links collapsed to documents at both ends, undirected, weighted by count."""

    documents: list[str]  # every document uri, linked or not
    edges: dict[tuple[str, str], int]  # (a, b) with a < b -> link count
    element_ids: dict[str, str] = field(default_factory=dict)  # uri -> Neo4j element id, for projections
    directed: dict[tuple[str, str], int] = field(default_factory=dict)  # (source, target) -> link count

    @property
    def fingerprint(self) -> str:
        return content_hash(sorted([a, b, weight] for (a, b), weight in self.edges.items()))

    @property
    def linked(self) -> list[str]:
        return sorted({uri for pair in self.edges for uri in pair})


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

    @property
    def empty(self) -> bool:
        return not (self.born or self.dissolved or self.split or self.merged or self.grew or self.shrank or self.moved)
