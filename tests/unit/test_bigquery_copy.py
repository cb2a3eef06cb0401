"""The DuckDB → BigQuery copy of `demo --google`: tables come after the tables their keys
reference (BigQuery checks the target exists), and the DDL keeps types, keys and descriptions."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from worker.demo.bigquery_copy import create_table, referenced_first
from worker.demo.warehouse import DDL
from worker.warehouse.schema_snapshot import ColumnInfo, ForeignKey, TableInfo


def table(name: str, columns: tuple[ColumnInfo, ...] = (), description: str | None = None) -> TableInfo:
    return TableInfo("warehouse", "service", name, "TABLE", description, None, columns)


CASES = st.integers(2, 12).flatmap(
    lambda n: st.tuples(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=30), st.permutations(range(n)))
)


@given(CASES)
def test_every_table_comes_after_the_tables_it_references(case: tuple[list[tuple[int, int]], list[int]]) -> None:
    edges, order = case
    tables = tuple(table(f"t{index}") for index in order)
    # keys only from a later-numbered table to an earlier one: no cycles, as in a real schema
    keys = tuple(
        ForeignKey(f"fk{i}", f"warehouse.service.t{max(a, b)}", ("x",), f"warehouse.service.t{min(a, b)}", ("y",)) for i, (a, b) in enumerate(edges) if a != b
    )
    ordered = referenced_first(tables, keys)
    assert sorted(t.id for t in ordered) == sorted(t.id for t in tables)
    position = {t.id: index for index, t in enumerate(ordered)}
    assert all(position[key.ref_table] < position[key.table] for key in keys)


def test_a_cycle_still_places_every_table() -> None:
    tables = (table("a"), table("b"))
    keys = (
        ForeignKey("ab", "warehouse.service.a", ("b",), "warehouse.service.b", ("id",)),
        ForeignKey("ba", "warehouse.service.b", ("a",), "warehouse.service.a", ("id",)),
    )
    assert [t.name for t in referenced_first(tables, keys)] == ["a", "b"]


def test_the_ddl_keeps_types_keys_and_the_description() -> None:
    columns = (
        ColumnInfo("wo_id", "INTEGER", 1, False, is_primary_key=True),
        ColumnInfo("part_no", "VARCHAR", 2, False, is_primary_key=True),
        ColumnInfo("hours", "DOUBLE", 3, True),
    )
    key = ForeignKey("fk", "warehouse.service.work_order_parts", ("wo_id",), "warehouse.service.work_orders", ("wo_id",))
    assert create_table(table("work_order_parts", columns, "Parts fitted on each repair visit"), [key], "service") == (
        "CREATE TABLE `service.work_order_parts` (`wo_id` INT64 NOT NULL, `part_no` STRING NOT NULL, `hours` FLOAT64, "
        "PRIMARY KEY (wo_id, part_no) NOT ENFORCED, FOREIGN KEY (wo_id) REFERENCES `service.work_orders`(wo_id) NOT ENFORCED) "
        "OPTIONS(description='Parts fitted on each repair visit')"
    )
    assert "Parts fitted on each repair visit" in DDL  # the demo's own description, as the copy carries it
