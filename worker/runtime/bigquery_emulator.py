"""The BigQuery emulator `local-bigquery` 0.3.2, in a Python 3.13 venv of its own under the cache folder.

It speaks the REST API the real google-cloud-bigquery client uses, including INFORMATION_SCHEMA
constraints and JOBS. Its venv is created on first use from PyPI (no network needed after that).
"""

from __future__ import annotations

import glob
import os
import shutil
import urllib.request
from pathlib import Path

from worker.exceptions import LakegraphError
from worker.runtime import services
from worker.runtime.processes import free_port
from worker.runtime.services import ServiceProcess, spawn

PACKAGES = [
    "local-bigquery==0.3.2",
    "duckdb==1.5.5",
    "duckdb-extension-ducklake==1.5.5",
    "duckdb-extension-spatial==1.5.5",
]
READY_TIMEOUT = 90.0
LAUNCHER = Path(__file__).with_name("bigquery_launcher.py")


def python313() -> str:
    """A real Python 3.13: pyenv's build if present (its shim may refuse), else one on PATH."""
    root = os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv"))
    candidates = sorted(glob.glob(f"{root}/versions/3.13*/bin/python3.13"))
    if candidates:
        return candidates[-1]
    found = shutil.which("python3.13")
    if found and "shims" not in found:
        return found
    raise LakegraphError("the BigQuery emulator needs Python 3.13 (pyenv install 3.13, or apt-get install python3.13)")


def ensure_venv(cache_dir: Path) -> Path:
    """The emulator's venv python, created and filled on first use."""
    return services.ensure_venv(cache_dir / "bigquery-emulator-venv", python313(), PACKAGES, "the BigQuery emulator") / "python"


def start(workdir: Path, cache_dir: Path, project: str) -> tuple[ServiceProcess, str]:
    """Start the emulator; returns the process and its REST endpoint."""
    python = ensure_venv(cache_dir)
    port, grpc_port = free_port(), free_port()
    data = workdir / "bigquery-data"
    data.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "HOME": str(workdir)}  # DuckDB keeps its extension folder under HOME
    service = spawn(
        "BigQuery emulator",
        [
            str(python),
            str(LAUNCHER),
            "serve",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--grpc-port",
            str(grpc_port),
            "--project",
            project,
            "--data-dir",
            str(data),
        ],
        workdir / "bigquery-emulator.log",
        env=env,
        cwd=workdir,
    )
    endpoint = f"http://127.0.0.1:{port}"
    service.wait_ready(lambda: _answers(endpoint, project), READY_TIMEOUT)
    return service, endpoint


def _answers(endpoint: str, project: str) -> bool:
    try:
        with urllib.request.urlopen(f"{endpoint}/bigquery/v2/projects/{project}/datasets", timeout=1) as reply:
            return reply.status == 200
    except OSError:
        return False
