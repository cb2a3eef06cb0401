"""The schema shape: labels and relationship types with counts, properties, and indexes —
what an agent needs before writing its own read-only Cypher."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field

from neo4j import Driver

from shapes.spec import Params, ShapeSpec

LABELS = "CALL db.labels() YIELD label RETURN label ORDER BY label"
TYPES = "CALL db.relationshipTypes() YIELD relationshipType RETURN relationshipType AS type ORDER BY type"
# Counts with a literal label or type come from Neo4j's count store (no scan); names are quoted.
COUNT_LABEL = "MATCH (n:{name}) RETURN {position} AS position, count(n) AS n"
COUNT_TYPE = "MATCH ()-[r:{name}]->() RETURN {position} AS position, count(r) AS n"
NODE_PROPERTIES = "CALL db.schema.nodeTypeProperties() YIELD nodeLabels, propertyName, propertyTypes RETURN nodeLabels, propertyName, propertyTypes"
REL_PROPERTIES = "CALL db.schema.relTypeProperties() YIELD relType, propertyName, propertyTypes RETURN relType, propertyName, propertyTypes"
INDEXES = "SHOW INDEXES YIELD name, type, labelsOrTypes, properties, state RETURN name, type, labelsOrTypes, properties, state ORDER BY name"


@dataclass(frozen=True)
class GraphSchema:
    labels: dict[str, int] = field(default_factory=dict)
    relationship_types: dict[str, int] = field(default_factory=dict)
    node_properties: dict[str, list[str]] = field(default_factory=dict)
    relationship_properties: dict[str, list[str]] = field(default_factory=dict)
    indexes: list[dict] = field(default_factory=list)


def graph_schema(driver: Driver, database: str) -> GraphSchema:
    def run(query: str) -> list:
        return driver.execute_query(query, database_=database).records

    node_props: dict[str, set[str]] = defaultdict(set)
    for row in run(NODE_PROPERTIES):
        if row["propertyName"]:
            for label in row["nodeLabels"]:
                node_props[label].add(f"{row['propertyName']}: {'|'.join(row['propertyTypes'] or [])}")
    rel_props: dict[str, set[str]] = defaultdict(set)
    for row in run(REL_PROPERTIES):
        if row["propertyName"]:
            rel_props[row["relType"].strip(":`")].add(f"{row['propertyName']}: {'|'.join(row['propertyTypes'] or [])}")
    return GraphSchema(
        labels=_counts(run, [row["label"] for row in run(LABELS)], COUNT_LABEL),
        relationship_types=_counts(run, [row["type"] for row in run(TYPES)], COUNT_TYPE),
        node_properties={label: sorted(props) for label, props in sorted(node_props.items())},
        relationship_properties={rel: sorted(props) for rel, props in sorted(rel_props.items())},
        indexes=[dict(row) for row in run(INDEXES)],
    )


def _counts(run: Callable[[str], list], names: list[str], template: str) -> dict[str, int]:
    if not names:
        return {}
    parts = [template.format(name=_quoted(name), position=position) for position, name in enumerate(names)]
    return {names[row["position"]]: row["n"] for row in run(" UNION ALL ".join(parts))}


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def render(schema: GraphSchema) -> str:
    lines = ["node labels:"]
    for label, count in schema.labels.items():
        lines.append(f"  (:{label})  {count} nodes")
        lines += [f"      {prop}" for prop in schema.node_properties.get(label, [])]
    lines.append("relationship types:")
    for rel, count in schema.relationship_types.items():
        lines.append(f"  [:{rel}]  {count} relationships")
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
    run=lambda shapes, p: graph_schema(shapes.driver, shapes.database),
    render=render,
    rows=("labels", "relationship_types", "node_properties", "relationship_properties", "indexes"),
)
