"""The local Neo4j's memory, sized to the machine and its store at every start.

The page cache holds the store: Neo4j serves reads from it, and a store larger than the cache reads
from disk (at 100,000 documents the store passed 2 GB while the cache stayed at its 512 MB
default). The heap holds queries, transactions (Neo4j caps them together at 70% of it) and GDS's
projections, which grow with the estate too. `"auto"` for either sizes it at every start, leaving
room for lakegraph's own processes and the OS; `lakegraph doctor` says when the store has outgrown
what the runtime runs with."""

from __future__ import annotations

import os
import re
from pathlib import Path

AUTO = "auto"
MIN_PAGECACHE = 512 * 2**20
HEADROOM = 1.25  # room for the store to grow until the next start
ROUND_TO = 64 * 2**20
MIN_HEAP = 1 * 2**30  # what the heap's setting gave before it was sized
FLOOR_HEAP = 512 * 2**20  # never less, even on a machine too small for the rest
MAX_HEAP = 31 * 2**30  # past it the JVM stops compressing object pointers
# Kept for lakegraph's worker, Redis and the OS: a quarter of the machine, at least 2 GB.
RESERVED_SHARE, MIN_RESERVED = 4, 2 * 2**30
# What the store grows to per byte of a library's files, measured: the PowerShell estate's 1.08 GB
# of Markdown under 32 names made a 5.74 GB store. A first start before a first load sizes the
# memory for what the configured libraries will make, not for the empty store.
STORE_PER_SOURCE_BYTE = 5.5
CGROUP_LIMIT = Path("/sys/fs/cgroup/memory.max")
UNITS = {"": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}
_SIZE = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*([kmgt]?)(?:i?b)?\s*$", re.IGNORECASE)


def size_bytes(size: str) -> int:
    """A size in bytes, as settings write it (512m, 2g) or as the server reports it (512.00MiB)."""
    found = _SIZE.match(size)
    if found is None:
        raise ValueError(f"not a size: {size!r}")
    return int(float(found.group(1)) * UNITS[found.group(2).lower()])


def size_text(count: int) -> str:
    """Bytes as Neo4j's size syntax, in whole megabytes."""
    return f"{max(1, -(-count // 2**20))}m"


def store_bytes(data_dir: Path) -> int:
    """What the databases hold on disk (the files the page cache maps; transaction logs included,
    a slight overestimate)."""
    return source_bytes([data_dir / "databases"])


def source_bytes(folders: list[Path]) -> int:
    """What the files under these folders hold (a folder that does not exist holds nothing)."""
    total = 0
    for root in folders:
        for folder, _, files in os.walk(root):
            for name in files:
                try:
                    total += os.stat(os.path.join(folder, name)).st_size
                except OSError:
                    continue
    return total


def expected_store(store: int, sources: int) -> int:
    """The store to size memory for: what is on disk, or what the libraries will make of it."""
    return max(store, int(sources * STORE_PER_SOURCE_BYTE))


def physical_memory() -> int:
    """The machine's memory, or the container's limit where one is set (cgroup v2)."""
    machine = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    try:
        limit = CGROUP_LIMIT.read_text().strip()
    except OSError:
        return machine
    return min(machine, int(limit)) if limit.isdigit() else machine


def _rounded(count: int) -> int:
    return -(-count // ROUND_TO) * ROUND_TO


def pagecache_for(configured: str, store: int, memory: int) -> str:
    """The page cache to start with: the configured size, or for "auto" the store with headroom,
    at least MIN_PAGECACHE and at most half the machine's memory."""
    if configured != AUTO:
        return configured
    return size_text(min(max(_rounded(int(store * HEADROOM)), MIN_PAGECACHE), memory // 2))


def heap_wanted(store: int) -> int:
    """What the estate asks of the heap: half its store (the largest reads and GDS's projections
    grow with it)."""
    return _rounded(store // 2)


def heap_for(configured: str, store: int, memory: int, pagecache: str) -> str:
    """The heap to start with: the configured size, or for "auto" what the store wants (at least
    MIN_HEAP and a sixteenth of the machine), within what the machine has left beside the page
    cache and the reserve for lakegraph and the OS (at most a quarter of the machine and MAX_HEAP,
    at least FLOOR_HEAP)."""
    if configured != AUTO:
        return configured
    reserved = max(MIN_RESERVED, memory // RESERVED_SHARE)
    room = min(MAX_HEAP, memory // 4, memory - reserved - size_bytes(pagecache))
    wanted = max(MIN_HEAP, _rounded(memory // 16), heap_wanted(store))  # at least a sixteenth of the machine
    return size_text(max(FLOOR_HEAP, min(wanted, room // ROUND_TO * ROUND_TO)))


def small_heap(heap: int, store: int) -> str | None:
    """Why the running heap is too small for the store, or None."""
    wanted = heap_wanted(store)
    if heap >= wanted:
        return None
    return (
        f"the heap ({size_text(heap)}) is below what the store asks ({size_text(wanted)}): a themes run or a large read may run out of memory; "
        f'restart with neo4j.heap_size = "auto" (it sizes the heap at each start) or at least {size_text(wanted)}'
    )


def outgrown(store: int, pagecache: str) -> str | None:
    """Why the running cache is too small for the store, or None."""
    if store <= size_bytes(pagecache):
        return None
    return (
        f"the store ({store / 2**30:.1f} GB) has outgrown the page cache ({pagecache}): reads go to disk; "
        f'restart to resize it (neo4j.pagecache_size = "auto") or set neo4j.pagecache_size to at least {size_text(int(store * HEADROOM))}'
    )
