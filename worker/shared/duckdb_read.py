"""Opening the DuckDB warehouse read-only, configured one way everywhere.

DuckDB refuses a second connection to a file within one process unless it is configured alike,
so the metadata reader, the value scan and the run_sql shape all open it here. External access is
off: no read_csv of local files, no extensions loaded or installed, no ATTACH.
"""

from __future__ import annotations

from pathlib import Path

import duckdb

READ_ONLY_CONFIG: dict[str, str | bool | int | float | list[str]] = {
    "enable_external_access": False,
    "autoload_known_extensions": False,
    "autoinstall_known_extensions": False,
}


def open_read_only(path: Path) -> duckdb.DuckDBPyConnection:
    return duckdb.connect(str(path), read_only=True, config=READ_ONLY_CONFIG)
