"""The local Neo4j's page cache, sized to its store: Neo4j serves reads from the page cache, and a
store larger than the cache reads from disk (at 100,000 documents the store passed 2 GB while the
cache stayed at its 512 MB default). `neo4j.pagecache_size = "auto"` sizes it at every start;
`lakegraph doctor` says when the store has outgrown the cache it runs with."""

from __future__ import annotations

import os
import re
from pathlib import Path

AUTO = "auto"
MIN_PAGECACHE = 512 * 2**20
HEADROOM = 1.25  # room for the store to grow until the next start
ROUND_TO = 64 * 2**20
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
    total = 0
    for folder, _, files in os.walk(data_dir / "databases"):
        for name in files:
            try:
                total += os.stat(os.path.join(folder, name)).st_size
            except OSError:
                continue
    return total


def physical_memory() -> int:
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def pagecache_for(configured: str, store: int, memory: int) -> str:
    """The page cache to start with: the configured size, or for "auto" the store with headroom,
    at least MIN_PAGECACHE and at most half the machine's memory."""
    if configured != AUTO:
        return configured
    wanted = -(-int(store * HEADROOM) // ROUND_TO) * ROUND_TO
    return size_text(min(max(wanted, MIN_PAGECACHE), memory // 2))


def outgrown(store: int, pagecache: str) -> str | None:
    """Why the running cache is too small for the store, or None."""
    if store <= size_bytes(pagecache):
        return None
    return (
        f"the store ({store / 2**30:.1f} GB) has outgrown the page cache ({pagecache}): reads go to disk; "
        f'restart to resize it (neo4j.pagecache_size = "auto") or set neo4j.pagecache_size to at least {size_text(int(store * HEADROOM))}'
    )
