"""The graph: its schema (one home for every name) and connections to Neo4j."""
