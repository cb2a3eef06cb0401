"""A library walk yields exactly the files `Library.relpath` accepts one by one (the watcher's view):
hidden folders and files, editor noise and other extensions left out, on a made tree and on the
real PowerShell estate."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.corpora import unpack_powershell_docs
from worker.documents.library import IGNORED_NAMES, FolderLibrary

NOISE = [pattern.replace("*", "note") for pattern in IGNORED_NAMES]


def one_by_one(library: FolderLibrary) -> list[str]:
    found = (library.relpath(path) for path in library.root.rglob("*") if path.is_file())
    return sorted(relpath for relpath in found if relpath is not None)


def test_walk_keeps_what_the_watcher_keeps(tmp_path: Path) -> None:
    names = [
        "a.md",
        "B.MD",
        "c.markdown",
        "d.txt",
        ".hidden.md",
        "sub/e.md",
        "sub/.git/f.md",
        ".cache/g.md",
        "sub/deeper/h.md",
        "sub/deeper/i.md.swp",
        *(f"sub/{name}" for name in NOISE),
    ]
    for name in names:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("# x\n")
    library = FolderLibrary("lib", tmp_path, (".md", ".markdown"))
    walked = sorted(library.walk(on_loop=lambda folder: None))
    assert walked == one_by_one(library)
    assert walked == ["B.MD", "a.md", "c.markdown", "sub/deeper/h.md", "sub/e.md"]
    assert sorted(library.walk(on_loop=lambda folder: None, under="sub")) == ["sub/deeper/h.md", "sub/e.md"]


@pytest.mark.corpus
def test_walk_of_the_real_estate_matches_file_by_file(tmp_path: Path) -> None:
    library = FolderLibrary("ps", unpack_powershell_docs(tmp_path), (".md",))
    walked = list(library.walk(on_loop=lambda folder: None))
    assert len(walked) == len(set(walked)) > 3000
    assert sorted(walked) == one_by_one(library)
