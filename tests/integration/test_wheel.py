"""lakegraph installed from its wheel into a fresh venv, far from the checkout, works as a user runs it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.timeout(900)


def run(*argv: str | Path, cwd: Path) -> subprocess.CompletedProcess:
    env = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "VIRTUAL_ENV") and not key.startswith("LAKEGRAPH_")}
    result = subprocess.run([str(part) for part in argv], capture_output=True, text=True, cwd=cwd, env=env, timeout=600)
    assert result.returncode == 0, f"{argv}: {result.stderr[-2000:]}"
    return result


def test_the_wheel_installs_and_its_commands_run_outside_the_checkout(tmp_path: Path) -> None:
    dist, elsewhere, source = tmp_path / "dist", tmp_path / "elsewhere", tmp_path / "source"
    elsewhere.mkdir()
    # built from a copy: setuptools writes build/ and *.egg-info beside the sources it builds
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(".git", ".venv", ".lakegraph", "build", "dist", "*.egg-info", "__pycache__", "lakegraph-demo"))
    run(sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", dist, source, cwd=tmp_path)
    [wheel] = dist.glob("lakegraph-*.whl")
    venv.create(tmp_path / "venv", with_pip=True)
    python, lakegraph = tmp_path / "venv" / "bin" / "python", tmp_path / "venv" / "bin" / "lakegraph"
    run(python, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-compile", wheel, cwd=elsewhere)  # bytecode: compiled on first import

    assert run(lakegraph, "--version", cwd=elsewhere).stdout.startswith("lakegraph ")
    settings = json.loads(run(lakegraph, "config", "--json", cwd=elsewhere).stdout)
    assert settings["state_dir"] == ".lakegraph" and settings["warehouse"]["engine"] == "duckdb"

    queries = elsewhere / "queries.jsonl"
    queries.write_text(json.dumps({"id": "1", "sql": "SELECT * FROM shop.orders o JOIN shop.customers c ON o.customer_id = c.id"}) + "\n")
    schema = elsewhere / "schema.json"
    schema.write_text(json.dumps({"shop": {"orders": {"customer_id": "INT64"}, "customers": {"id": "INT64"}}}))
    extracted = json.loads(run(lakegraph, "extract-joins", "--queries", queries, "--dialect", "bigquery", "--schema", schema, "--json", cwd=elsewhere).stdout)
    assert [(row["left"], row["right"]) for row in extracted["pairs"]] == [("shop.customers.id", "shop.orders.customer_id")]
    assert "site-packages" in run(python, "-c", "import worker.settings as s; print(s.DEFAULTS_FILE)", cwd=elsewhere).stdout
