"""Names in a query meet the catalogue's by each dialect's own rules (worker/shared/identifiers.py).

The property: any spelling an engine resolves to a catalogue's column — another case where it
compares in any case, quoted or not as its rules allow — teaches the join between the catalogue's
columns as the catalogue spells them (the graph's column ids); a spelling it does not resolve
(PostgreSQL's unquoted `CustomerID` for a column created as "CustomerID") teaches nothing and is
counted unresolved.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from worker.warehouse.joins import SchemaIndex, extract


@dataclass(frozen=True)
class Rules:
    """How an engine resolves a name: any case (`any`), or exact when quoted and folded to
    `upper`/`lower` when not; `quote` is its identifier quote."""

    tables: str
    columns: str
    quote: str = '"'
    dataset: str | None = None  # where a query must name a table's dataset (BigQuery)


ENGINES = {
    "mysql": Rules(tables="exact", columns="any", quote="`"),  # Linux: table names are file names
    "bigquery": Rules(tables="exact", columns="any", quote="`", dataset="ds"),
    "postgres": Rules(tables="lower", columns="lower"),
    "snowflake": Rules(tables="upper", columns="upper"),
    "sqlite": Rules(tables="any", columns="any"),
    "duckdb": Rules(tables="any", columns="any"),
}

# Catalogue names as an engine may store them (created quoted: any case), never a keyword.
NAMES = st.builds(str.__add__, st.sampled_from("nN"), st.text("aAbBcCdDxXyYzZ_", min_size=2, max_size=8))


def recased(draw: st.DrawFn, name: str) -> str:
    return "".join(draw(st.sampled_from(sorted({char.lower(), char.upper()}))) for char in name)


def written(draw: st.DrawFn, name: str, rule: str, quote: str) -> str:
    """A spelling of `name` that the rule resolves to it."""
    quoted = f"{quote}{name}{quote}"
    if rule == "exact":
        return draw(st.sampled_from([name, quoted]))
    if rule == "any":
        spelling = recased(draw, name)
        return draw(st.sampled_from([spelling, f"{quote}{spelling}{quote}"]))
    folded = name.upper() if rule == "upper" else name.lower()
    return recased(draw, name) if name == folded and draw(st.booleans()) else quoted


@st.composite
def catalogue_and_query(draw: st.DrawFn, engine: str) -> tuple[dict, str, tuple[str, str]]:
    rules = ENGINES[engine]
    left, right = draw(st.lists(NAMES, min_size=2, max_size=2, unique_by=str.lower))
    key, other = draw(st.lists(NAMES, min_size=2, max_size=2, unique_by=str.lower))
    mapping = {left: {key: "INT", other: "INT"}, right: {other: "INT"}}
    t1, t2 = (written(draw, name, rules.tables, rules.quote) for name in (left, right))
    if rules.dataset:
        mapping, t1, t2 = {rules.dataset: mapping}, f"{rules.dataset}.{t1}", f"{rules.dataset}.{t2}"
        left, right = f"{rules.dataset}.{left}", f"{rules.dataset}.{right}"
    c1, c2 = written(draw, key, rules.columns, rules.quote), written(draw, other, rules.columns, rules.quote)
    shape = draw(st.sampled_from(["on", "cte"]))
    if shape == "on":
        sql = f"SELECT * FROM {t1} AS a JOIN {t2} AS b ON a.{c1} = b.{c2}"
    else:  # the column passes through a CTE under another spelling of its name
        again = written(draw, key, rules.columns, rules.quote)
        sql = f"WITH w AS (SELECT {c1} FROM {t1}) SELECT * FROM w JOIN {t2} AS b ON w.{again} = b.{c2}"
    return mapping, sql, (f"{left}.{key}", f"{right}.{other}")


@pytest.mark.parametrize("engine", sorted(ENGINES))
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_any_spelling_the_engine_resolves_joins_the_catalogues_columns(engine: str, data: st.DataObject) -> None:
    mapping, sql, expected = data.draw(catalogue_and_query(engine))
    result = extract(sql, engine, SchemaIndex(mapping))
    assert result.error is None, result.error
    assert {(str(pair.left), str(pair.right)) for pair in result.pairs} == {tuple(sorted(expected))}, sql
    assert not result.unresolved, sql


@pytest.mark.parametrize(
    ("engine", "column", "spelling"),
    [
        ("postgres", "CustomerID", "CustomerID"),  # unquoted: customerid
        ("postgres", "customerid", '"CustomerID"'),  # quoted: exactly CustomerID
        ("snowflake", "mixedCase", "mixedCase"),  # unquoted: MIXEDCASE
        ("snowflake", "ID", '"id"'),
    ],
)
def test_a_spelling_the_engine_does_not_resolve_is_unresolved_not_joined(engine: str, column: str, spelling: str) -> None:
    mapping = {"orders": {column: "INT"}, "customers": {column: "INT"}} if engine == "postgres" else {"ORDERS": {column: "INT"}, "CUSTOMERS": {column: "INT"}}
    result = extract(f"SELECT * FROM orders o JOIN customers c ON o.{spelling} = c.{spelling}", engine, SchemaIndex(mapping))
    assert result.error is None and not result.pairs
    assert len(result.unresolved) == 2


def test_mysql_backticked_mixed_case_columns_meet_a_lower_case_catalogue() -> None:
    """The issue's case: BIRD's MySQL queries against a catalogue that says `customerid`."""
    mapping = {"customers": {"customerid": "INT"}, "yearmonth": {"customerid": "INT", "date": "TEXT"}}
    for sql in (
        "SELECT * FROM `customers` AS `T1` INNER JOIN `yearmonth` AS `T2` ON `T1`.`CustomerID` = `T2`.`CustomerID`",
        "SELECT * FROM customers AS T1 JOIN yearmonth AS T2 USING (CustomerID)",
        "SELECT * FROM (SELECT CustomerID AS Cid FROM customers) AS T1 JOIN yearmonth AS T2 ON T1.CID = T2.customerID",
    ):
        result = extract(sql, "mysql", SchemaIndex(mapping))
        assert {(str(pair.left), str(pair.right)) for pair in result.pairs} == {("customers.customerid", "yearmonth.customerid")}, sql


def test_a_catalogues_mixed_case_columns_are_named_as_it_spells_them() -> None:
    """BigQuery compares columns in any case; the pair names `fullVisitorId`, the graph's column."""
    schema = SchemaIndex({"p": {"ga": {"sessions": {"fullVisitorId": "STRING"}, "hits": {"fullVisitorId": "STRING"}}}}, default_catalog="p")
    result = extract("SELECT * FROM ga.sessions s JOIN ga.hits h ON s.FULLVISITORID = h.fullvisitorid", "bigquery", schema)
    assert {(str(pair.left), str(pair.right)) for pair in result.pairs} == {("p.ga.hits.fullVisitorId", "p.ga.sessions.fullVisitorId")}


def test_an_unqualified_table_is_the_one_the_catalogue_holds_once() -> None:
    """A DuckDB or SQLite file's tables are `<file>.main.<table>`; its queries say `orders`."""
    schema = SchemaIndex({"shop": {"main": {"orders": {"customer_id": "INT"}, "Customers": {"id": "INT"}}}}, default_catalog="shop")
    result = extract("SELECT * FROM orders o JOIN customers c ON o.customer_id = c.ID", "duckdb", schema)
    assert {(str(pair.left), str(pair.right)) for pair in result.pairs} == {("shop.main.Customers.id", "shop.main.orders.customer_id")}
    assert result.tables == {"shop.main.orders", "shop.main.Customers"}
