"""Runs inside the BigQuery emulator's own Python 3.13 venv (not lakegraph's): fixes two offline quirks.

1. DuckDB cannot download extensions here: install ducklake and spatial from their wheels' files.
2. `duckdb.connect(config={"TimeZone": ...})` fails offline (icu cannot autoload) although
   `SET TimeZone` after connecting works; local-bigquery connects that way, so move the setting.
"""

import sys
from pathlib import Path

import duckdb
import duckdb_extension_ducklake
import duckdb_extension_spatial

_connect = duckdb.connect


def _install_extensions() -> None:
    with _connect() as con:
        for package, name in ((duckdb_extension_ducklake, "ducklake"), (duckdb_extension_spatial, "spatial")):
            files = sorted(Path(package.__file__).parent.glob(f"extensions/*/{name}.duckdb_extension"))
            con.execute(f"INSTALL '{files[-1]}'")


def _connect_with_late_settings(*args, config=None, **kwargs):
    late = {key: value for key, value in (config or {}).items() if key.lower() == "timezone"}
    early = {key: value for key, value in (config or {}).items() if key.lower() != "timezone"}
    con = _connect(*args, config=early, **kwargs) if early else _connect(*args, **kwargs)
    for key, value in late.items():
        con.execute(f"SET {key} = '{value}'")
    return con


if __name__ == "__main__":
    _install_extensions()
    duckdb.connect = _connect_with_late_settings
    from local_bigquery.cli import main

    main(sys.argv[1:])
