"""The DuckDB warehouse file, opened read-only and kept open through a burst of queries.

Opening a DuckDB file loads its whole catalog (about 120 ms at 500 tables) and closing it costs
another 25 ms, more than the queries an agent runs. While any process holds the file, though,
DuckDB lets no other process open it for writing — so the connection is shared by the queries
of a burst and closed `linger` seconds after the last one (at once with a linger of 0). A file
replaced on disk (a new inode, size or modification time) is opened again on the next query.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb

from shapes.spec.exceptions import ShapeError
from worker.shared.duckdb_read import open_read_only


class DuckDbFile:
    def __init__(self, path: Path, linger: float) -> None:
        self.path = path
        self.linger = linger
        self.opened = 0  # how many times the file was opened, for the tests and benchmarks
        self._lock = threading.Lock()
        self._con: duckdb.DuckDBPyConnection | None = None
        self._stamp: tuple[int, int, int] | None = None
        self._busy = 0
        self._closer: threading.Timer | None = None

    @contextmanager
    def cursor(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """A cursor of the shared read-only connection, for one query."""
        con = self._acquire()
        cursor = con.cursor()
        try:
            yield cursor
        finally:
            cursor.close()
            self._release()

    def close(self) -> None:
        with self._lock:
            if self._busy == 0:
                self._close()

    def _acquire(self) -> duckdb.DuckDBPyConnection:
        try:
            status = os.stat(self.path)
        except FileNotFoundError:
            raise ShapeError(f"no DuckDB warehouse at {self.path}") from None
        stamp = (status.st_ino, status.st_size, status.st_mtime_ns)
        with self._lock:
            if self._closer is not None:
                self._closer.cancel()
                self._closer = None
            if self._con is not None and self._stamp != stamp and self._busy == 0:
                self._close()
            if self._con is None:
                try:
                    self._con = open_read_only(self.path)
                except duckdb.Error as err:
                    raise ShapeError(f"cannot open the warehouse read-only: {err}") from None
                self._stamp = stamp
                self.opened += 1
            self._busy += 1
            return self._con

    def _release(self) -> None:
        with self._lock:
            self._busy -= 1
            if self._busy:
                return
            if self.linger <= 0:
                self._close()
                return
            closer = threading.Timer(self.linger, self._close_when_idle)
            closer.daemon = True
            self._closer = closer
            closer.start()

    def _close_when_idle(self) -> None:
        with self._lock:
            if self._busy == 0 and self._closer is threading.current_thread():
                self._close()

    def _close(self) -> None:
        if self._con is not None:
            self._con.close()
        self._con, self._stamp, self._closer = None, None, None
