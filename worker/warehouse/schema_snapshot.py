"""What a connector reads from a warehouse's information schema, engine-independent.

Ids are dotted paths, as in Neocarta: database `proj`, schema `proj.shop`, table
`proj.shop.orders`, column `proj.shop.orders.customer_id` (a nested field:
`proj.shop.customers.addr.city`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol


@dataclass(frozen=True)
class ColumnInfo:
    name: str  # the field path for nested fields: addr.city
    type: str  # Neocarta's property names: type, nullable, is_primary_key (is_foreign_key is the writer's)
    position: int
    nullable: bool
    description: str | None = None
    is_primary_key: bool = False
    nested: bool = False  # a field inside a STRUCT/RECORD column


@dataclass(frozen=True)
class TableInfo:
    database: str
    schema: str
    name: str
    kind: str  # TABLE or VIEW
    description: str | None = None
    view_sql: str | None = None
    columns: tuple[ColumnInfo, ...] = ()

    @property
    def id(self) -> str:
        return f"{self.database}.{self.schema}.{self.name}"


@dataclass(frozen=True)
class ForeignKey:
    """A declared key, possibly composite: columns[i] references ref_columns[i]."""

    name: str
    table: str  # table id
    columns: tuple[str, ...]
    ref_table: str  # table id
    ref_columns: tuple[str, ...]


@dataclass(frozen=True)
class Snapshot:
    """The current state of one schema, or of one table in it (`table` set)."""

    database: str
    schema: str
    tables: tuple[TableInfo, ...]
    foreign_keys: tuple[ForeignKey, ...] = field(default=())
    table: str | None = None  # the one table this snapshot covers, when it is a refresh of one table
    engine: str | None = None  # a warehouse known from its exports (worker/warehouse/exports.py); None: the configured one

    @property
    def keys_outward(self) -> bool:
        """A key of this schema references another schema's table: written again once that schema is."""
        return any(not key.ref_table.startswith(f"{self.database}.{self.schema}.") for key in self.foreign_keys)


class Connector(Protocol):
    """One warehouse engine behind one interface."""

    database: str

    @property
    def lists_all_schemas(self) -> bool:
        """schemas() is the whole database (not a configured selection), so a schema missing from it is gone."""
        ...

    def schemas(self) -> list[str]: ...

    def snapshot(self, schema: str, table: str | None = None) -> Snapshot: ...
