"""Each shape's command, one-line purpose and the module declaring its spec, generated from the
registry by `python -m shapes.spec.docs` (do not edit): `lakegraph --help` lists the shapes from here
without importing them, and a call imports its own shape's module only."""

from typing import NamedTuple


class Entry(NamedTuple):
    command: str
    home: str  # module:attribute of the spec
    purpose: str


SHAPES: dict[str, Entry] = {
    "outline": Entry(
        "outline",
        "shapes.outline:SPEC",
        "Table of contents from the libraries or any URI, with each node's links.",
    ),
    "search": Entry(
        "search",
        "shapes.search:SPEC",
        "Full-text search over documents and sections, scoped to a URI subtree.",
    ),
    "coverage": Entry(
        "coverage",
        "shapes.coverage:SPEC",
        "Which identifiers (fault codes, part numbers) no document or section mentions, and where the others are.",
    ),
    "bridge": Entry(
        "bridge",
        "shapes.bridge:SPEC",
        "Documents ↔ warehouse values: what mentions a value and where it occurs, what a document names, and two-way coverage of a column.",
    ),
    "links": Entry(
        "links",
        "shapes.links:SPEC",
        "Cross-references as data: resolved links, with broken the unresolved ones and why, with fallback those that landed by a fallback.",
    ),
    "themes": Entry(
        "themes",
        "shapes.themes:SPEC",
        "Themes: communities of documents that cite each other, with stable ids.",
    ),
    "theme_changes": Entry(
        "theme-changes",
        "shapes.themes:CHANGES_SPEC",
        "The change log of themes runs: born, dissolved, split, merged, grew, shrank, moved documents.",
    ),
    "table_context": Entry(
        "table-context",
        "shapes.table_context:SPEC",
        "The warehouse tables that answer a question asked in plain words, with columns, keys, real join partners and tagged terms.",
    ),
    "table": Entry(
        "table",
        "shapes.table_context:TABLE_SPEC",
        "One warehouse table by its id: columns, keys, real join partners and tagged terms.",
    ),
    "join_path": Entry(
        "join-path",
        "shapes.join_path:SPEC",
        "The real join path between two tables, with the ON clauses to write and each hop's evidence.",
    ),
    "joins": Entry(
        "joins",
        "shapes.joins:SPEC",
        "Declared keys and joins learned from query logs side by side, with evidence.",
    ),
    "run_sql": Entry(
        "run-sql",
        "shapes.run_sql:SPEC",
        "Read-only warehouse SQL within a row, time and (BigQuery) byte budget.",
    ),
    "schema": Entry(
        "schema",
        "shapes.schema:SPEC",
        "The graph's labels, relationship types (with counts), properties and indexes.",
    ),
    "cypher": Entry(
        "cypher",
        "shapes.cypher:SPEC",
        "Read-only Cypher, in a read transaction with a time limit and a row cap.",
    ),
    "freshness": Entry(
        "freshness",
        "shapes.freshness:SPEC",
        "When the graph last applied a change from each source, and what is still queued.",
    ),
}
COMMANDS: dict[str, str] = {entry.command: entry.purpose for entry in SHAPES.values()}
