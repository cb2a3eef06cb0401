"""Neocarta's own MCP server (`neocarta[mcp]` 0.8.0, Neo4j Labs), in a venv of its own under the cache
folder: the client our graph claims compatibility with. Its venv is created on first use from PyPI."""

from __future__ import annotations

import sys
from pathlib import Path

from worker.graph.schema import NEOCARTA_VERSION
from worker.runtime.services import ensure_venv as service_venv

PACKAGES = [f"neocarta[mcp]=={NEOCARTA_VERSION}"]


def ensure_venv(cache_dir: Path) -> Path:
    """The `neocarta-mcp` console script of the venv, created and filled on first use."""
    return service_venv(cache_dir / "neocarta-venv", sys.executable, PACKAGES, "Neocarta's MCP server") / "neocarta-mcp"
