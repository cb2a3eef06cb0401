"""Declared keys from exports: Snowflake's `SHOW IMPORTED KEYS` output, and the information schema's
`key_column_usage` with `referential_constraints` and `table_constraints` (Databricks; any engine
that has them).

Snowflake's INFORMATION_SCHEMA names its constraints but not their columns, so its keys come from
`SHOW IMPORTED KEYS IN ACCOUNT` saved with `RESULT_SCAN`: a row per key column, in key order. The
information schema's form pairs each foreign-key column with the referenced key's column at its
`position_in_unique_constraint`.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from worker.warehouse.schema_snapshot import ForeignKey

TablePath = tuple[str, str, str]


@dataclass
class KeyRows:
    imported: list[dict[str, Any]] = field(default_factory=list)  # SHOW IMPORTED KEYS
    usage: list[dict[str, Any]] = field(default_factory=list)  # key_column_usage
    references: list[dict[str, Any]] = field(default_factory=list)  # referential_constraints
    constraints: list[dict[str, Any]] = field(default_factory=list)  # table_constraints


def foreign_keys(rows: KeyRows) -> list[ForeignKey]:
    return sorted([*_imported(rows.imported), *_referential(rows)], key=lambda key: (key.table, key.name))


def primary_keys(rows: KeyRows) -> set[tuple[str, str, str, str]]:
    """(catalog, schema, table, column) of every primary-key column the constraints name."""
    primary = {_constraint(row) for row in rows.constraints if str(row.get("constraint_type") or "").upper() == "PRIMARY KEY"}
    return {(*_table(row), str(row["column_name"])) for row in rows.usage if _constraint(row) in primary}


def _imported(rows: list[dict[str, Any]]) -> list[ForeignKey]:
    keys: dict[tuple[TablePath, TablePath, str], list[tuple[int, str, str]]] = defaultdict(list)
    for row in rows:
        source = (str(row["fk_database_name"]), str(row["fk_schema_name"]), str(row["fk_table_name"]))
        target = (str(row["pk_database_name"]), str(row["pk_schema_name"]), str(row["pk_table_name"]))
        keys[source, target, str(row.get("fk_name") or "")].append((_number(row.get("key_sequence")), str(row["fk_column_name"]), str(row["pk_column_name"])))
    found = []
    for (source, target, name), columns in keys.items():
        columns.sort()
        found.append(
            ForeignKey(name or f"{source[2]}_{target[2]}_fkey", ".".join(source), tuple(c[1] for c in columns), ".".join(target), tuple(c[2] for c in columns))
        )
    return found


def _referential(rows: KeyRows) -> list[ForeignKey]:
    usage: dict[tuple[str, str, str], list[dict[str, Any]]] = defaultdict(list)
    for row in rows.usage:
        usage[_constraint(row)].append(row)
    found = []
    for reference in rows.references:
        referencing = sorted(usage.get(_constraint(reference), []), key=lambda row: _number(row.get("ordinal_position")))
        unique = (
            str(reference.get("unique_constraint_catalog") or reference.get("constraint_catalog") or ""),
            str(reference.get("unique_constraint_schema") or reference.get("constraint_schema") or ""),
            str(reference.get("unique_constraint_name") or ""),
        )
        referenced = {_number(row.get("ordinal_position")): row for row in usage.get(unique, [])}
        targets = [referenced.get(_number(row.get("position_in_unique_constraint") or row.get("ordinal_position"))) for row in referencing]
        matched = [(row, target) for row, target in zip(referencing, targets, strict=True) if target is not None]
        if not matched or len(matched) < len(referencing):
            continue  # a key whose columns the exports do not give
        found.append(
            ForeignKey(
                str(reference["constraint_name"]),
                ".".join(_table(matched[0][0])),
                tuple(str(row["column_name"]) for row, _ in matched),
                ".".join(_table(matched[0][1])),
                tuple(str(target["column_name"]) for _, target in matched),
            )
        )
    return found


def _constraint(row: dict[str, Any]) -> tuple[str, str, str]:
    """A constraint's name in its schema (where an export leaves its schema out, its table's)."""
    return (
        str(row.get("constraint_catalog") or row.get("table_catalog") or ""),
        str(row.get("constraint_schema") or row.get("table_schema") or ""),
        str(row["constraint_name"]),
    )


def _table(row: dict[str, Any]) -> TablePath:
    return str(row["table_catalog"]), str(row["table_schema"]), str(row["table_name"])


def _number(value: object) -> int:
    text = str(value or "").strip()
    return int(float(text)) if text.replace(".", "", 1).isdigit() else 0
