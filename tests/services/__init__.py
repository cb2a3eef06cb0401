"""Test-only services: the Knowledge Catalog API server and the neocarta MCP server.

Neo4j + GDS, Redis and the Google emulators (Pub/Sub, BigQuery, Cloud Storage) are lakegraph's own
runtimes (worker/runtime), which `lakegraph demo --google` starts too. `python -m tests.services
install` prepares what a fresh machine lacks.
"""
