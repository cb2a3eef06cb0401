"""The local Neo4j's page cache sized to its store (worker/runtime/memory.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from worker.runtime.memory import outgrown, pagecache_for, size_bytes, store_bytes

GB = 2**30


@pytest.mark.parametrize(("text", "count"), [("512m", 512 * 2**20), ("2g", 2 * GB), ("512.00MiB", 512 * 2**20), ("1.50GiB", int(1.5 * GB)), ("4096", 4096)])
def test_sizes_read_as_settings_write_them_and_as_the_server_reports_them(text: str, count: int) -> None:
    assert size_bytes(text) == count


def test_auto_gives_the_store_a_quarter_to_spare_within_bounds() -> None:
    memory = 24 * GB
    assert pagecache_for("auto", 0, memory) == "512m"  # an empty store still gets the floor
    assert pagecache_for("auto", 3 * GB, memory) == "3840m"
    assert pagecache_for("auto", 40 * GB, memory) == "12288m"  # never more than half the machine
    assert pagecache_for("2g", 40 * GB, memory) == "2g"  # a size set by hand is kept


def test_an_outgrown_cache_is_named_with_the_size_to_set(tmp_path: Path) -> None:
    database = tmp_path / "databases" / "neo4j"
    database.mkdir(parents=True)
    (database / "neostore.nodestore.db").write_bytes(b"\0" * 3_000_000)
    store = store_bytes(tmp_path)
    assert store == 3_000_000
    assert outgrown(store, "512m") is None
    warning = outgrown(store, "2m")
    assert warning is not None and "outgrown the page cache (2m)" in warning and "at least 4m" in warning
