"""Neocarta's own MCP server (`neocarta[mcp]` 0.8.0, Neo4j Labs), in a venv of its own under the cache
folder: the client our graph claims compatibility with. Its venv is created on first use from PyPI."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from worker.errors import LakegraphError
from worker.graph.schema import NEOCARTA_VERSION

PACKAGES = [f"neocarta[mcp]=={NEOCARTA_VERSION}"]


def ensure_venv(cache_dir: Path) -> Path:
    """The `neocarta-mcp` console script of the venv, created and filled on first use."""
    venv = cache_dir / "neocarta-venv"
    marker = venv / ".lakegraph-complete"
    script = venv / "bin" / "neocarta-mcp"
    if marker.exists() and marker.read_text() == "\n".join(PACKAGES):
        return script
    shutil.rmtree(venv, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    result = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", *PACKAGES], capture_output=True, text=True)
    if result.returncode != 0:
        raise LakegraphError(f"could not install Neocarta's MCP server: {result.stderr.strip()[-500:]}")
    marker.write_text("\n".join(PACKAGES))
    return script
