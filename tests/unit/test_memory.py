"""The local Neo4j's memory sized to its store and the machine (worker/runtime/memory.py), and the
write batches sized to the server's transaction memory limit (worker/graph/batches.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from worker.graph.batches import rows_per_batch, small_limit
from worker.graph.engine_errors import explain
from worker.runtime.memory import expected_store, heap_for, outgrown, pagecache_for, size_bytes, small_heap, source_bytes, store_bytes

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


def test_auto_sizes_the_heap_to_the_store_within_what_the_machine_leaves() -> None:
    memory = 24 * GB
    assert heap_for("auto", 0, memory, "512m") == "1536m"  # a sixteenth of the machine
    assert heap_for("auto", 5 * GB, memory, "6400m") == "2560m"  # half the store
    assert heap_for("auto", 40 * GB, memory, "12288m") == "6144m"  # never more than a quarter of the machine
    assert heap_for("auto", 5 * GB, 8 * GB, "4096m") == "2048m"  # what the page cache and the reserve leave
    assert heap_for("auto", 5 * GB, 4 * GB, "2048m") == "512m"  # a machine too small still gets the floor
    assert heap_for("3g", 40 * GB, memory, "12288m") == "3g"  # a size set by hand is kept


def test_a_small_heap_is_named_with_the_size_to_set() -> None:
    assert small_heap(4 * GB, 5 * GB) is None
    assert small_heap(768 * 2**20, 0) is None  # an empty store asks for nothing
    warning = small_heap(1 * GB, 5 * GB)
    assert warning is not None and "heap (1024m)" in warning and 'neo4j.heap_size = "auto"' in warning and "at least 2560m" in warning


def test_batches_take_a_share_of_the_transaction_limit() -> None:
    assert rows_per_batch(20 * 2**20, 4096) == 1280  # a quarter of 20 MB
    assert rows_per_batch(716 * 2**20, 4096) == 20_000  # never more than the most
    assert rows_per_batch(2**20, 4096) == 100  # never fewer than the least
    assert rows_per_batch(716 * 2**20, 4096, most=5000) == 5000
    assert small_limit(20 * 2**20) is None
    warning = small_limit(2**20)
    assert warning is not None and "dbms.memory.transaction.total.max" in warning and "neo4j.heap_size" in warning


def test_an_error_that_is_not_the_engines_is_not_explained_as_one() -> None:
    assert explain(ValueError("a bug")) is None


def test_a_first_start_sizes_memory_for_what_the_libraries_will_make(tmp_path: Path) -> None:
    library = tmp_path / "library" / "folder"
    library.mkdir(parents=True)
    (library / "page.md").write_bytes(b"x" * 1000)
    (tmp_path / "library" / "other.md").write_bytes(b"x" * 1000)
    assert source_bytes([tmp_path / "library", tmp_path / "absent"]) == 2000
    assert expected_store(0, 2000) == 11_000  # an empty store: what 2,000 bytes of pages make
    assert expected_store(50_000, 2000) == 50_000  # a loaded store counts as it is
