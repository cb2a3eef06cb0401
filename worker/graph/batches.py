"""Writes over the whole estate, cut into transactions of bounded size.

Neo4j holds a transaction's changes in memory until it commits, and the transactions of a server
share one limit (`dbms.memory.transaction.total.max`, 70% of the heap by default): a write that
touches every document in one transaction fails on a large estate whatever the code around it
does. Each batch here is its own transaction, sized from the server's own limit so that it takes a
bounded share of it whatever the heap; a failure loses at most one batch, and the callers are
written so that a repeated or half-done sequence of batches converges (level-triggered)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TypeVar

from neo4j import Driver, ManagedTransaction
from neo4j.exceptions import Neo4jError

from worker.runtime.memory import size_bytes

Row = TypeVar("Row")

# The limits that bound a transaction: all of them together, one database's together, one alone.
LIMIT_SETTINGS = ("dbms.memory.transaction.total.max", "db.memory.transaction.total.max", "db.memory.transaction.max")
TRANSACTION_LIMITS = "SHOW SETTINGS YIELD name, value WHERE name IN $names RETURN collect(value) AS values"
ASSUMED_LIMIT = 512 * 2**20  # a server that does not show its settings (a managed service)
SHARE = 4  # a batch takes at most this part of the limit: the worker's other transactions share it
MOST_ROWS, LEAST_ROWS = 20_000, 100
# Below this, even the smallest batches of the largest rows lakegraph writes (a theme with its
# summary, 16 KB) take more than SHARE of the limit: writes crowd each other out.
LEAST_LIMIT = SHARE * LEAST_ROWS * 16_384


def transaction_limit(driver: Driver, database: str) -> int:
    """The memory a transaction may use on this server: the smallest limit set (0 is none)."""
    try:
        values = driver.execute_query(TRANSACTION_LIMITS, names=list(LIMIT_SETTINGS), database_=database).records[0]["values"]
    except Neo4jError:
        return ASSUMED_LIMIT
    limits = [size_bytes(value) for value in values if value and size_bytes(value) > 0]
    return min(limits, default=ASSUMED_LIMIT)


def small_limit(limit: int) -> str | None:
    """Why a transaction memory limit is too small for lakegraph's writes, or None."""
    if limit >= LEAST_LIMIT:
        return None
    return (
        f"the transaction memory limit ({limit / 2**20:.1f} MiB) is below the {LEAST_LIMIT / 2**20:.1f} MiB lakegraph's smallest batches take: "
        "raise neo4j.heap_size (transactions get 70% of it) or dbms.memory.transaction.total.max (neo4j.server_config, or your server's neo4j.conf)"
    )


def rows_per_batch(limit: int, row_bytes: int, most: int = MOST_ROWS, least: int = LEAST_ROWS) -> int:
    """How many rows of `row_bytes` each (what one costs a transaction up to its commit, measured)
    make a batch within SHARE of `limit`, between `least` and `most`."""
    return max(least, min(most, limit // SHARE // row_bytes))


def chunks(rows: Sequence[Row], size: int) -> Iterator[Sequence[Row]]:
    for start in range(0, len(rows), size):
        yield rows[start : start + size]


def write_in_batches(driver: Driver, database: str, query: str, rows: Sequence[object], size: int, params: Mapping[str, object] | None = None) -> None:
    """`query` with `$rows` bound to each batch of `rows` in turn (and `params`), each batch committed alone."""

    def write(tx: ManagedTransaction, batch: Sequence[object]) -> None:
        tx.run(query, {**(params or {}), "rows": list(batch)}).consume()

    with driver.session(database=database) as session:
        for batch in chunks(rows, size):
            session.execute_write(write, batch)


def drain(
    driver: Driver,
    database: str,
    query: str,
    size: int,
    params: Mapping[str, object] | None = None,
    then: Callable[[ManagedTransaction], None] | None = None,
) -> int:
    """Run `query` — which changes at most `$batch` things and returns how many as `n` — until it
    changes none; the total. Each round is its own transaction, and `then` runs in each round that
    changed something (a source's stamp, which commits with the change)."""

    def round_(tx: ManagedTransaction) -> int:
        done: int = tx.run(query, {**(params or {}), "batch": size}).single(strict=True)["n"]
        if done and then is not None:
            then(tx)
        return done

    total = 0
    with driver.session(database=database) as session:
        while done := session.execute_write(round_):
            total += done
    return total
