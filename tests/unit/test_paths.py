"""Paths from messages and replays stay inside their folder; everything else is refused unread."""

from __future__ import annotations

from pathlib import Path

import pytest

from worker.documents.library import FolderLibrary
from worker.paths import OutsideFolder, contained, within

pytestmark = pytest.mark.reliability
ESCAPES = ["../secret.md", "a/../../secret.md", "/etc/passwd", "..", "a/b/../../../x.md", "x\0.md", "..\\secret.md"]


@pytest.mark.parametrize("relpath", ESCAPES)
def test_a_relpath_that_leaves_the_library_is_refused(tmp_path: Path, relpath: str) -> None:
    library = FolderLibrary("lib", tmp_path / "lib", (".md",))
    with pytest.raises(OutsideFolder, match="refused path"):
        library.path(relpath)


def test_relpaths_inside_the_library_resolve_below_its_root(tmp_path: Path) -> None:
    library = FolderLibrary("lib", tmp_path / "lib", (".md",))
    assert library.path("a/b.md") == tmp_path / "lib" / "a" / "b.md"
    assert library.path("") == tmp_path / "lib"
    assert within(tmp_path, "a..b/c..d.md") == tmp_path / "a..b" / "c..d.md"  # dots inside a name are a name


@pytest.mark.parametrize("path", ["/etc/passwd", "../outside.ndjson", "logs/../../outside.ndjson", "x\0y"])
def test_a_file_outside_the_audit_folder_is_refused(tmp_path: Path, path: str) -> None:
    folder = tmp_path / "audit-logs"
    with pytest.raises(OutsideFolder):
        contained(folder, path if not path.startswith("logs") else str(folder / path))


def test_files_inside_the_audit_folder_are_accepted(tmp_path: Path) -> None:
    folder = tmp_path / "audit-logs"
    assert contained(folder, str(folder / "day" / "jobs.ndjson")) == folder / "day" / "jobs.ndjson"
    assert contained(folder, "jobs.ndjson") == folder / "jobs.ndjson"
