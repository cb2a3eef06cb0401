"""Every read shape, in the order the CLI help, the MCP tool list, the HTTP API and the README show them."""

from __future__ import annotations

from shapes import bridge, coverage, cypher, freshness, graph_schema, join_path, joins, links, outline, search, sql, tables, themes
from shapes.spec import ShapeSpec

SPECS: dict[str, ShapeSpec] = {
    spec.name: spec
    for spec in (
        outline.SPEC,
        search.SPEC,
        coverage.SPEC,
        bridge.SPEC,
        links.SPEC,
        themes.SPEC,
        themes.CHANGES_SPEC,
        tables.SPEC,
        join_path.SPEC,
        joins.SPEC,
        sql.SPEC,
        graph_schema.SPEC,
        cypher.SPEC,
        freshness.SPEC,
    )
}
