"""Every read shape, in the order the CLI help, the MCP tool list, the HTTP API and the README show
them, each named by where its spec is declared. `SPECS[name]` imports that one shape's module
(through the generated catalog), so a command line call loads its own shape and not the other
twelve (about 100 ms of its start); iterating SPECS imports them all, as the servers and docs do."""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from shapes.spec import ShapeSpec

HOMES = (
    "shapes.outline:SPEC",
    "shapes.search:SPEC",
    "shapes.coverage:SPEC",
    "shapes.bridge:SPEC",
    "shapes.links:SPEC",
    "shapes.themes:SPEC",
    "shapes.themes:CHANGES_SPEC",
    "shapes.table_context:SPEC",
    "shapes.table_context:TABLE_SPEC",
    "shapes.join_path:SPEC",
    "shapes.joins:SPEC",
    "shapes.run_sql:SPEC",
    "shapes.schema:SPEC",
    "shapes.cypher:SPEC",
    "shapes.freshness:SPEC",
)


def imported(home: str) -> Any:
    """The object at `module:attribute`, importing its module (a spec here, a shape's class in the service)."""
    module, attribute = home.split(":")
    return getattr(importlib.import_module(module), attribute)


class Registry(Mapping[str, "ShapeSpec"]):
    """name -> spec; a lookup imports that spec's module only."""

    def __getitem__(self, name: str) -> ShapeSpec:
        from shapes.spec.index import SHAPES

        return imported(SHAPES[name].home)

    def __iter__(self) -> Iterator[str]:
        from shapes.spec.index import SHAPES

        return iter(SHAPES)

    def __len__(self) -> int:
        return len(HOMES)

    def for_command(self, command: str) -> ShapeSpec:
        from shapes.spec.index import SHAPES

        return next(self[name] for name, entry in SHAPES.items() if entry.command == command)


SPECS = Registry()
