"""A document library: which files belong to it, what an editor's noise looks like, and how its
files are listed and read — from a folder on disk here, from Cloud Storage in `bucket.py`."""

from __future__ import annotations

import fnmatch
import os
import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from worker.paths import within

# Editor temp, swap and backup files, partial downloads: never documents.
IGNORED_NAMES = ("*.swp", "*.swo", "*.swx", "*~", ".#*", "#*#", "~$*", "*.tmp", "*.part", "*.crdownload", "4913")
_IGNORED = re.compile("|".join(fnmatch.translate(pattern) for pattern in IGNORED_NAMES))


class Skipped(Exception):
    """The file cannot be loaded as a document; the message says why. `stamp` is the file's stamp
    when the refusal holds until the file changes (not for an unreadable one: permissions change
    without changing a stamp)."""

    def __init__(self, reason: str, stamp: str | None = None) -> None:
        super().__init__(reason)
        self.stamp = stamp


class Library(ABC):
    """What every library shares: its name, which files are documents, and how the loader, the
    reconcile and a sync list and read them. A file's stamp is a short text that changes whenever
    its bytes may have: while it holds, the file is not read again."""

    name: str
    extensions: tuple[str, ...]

    @property
    @abstractmethod
    def location(self) -> str:
        """Where the library lives, as text (a folder, or gs://bucket/prefix)."""

    def where(self, relpath: str) -> str:
        """Where one of its files lives, as text."""
        return f"{self.location}/{relpath}" if relpath else self.location

    def accepts(self, relpath: str) -> bool:
        parts = PurePosixPath(relpath).parts
        return bool(parts) and not any(part.startswith(".") for part in parts) and self._accepts_name(parts[-1])

    def _accepts_name(self, name: str) -> bool:
        return not name.startswith(".") and not _IGNORED.match(name) and name.lower().endswith(self.extensions)

    @abstractmethod
    def is_file(self, relpath: str) -> bool: ...

    @abstractmethod
    def is_folder(self, relfolder: str) -> bool: ...

    @abstractmethod
    def read_bytes(self, relpath: str, max_bytes: int) -> tuple[bytes, str]:
        """The file's bytes and the stamp they belong to. FileNotFoundError when it is gone,
        Skipped when it cannot be a document."""

    @abstractmethod
    def walk(self, on_loop: Callable[[Path], None], under: str = "") -> Iterator[str]:
        """Every document's relpath, in order (below `under`, a relative folder)."""

    @abstractmethod
    def stamps(self, on_loop: Callable[[Path], None]) -> Iterator[tuple[str, str | None]]:
        """Every document's relpath with its stamp now (None: gone meanwhile), in walk order,
        without reading any file."""


@dataclass(frozen=True)
class FolderLibrary(Library):
    """A library in a folder on disk: a file's stamp is its size and modification time."""

    name: str
    root: Path
    extensions: tuple[str, ...]

    @property
    def location(self) -> str:
        return str(self.root)

    def relpath(self, path: Path) -> str | None:
        """The library-relative POSIX path of a file lakegraph should load, else None."""
        relative = self.folder_relpath(path)
        return relative if relative and self._accepts_name(relative.rsplit("/", 1)[-1]) else None

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

    def is_file(self, relpath: str) -> bool:
        return self.path(relpath).is_file()

    def is_folder(self, relfolder: str) -> bool:
        return self.path(relfolder).is_dir()

    def stamps(self, on_loop: Callable[[Path], None]) -> Iterator[tuple[str, str | None]]:
        for relpath in self.walk(on_loop):
            try:
                yield relpath, stamp(os.stat(os.path.join(self.root, relpath)))  # joined as text: pathlib cost 35 µs a file
            except OSError:
                yield relpath, None

    def read_bytes(self, relpath: str, max_bytes: int) -> tuple[bytes, str]:
        """The stamp is taken before reading: a file changed in between is read again next time."""
        path = self.path(relpath)
        try:
            found = path.stat()
            if found.st_size > max_bytes:
                raise Skipped(f"larger than documents.max_file_bytes ({found.st_size} > {max_bytes} bytes)", stamp(found))
            return path.read_bytes(), stamp(found)
        except FileNotFoundError:
            raise
        except IsADirectoryError:
            raise Skipped("is a directory") from None
        except OSError as err:
            raise Skipped(f"unreadable: {err.strerror or err}") from None

    def walk(self, on_loop: Callable[[Path], None], under: str = "") -> Iterator[str]:
        """Following symlinks but never round a loop (reported to on_loop)."""
        seen: set[tuple[int, int]] = set()
        for folder, dirs, files in os.walk(self.path(under), followlinks=True):
            found = os.stat(folder)
            key = (found.st_dev, found.st_ino)
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


def stamp(found: os.stat_result) -> str:
    """Size and modification time: while both are unchanged a file is taken as unchanged without
    reading it (as make, rsync and git do); a different stamp still reads it and compares hashes."""
    return f"{found.st_size}:{found.st_mtime_ns}"
