"""The schema shape: labels and relationship types with counts, properties, and indexes —
what an agent needs before writing its own read-only Cypher."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from shapes.access.versioned import Versioned
from shapes.spec import Params, ShapeSpec
from worker.shared.grants import EVERYTHING, Grant

if TYPE_CHECKING:
    from neo4j import Driver

WITHHELD = "count withheld within your grant"

NAMES = """
CALL () { CALL db.labels() YIELD label RETURN collect(label) AS labels }
CALL () { CALL db.relationshipTypes() YIELD relationshipType RETURN collect(relationshipType) AS types }
CALL () { CALL db.propertyKeys() YIELD propertyKey RETURN collect(propertyKey) AS keys }
RETURN labels, types, keys
"""
# Counts with a literal label or type come from Neo4j's count store (no scan) only while the
# count is aggregated alone: grouping it with the literal columns would scan every node.
COUNT_LABEL = "MATCH (n:{name}) WITH count(n) AS n RETURN 'label' AS kind, {position} AS position, n"
COUNT_TYPE = "MATCH ()-[r:{name}]->() WITH count(r) AS n RETURN 'type' AS kind, {position} AS position, n"
NODE_PROPERTIES = "CALL db.schema.nodeTypeProperties() YIELD nodeLabels, propertyName, propertyTypes RETURN nodeLabels, propertyName, propertyTypes"
REL_PROPERTIES = "CALL db.schema.relTypeProperties() YIELD relType, propertyName, propertyTypes RETURN relType, propertyName, propertyTypes"
INDEXES = "SHOW INDEXES YIELD name, type, labelsOrTypes, properties, state RETURN name, type, labelsOrTypes, properties, state ORDER BY name"


@dataclass(frozen=True)
class GraphSchema:
    labels: dict[str, int | None] = field(default_factory=dict)  # a count None: withheld within a restricted grant
    relationship_types: dict[str, int | None] = field(default_factory=dict)
    node_properties: dict[str, list[str]] = field(default_factory=dict)
    relationship_properties: dict[str, list[str]] = field(default_factory=dict)
    indexes: list[dict] = field(default_factory=list)


class GraphSchemaShape:
    """The schema, with its property listing cached: reading property types samples every node
    (seconds on a large graph), so it is read again only when the names it could list change —
    a label, a relationship type, a property key or an index appears or goes."""

    def __init__(self, driver: Driver, database: str) -> None:
        self.driver = driver
        self.database = database
        self.properties: Versioned[tuple[dict[str, list[str]], dict[str, list[str]]]] = Versioned(1)

    def _run(self, query: str) -> list:
        return self.driver.execute_query(query, database_=self.database).records

    def __call__(self, grant: Grant = EVERYTHING) -> GraphSchema:
        """The graph's structure; within a restricted grant its labels and types without their
        counts, which count what the grant does not show."""
        found = self._run(NAMES)[0]
        labels, types = sorted(found["labels"]), sorted(found["types"])
        indexes = [dict(row) for row in self._run(INDEXES)]
        names = (tuple(labels), tuple(types), tuple(sorted(found["keys"])), tuple(index["name"] for index in indexes))
        node_properties, relationship_properties = self.properties.get(names, None, self._read_properties)
        counts = self._counts(labels, types)
        shown = (lambda count: count) if grant.everything else (lambda count: None)
        return GraphSchema(
            labels={label: shown(counts["label", position]) for position, label in enumerate(labels) if ("label", position) in counts},
            relationship_types={rel: shown(counts["type", position]) for position, rel in enumerate(types) if ("type", position) in counts},
            node_properties=node_properties,
            relationship_properties=relationship_properties,
            indexes=indexes,
        )

    def _counts(self, labels: list[str], types: list[str]) -> dict[tuple[str, int], int]:
        """Every label's and type's count in one round trip; a name with nothing left is not listed."""
        rows = self._run(counts_query(labels, types)) if labels or types else []
        return {(row["kind"], row["position"]): row["n"] for row in rows if row["n"]}

    def _read_properties(self) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
        node_props: dict[str, set[str]] = defaultdict(set)
        for row in self._run(NODE_PROPERTIES):
            if row["propertyName"]:
                for label in row["nodeLabels"]:
                    node_props[label].add(f"{row['propertyName']}: {'|'.join(row['propertyTypes'] or [])}")
        rel_props: dict[str, set[str]] = defaultdict(set)
        for row in self._run(REL_PROPERTIES):
            if row["propertyName"]:
                rel_props[row["relType"].strip(":`")].add(f"{row['propertyName']}: {'|'.join(row['propertyTypes'] or [])}")
        return ({label: sorted(props) for label, props in sorted(node_props.items())}, {rel: sorted(props) for rel, props in sorted(rel_props.items())})


def counts_query(labels: list[str], types: list[str]) -> str:
    """One query counting every label and relationship type, each from the count store."""
    parts = [COUNT_LABEL.format(name=_quoted(name), position=position) for position, name in enumerate(labels)]
    parts += [COUNT_TYPE.format(name=_quoted(name), position=position) for position, name in enumerate(types)]
    return " UNION ALL ".join(parts)


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def render(schema: GraphSchema) -> str:
    lines = ["node labels:"]
    for label, count in schema.labels.items():
        lines.append(f"  (:{label})  {WITHHELD if count is None else f'{count} nodes'}")
        lines += [f"      {prop}" for prop in schema.node_properties.get(label, [])]
    lines.append("relationship types:")
    for rel, count in schema.relationship_types.items():
        lines.append(f"  [:{rel}]  {WITHHELD if count is None else f'{count} relationships'}")
        lines += [f"      {prop}" for prop in schema.relationship_properties.get(rel, [])]
    lines.append("indexes:")
    for index in schema.indexes:
        on = f"{'|'.join(index['labelsOrTypes'] or [])}({', '.join(index['properties'] or [])})"
        lines.append(f"  {index['name']:<32} {index['type'].lower():<9} {on}  {index['state'].lower()}")
    return "\n".join(lines)


class SchemaParams(Params):
    pass


SPEC = ShapeSpec(
    name="schema",
    purpose="The graph's labels, relationship types (with counts), properties and indexes.",
    guide="Read it before writing Cypher.",
    params=SchemaParams,
    output=GraphSchema,
    run=lambda shapes, p, grant: shapes.schema(grant),
    render=render,
    rows=("labels", "relationship_types", "node_properties", "relationship_properties", "indexes"),
    scoped=True,
)
