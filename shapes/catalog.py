"""The shape commands and their one-line purposes, generated from the registry by `python -m
shapes.docs` (do not edit): `lakegraph --help` lists the shapes from here without importing them."""

COMMANDS: dict[str, str] = {
    "outline": "Table of contents from the libraries or any URI, with each node's links.",
    "search": "Full-text search over documents and sections, scoped to a URI subtree.",
    "coverage": "Which identifiers (fault codes, part numbers) no document or section mentions, and where the others are.",
    "bridge": "Documents ↔ warehouse values: what mentions a value and where it occurs, what a document names, and two-way coverage of a column.",
    "links": "Cross-references as data: resolved links, or with broken the unresolved ones and why.",
    "themes": "Themes: communities of documents that cite each other, with stable ids.",
    "theme-changes": "The change log of themes runs: born, dissolved, split, merged, grew, shrank, moved documents.",
    "table-context": "The warehouse tables that answer a question, with columns, keys, real join partners and tagged terms.",
    "join-path": "The real join path between two tables, with the ON clauses to write and each hop's evidence.",
    "joins": "Declared keys and joins learned from query logs side by side, with evidence.",
    "run-sql": "Read-only warehouse SQL within a row, time and (BigQuery) byte budget.",
    "schema": "The graph's labels, relationship types (with counts), properties and indexes.",
    "cypher": "Read-only Cypher, in a read transaction with a time limit and a row cap.",
    "freshness": "When the graph last applied a change from each source, and what is still queued.",
}
