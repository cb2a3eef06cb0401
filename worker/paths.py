"""Paths that arrive in task messages, replays and commands: they may name a file only inside the
folder they belong to. Anyone who can write to the broker can write a message, so the check sits
where the file is opened, not where the message is made."""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath

from worker.exceptions import LakegraphError


class OutsideFolder(LakegraphError):
    """A path that would leave its folder (absolute, `..`, a NUL byte): refused, never read."""


def within(root: Path, relpath: str) -> Path:
    """`root / relpath` for a relative POSIX path that stays lexically inside root. Symlinks inside
    the folder are the owner's choice and are followed; a path that climbs out is not."""
    pure = PurePosixPath(relpath)
    if "\0" in relpath or "\\" in relpath or pure.is_absolute() or ".." in pure.parts:
        raise OutsideFolder(f"refused path {relpath!r}: it must stay inside {root}")
    return root / pure


def contained(folder: Path, path: str) -> Path:
    """An absolute or relative path that must lie inside `folder` once normalised."""
    if "\0" in path:
        raise OutsideFolder(f"refused path {path!r}: it must stay inside {folder}")
    target = Path(os.path.abspath(folder / path))
    if not target.is_relative_to(os.path.abspath(folder)):
        raise OutsideFolder(f"refused path {path!r}: it must stay inside {folder}")
    return target
