"""Local engines lakegraph starts itself when none is configured: Neo4j + GDS and Redis."""
