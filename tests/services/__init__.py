"""Real services for the test suite, started on free loopback ports and stopped afterwards.

Neo4j + GDS and Redis are lakegraph's own local runtimes; the Pub/Sub and BigQuery emulators
are started here. `python -m tests.services install` prepares what a fresh machine lacks.
"""
