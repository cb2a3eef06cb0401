"""The graph's write locks, taken first in a transaction so that writers of one source apply their
changes one at a time. A lock is a write on one node (set, then remove, a property): Neo4j holds
it until the transaction ends."""

from __future__ import annotations

from typing import TYPE_CHECKING

from worker.graph.schema import Label

if TYPE_CHECKING:
    from neo4j import ManagedTransaction

# Every document transaction first write-locks its library's node, so concurrent workers apply
# changes to one library one at a time: a link re-resolved by one always sees what the other
# committed (otherwise a move — delete here, create there — could strand a link as unresolved).
# The bridge takes the same lock while it finds a library's mentions.
LOCK_LIBRARIES = f"""
UNWIND $names AS name
MATCH (l:{Label.LIBRARY} {{uri: name}})
SET l._lock = true
REMOVE l._lock
"""
# Relearns take the query log's stamp node first: two never credit the same uncredited run, and
# an absorb (which stamps it early in its transaction) and a relearn see each other's commits.
LOCK_QUERY_LOG = f"MATCH (s:{Label.SOURCE} {{id: 'query-log'}}) SET s._lock = true REMOVE s._lock"
LIBRARY_NAMES = f"MATCH (l:{Label.LIBRARY}) RETURN l.uri AS name ORDER BY name"


def lock_libraries(tx: ManagedTransaction, names: list[str]) -> None:
    """Write-lock the named libraries' nodes, in name order (two writers never deadlock)."""
    tx.run(LOCK_LIBRARIES, names=sorted(names)).consume()


def lock_query_log(tx: ManagedTransaction) -> None:
    tx.run(LOCK_QUERY_LOG).consume()
