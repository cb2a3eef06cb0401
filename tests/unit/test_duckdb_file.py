"""The read-only DuckDB warehouse of run_sql: one open per burst, writers free once it is over,
a replaced file read anew, concurrent queries answered right, and the time limit still kept."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import duckdb
import pytest

from shapes.access.duckdb_file import DuckDbFile
from shapes.access.sql_runner import SqlRunner
from shapes.spec.exceptions import ShapeError
from worker.settings import load_settings

WRITE = "import duckdb, sys\nwith duckdb.connect(sys.argv[1]) as con:\n    con.execute('INSERT INTO t VALUES (99)')\n"


def make(path: Path, values: range) -> Path:
    with duckdb.connect(str(path)) as con:
        con.execute("CREATE TABLE t (a INTEGER)")
        con.execute(f"INSERT INTO t SELECT * FROM range({values.start}, {values.stop})")
    return path


def count(file: DuckDbFile) -> int:
    with file.cursor() as con:
        row = con.execute("SELECT count(*) FROM t").fetchone()
    assert row is not None
    return row[0]


def writes_from_another_process(path: Path) -> bool:
    return subprocess.run([sys.executable, "-c", WRITE, str(path)], capture_output=True, timeout=60).returncode == 0


def test_a_burst_opens_the_file_once_and_frees_it_for_writers_after_the_linger(tmp_path: Path) -> None:
    file = DuckDbFile(make(tmp_path / "w.duckdb", range(10)), linger=0.5)
    assert [count(file) for _ in range(5)] == [10] * 5 and file.opened == 1
    assert not writes_from_another_process(file.path)  # DuckDB's rule while the file is open
    time.sleep(1.0)
    assert writes_from_another_process(file.path)
    assert count(file) == 11 and file.opened == 2
    file.close()


def test_no_linger_closes_after_each_query(tmp_path: Path) -> None:
    file = DuckDbFile(make(tmp_path / "w.duckdb", range(3)), linger=0)
    assert count(file) == 3
    assert writes_from_another_process(file.path)
    assert count(file) == 4 and file.opened == 2


def test_a_file_replaced_on_disk_is_read_anew(tmp_path: Path) -> None:
    file = DuckDbFile(make(tmp_path / "w.duckdb", range(3)), linger=60)
    assert count(file) == 3
    os.replace(make(tmp_path / "new.duckdb", range(7)), file.path)
    assert count(file) == 7 and file.opened == 2
    file.close()


def test_concurrent_queries_share_one_connection(tmp_path: Path) -> None:
    file = DuckDbFile(make(tmp_path / "w.duckdb", range(1000)), linger=60)
    with ThreadPoolExecutor(8) as pool:
        assert set(pool.map(lambda _: count(file), range(200))) == {1000}
    assert file.opened == 1
    file.close()


def test_a_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ShapeError, match="no DuckDB warehouse at"):
        count(DuckDbFile(tmp_path / "absent.duckdb", linger=1))


def test_the_time_limit_interrupts_a_query_and_the_file_serves_the_next(tmp_path: Path) -> None:
    make(tmp_path / "w.duckdb", range(3))
    settings = load_settings(state_dir=str(tmp_path), warehouse={"engine": "duckdb", "duckdb_path": "w.duckdb"}, shapes={"sql_timeout": 0.3})
    runner = SqlRunner(settings)
    began = time.monotonic()
    with pytest.raises(ShapeError, match="time limit reached"):
        runner("SELECT count(*) FROM range(10000000000) a WHERE a % 7 = 3")
    assert time.monotonic() - began < 10
    assert runner("SELECT count(*) FROM t").rows == [[3]]
    runner.duckdb_file.close()
