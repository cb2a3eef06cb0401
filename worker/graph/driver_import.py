"""The neo4j driver imports numpy, pandas and pyarrow when they are installed, only to accept their
values as query parameters and to build data frames; lakegraph passes plain lists and builds no data
frames, and numpy alone is about 180 ms of every shape call's start. Both packages' `__init__`
install this finder before anything imports the driver: while the driver's `_optional_deps` module
runs, those three are hidden from it (so its `np`, `pd` and `pa` are None in every process); they
stay importable, and imported, for everything else."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from importlib.machinery import ModuleSpec, PathFinder
from types import ModuleType
from typing import Any

DRIVER_OPTIONAL_DEPS = "neo4j._optional_deps"
HIDDEN = ("numpy", "pandas", "pyarrow", "pyarrow.compute")


class _HidingLoader:
    """The real loader, run with the hidden packages mapped to None (an import of them fails).
    (Duck-typed, as the import system allows: `importlib.abc` costs 10 ms of every start.)"""

    def __init__(self, loader: Any) -> None:
        self._loader = loader

    def create_module(self, spec: ModuleSpec) -> ModuleType | None:
        return self._loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        present = {name: sys.modules[name] for name in HIDDEN if name in sys.modules}
        sys.modules.update(dict.fromkeys(HIDDEN))  # type: ignore[arg-type]  # None in sys.modules: "not importable", Python's own convention
        try:
            self._loader.exec_module(module)
        finally:
            for name in HIDDEN:
                del sys.modules[name]
            sys.modules.update(present)


class _DriverWithoutDataFrames:
    def find_spec(self, name: str, path: Sequence[str] | None, target: ModuleType | None = None) -> ModuleSpec | None:
        if name != DRIVER_OPTIONAL_DEPS:
            return None
        spec = PathFinder.find_spec(name, path)
        if spec is not None and spec.loader is not None:
            spec.loader = _HidingLoader(spec.loader)  # type: ignore[assignment]
        return spec


def install() -> None:
    """Idempotent; a no-op once the driver is imported (its optional imports are already done)."""
    if not any(isinstance(finder, _DriverWithoutDataFrames) for finder in sys.meta_path):
        sys.meta_path.insert(0, _DriverWithoutDataFrames())
