"""npm packages a test needs, installed with `npm ci` from a lock file committed under
tests/services into the cache folder on first use, and again only when the lock file changes."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path


def installed(source: Path, files: tuple[str, ...], home: Path) -> Path:
    """`home` holding `files` from `source` (package.json and package-lock.json among them) and
    their node_modules."""
    home.mkdir(parents=True, exist_ok=True)
    lock = (source / "package-lock.json").read_bytes()
    marker = home / ".installed-lock"
    for name in files:
        shutil.copyfile(source / name, home / name)
    if not marker.is_file() or marker.read_bytes() != lock:
        npm = shutil.which("npm")
        if npm is None:
            raise RuntimeError(f"{source.name} needs Node.js and npm (apt-get install nodejs npm)")
        subprocess.run([npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=home, check=True, timeout=600)
        marker.write_bytes(lock)
    return home
