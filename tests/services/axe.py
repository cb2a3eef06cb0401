"""axe-core (Deque's accessibility engine, from npm) for the browser tests: the script a page is
given, then `axe.run()` in it."""

from __future__ import annotations

from pathlib import Path

from tests.services.npm import installed

SOURCE = Path(__file__).with_name("axe")


def script(cache_dir: Path) -> Path:
    """axe.min.js, installed under the cache folder from the committed lock file."""
    return installed(SOURCE, ("package.json", "package-lock.json"), cache_dir / "axe-core") / "node_modules" / "axe-core" / "axe.min.js"
