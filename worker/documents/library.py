"""A document library on disk: which files belong to it, and what an editor's noise looks like."""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from worker.paths import within
from worker.settings import Settings

# Editor temp, swap and backup files, partial downloads: never documents.
IGNORED_NAMES = ("*.swp", "*.swo", "*.swx", "*~", ".#*", "#*#", "~$*", "*.tmp", "*.part", "*.crdownload", "4913")
_IGNORED = re.compile("|".join(fnmatch.translate(pattern) for pattern in IGNORED_NAMES))


@dataclass(frozen=True)
class Library:
    name: str
    root: Path
    extensions: tuple[str, ...]

    def relpath(self, path: Path) -> str | None:
        """The library-relative POSIX path of a file lakegraph should load, else None."""
        relative = self.folder_relpath(path)
        return relative if relative and self._accepts_name(relative.rsplit("/", 1)[-1]) else None

    def accepts(self, relpath: str) -> bool:
        parts = PurePosixPath(relpath).parts
        return not any(part.startswith(".") for part in parts) and self._accepts_name(parts[-1])

    def _accepts_name(self, name: str) -> bool:
        return not name.startswith(".") and not _IGNORED.match(name) and name.lower().endswith(self.extensions)

    def folder_relpath(self, path: Path) -> str | None:
        """The library-relative path of a folder inside the library ('' for the root), else None (also
        for one below a hidden folder)."""
        try:
            relative = Path(os.path.abspath(path)).relative_to(self.root).as_posix()
        except ValueError:
            return None
        relative = "" if relative == "." else relative
        if any(part.startswith(".") for part in PurePosixPath(relative).parts):
            return None
        return relative

    def path(self, relpath: str) -> Path:
        """The file a relpath names; OutsideFolder if it would leave the library."""
        return within(self.root, relpath)

    def walk(self, on_loop: Callable[[Path], None], under: str = "") -> Iterator[str]:
        """Every document's relpath (below `under`, a relative folder), following symlinks but never
        round a loop (reported to on_loop)."""
        seen: set[tuple[int, int]] = set()
        for folder, dirs, files in os.walk(self.path(under), followlinks=True):
            stat = os.stat(folder)
            key = (stat.st_dev, stat.st_ino)
            if key in seen:
                on_loop(Path(folder))
                dirs[:] = []
                continue
            seen.add(key)
            dirs[:] = sorted(name for name in dirs if not name.startswith("."))
            relfolder = self.folder_relpath(Path(folder))  # once per folder: a file costs a name check
            if relfolder is None:
                continue
            for name in sorted(files):
                if self._accepts_name(name):
                    yield f"{relfolder}/{name}" if relfolder else name


def libraries(settings: Settings) -> list[Library]:
    conf = settings.documents
    return [Library(entry.name, Path(os.path.abspath(entry.root.expanduser())), tuple(conf.extensions)) for entry in conf.libraries]
