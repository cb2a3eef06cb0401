"""A Neo4j error the code could not retry, said in one line: what happened and what to do.

Neo4j's status code decides the advice, its message's first line gives the specifics (the limit
reached and what was in use). The driver has already retried what it deems transient (for 30 s),
so what reaches here stays failed until someone changes something. Imports the driver's exception
types only once the driver is loaded: the command line's start-up never pays for it."""

from __future__ import annotations

import sys

from worker.exceptions import first_line

# The memory a transaction may take, by the code Neo4j answers with: the setting that bounds it.
MEMORY_LIMITS = {
    "Neo.TransientError.General.MemoryPoolOutOfMemoryError": "dbms.memory.transaction.total.max",
    "Neo.TransientError.General.TransactionMemoryLimit": "db.memory.transaction.max",
    "Neo.TransientError.General.TransactionOutOfMemoryError": "server.memory.off_heap.transaction_max_size",
    "Neo.TransientError.General.OutOfMemoryError": "",  # the heap itself
}
MEMORY_ADVICE = (
    'raise neo4j.heap_size (Neo4j gives open transactions 70% of it; "auto" sizes it to the store at each start){also}; '
    "on your own Neo4j, raise the same in its neo4j.conf"
)


def explain(error: BaseException) -> str | None:
    """The line for a Neo4j or driver error, or None when `error` is neither."""
    exceptions = sys.modules.get("neo4j.exceptions")
    if exceptions is None:
        return None
    if isinstance(error, exceptions.Neo4jError):
        code = error.code or ""
        message = first_line(error.message or error, 300)
        if code in MEMORY_LIMITS:
            setting = MEMORY_LIMITS[code]
            also = f" or set {setting} in neo4j.server_config" if setting else ""
            return f"Neo4j ran out of memory ({message}): {MEMORY_ADVICE.format(also=also)}"
        return f"Neo4j refused the work ({code or type(error).__name__}: {message})"
    if isinstance(error, exceptions.DriverError):
        return f"Neo4j became unreachable ({first_line(error)}); `lakegraph doctor` says whether it runs"
    return None
