"""Join inference from SQL (sqlglot): every join shape, resolved to base-table columns."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlglot import exp

from shapes.access.sql_runner import check_query
from tests.helpers import assert_one_line_error, run_cli
from worker.warehouse.joins import SchemaIndex, extract, fingerprint, known_dialect
from worker.warehouse.query_log import Execution, absorb

SCHEMA = SchemaIndex(
    {
        "shop": {
            "customers": {"id": "INT64", "region": "STRING"},
            "orders": {"id": "INT64", "customer_id": "INT64", "order_id": "INT64"},
            "items": {"order_id": "INT64", "sku": "STRING", "line": "INT64"},
            "parts": {"sku": "STRING", "line": "INT64"},
            "employees": {"id": "INT64", "manager_id": "INT64"},
        }
    }
)
ORDERS_CUSTOMERS = {("shop.customers.id", "shop.orders.customer_id")}


def pairs(sql: str, schema: SchemaIndex = SCHEMA) -> set[tuple[str, str]]:
    result = extract(sql, "bigquery", schema)
    assert result.error is None, result.error
    return {(str(pair.left), str(pair.right)) for pair in result.pairs}


@pytest.mark.parametrize(
    ("shape", "sql", "expected"),
    [
        ("aliases", "SELECT * FROM shop.orders o JOIN shop.customers c ON o.customer_id = c.id", ORDERS_CUSTOMERS),
        ("reversed sides", "SELECT * FROM shop.orders o JOIN shop.customers c ON c.id = o.customer_id", ORDERS_CUSTOMERS),
        ("unaliased, backticked", "SELECT * FROM `shop.orders` JOIN `shop`.`customers` ON orders.customer_id = customers.id", ORDERS_CUSTOMERS),
        (
            "unqualified columns",
            "SELECT * FROM shop.orders JOIN shop.customers ON customer_id = region",
            {("shop.customers.region", "shop.orders.customer_id")},
        ),
        ("USING", "SELECT * FROM shop.orders JOIN shop.items USING (order_id)", {("shop.items.order_id", "shop.orders.order_id")}),
        ("comma join with WHERE", "SELECT * FROM shop.orders o, shop.customers c WHERE o.customer_id = c.id AND c.region = 'EU'", ORDERS_CUSTOMERS),
        (
            "composite ON a AND b",
            "SELECT * FROM shop.items i JOIN shop.parts p ON i.sku = p.sku AND i.line = p.line",
            {("shop.items.sku", "shop.parts.sku"), ("shop.items.line", "shop.parts.line")},
        ),
        ("CTE", "WITH c AS (SELECT id AS cid FROM shop.customers) SELECT * FROM shop.orders o JOIN c ON o.customer_id = c.cid", ORDERS_CUSTOMERS),
        (
            "CTE of a CTE",
            "WITH a AS (SELECT id FROM shop.customers), b AS (SELECT id AS k FROM a) SELECT * FROM shop.orders o JOIN b ON b.k = o.customer_id",
            ORDERS_CUSTOMERS,
        ),
        ("CTE built with SELECT *", "WITH c AS (SELECT * FROM shop.customers) SELECT * FROM shop.orders o JOIN c ON o.customer_id = c.id", ORDERS_CUSTOMERS),
        ("derived table", "SELECT * FROM shop.orders o JOIN (SELECT id AS k FROM shop.customers) d ON d.k = o.customer_id", ORDERS_CUSTOMERS),
        (
            "subquery",
            "SELECT * FROM shop.orders o WHERE o.customer_id IN (SELECT c.id FROM shop.customers c JOIN shop.orders o2 ON o2.customer_id = c.id)",
            ORDERS_CUSTOMERS,
        ),
        (
            "UNION branches",
            "SELECT * FROM shop.orders o JOIN (SELECT id FROM shop.customers UNION ALL SELECT id FROM shop.employees) u ON u.id = o.customer_id",
            {("shop.customers.id", "shop.orders.customer_id"), ("shop.employees.id", "shop.orders.customer_id")},
        ),
        (
            "joins inside UNION branches",
            "SELECT o.id FROM shop.orders o JOIN shop.customers c ON o.customer_id = c.id "
            "UNION ALL SELECT i.line FROM shop.items i JOIN shop.parts p ON i.sku = p.sku",
            {("shop.customers.id", "shop.orders.customer_id"), ("shop.items.sku", "shop.parts.sku")},
        ),
        (
            "LEFT JOIN and casts",
            "SELECT * FROM shop.orders o LEFT JOIN (SELECT CAST(id AS INT64) AS k FROM shop.customers) c ON c.k = o.customer_id",
            ORDERS_CUSTOMERS,
        ),
        (
            "INSERT ... SELECT",
            "INSERT INTO shop.parts SELECT i.sku, i.line FROM shop.items i JOIN shop.orders o ON o.order_id = i.order_id",
            {("shop.items.order_id", "shop.orders.order_id")},
        ),
    ],
)
def test_join_shapes(shape: str, sql: str, expected: set[tuple[str, str]]) -> None:
    assert pairs(sql) == expected, shape


def test_self_join_is_kept_and_flagged() -> None:
    result = extract("SELECT * FROM shop.employees e JOIN shop.employees m ON e.manager_id = m.id", "bigquery", SCHEMA)
    [pair] = result.pairs
    assert (str(pair.left), str(pair.right), pair.self_join) == ("shop.employees.id", "shop.employees.manager_id", True)
    same_column = extract("SELECT * FROM shop.orders a JOIN shop.orders b ON a.customer_id = b.customer_id", "bigquery", SCHEMA)
    assert [(str(p.left), str(p.right), p.self_join) for p in same_column.pairs] == [("shop.orders.customer_id", "shop.orders.customer_id", True)]


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT id FROM shop.orders WHERE id = 5",
        "SELECT * FROM shop.orders o JOIN shop.customers c ON o.customer_id > c.id",
        "SELECT CASE WHEN o.id = o.customer_id THEN 1 END FROM shop.orders o",
        "SELECT * FROM shop.orders o CROSS JOIN shop.customers c",
    ],
)
def test_no_column_equality_in_a_join_condition_means_no_pair(sql: str) -> None:
    assert pairs(sql) == set()


def test_tables_used_are_reported() -> None:
    result = extract("WITH c AS (SELECT id FROM shop.customers) SELECT * FROM shop.orders o JOIN c ON o.customer_id = c.id", "bigquery", SCHEMA)
    assert result.tables == {"shop.customers", "shop.orders"}


@pytest.mark.parametrize("sql", ["SELEC oops", "SELECT FROM WHERE (", "not sql at all;"])
def test_sql_that_does_not_parse_is_an_error_not_an_exception(sql: str) -> None:
    result = extract(sql, "bigquery", SCHEMA)
    assert result.error and not result.pairs


@pytest.mark.parametrize(("sql", "dialect"), [("CREATE TABLE t AS  USING (id)", "snowflake"), ("FROM NULL GROUP BY 1", "bigquery")])
def test_a_crash_inside_sqlglot_is_an_error_not_an_exception(sql: str, dialect: str) -> None:
    """Found by the fuzz campaign: sqlglot raises TypeError and AssertionError on these."""
    result = extract(sql, dialect, SCHEMA)
    assert result.error and not result.pairs


def test_schema_names_follow_the_mapping_depth() -> None:
    flat = SchemaIndex({"orders": {"customer_id": "INT"}, "customers": {"id": "INT"}})
    assert pairs("SELECT * FROM orders o JOIN customers c ON o.customer_id = c.id", flat) == {("customers.id", "orders.customer_id")}
    deep = SchemaIndex({"proj": {"shop": {"orders": {"customer_id": "INT"}, "customers": {"id": "INT"}}}})
    assert pairs("SELECT * FROM `proj.shop.orders` o JOIN proj.shop.customers c ON o.customer_id = c.id", deep) == {
        ("proj.shop.customers.id", "proj.shop.orders.customer_id")
    }


def test_fingerprints_ignore_literals_comments_and_spacing() -> None:
    one = fingerprint("SELECT * FROM t WHERE a = 1 AND b = 'x' -- first")
    two = fingerprint("select  *\nFROM t WHERE a = 42 AND b = 'yy' /* other */")
    assert fingerprint("SELECT * FROM t WHERE a = 1 AND b = 'x'") == one
    assert one != two  # keyword case is part of the shape
    assert fingerprint("SELECT * FROM t2 WHERE a = 1") != fingerprint("SELECT * FROM t WHERE a = 1")


def test_absorbing_counts_queries_executions_users_and_duplicates_once() -> None:
    join = "SELECT * FROM shop.orders o JOIN shop.customers c ON o.customer_id = c.id WHERE c.region = '{}'"
    executions = [
        Execution("j1", join.format("EU"), "ann"),
        Execution("j2", join.format("US"), "bob"),
        Execution("j2", join.format("US"), "bob"),  # replayed: counts once
        Execution("j3", "SELECT * FROM shop.orders JOIN shop.customers ON orders.customer_id = customers.id", "ann"),
        Execution("j4", "SELEC nonsense", "eve"),
    ]
    result = absorb(executions, "bigquery", SCHEMA, workers=1)
    assert (result.executions, result.duplicates, len(result.shapes), len(result.unparsable)) == (4, 1, 3, 1)
    [(pair, stats)] = result.pairs.items()
    assert (str(pair.left), str(pair.right)) == ("shop.customers.id", "shop.orders.customer_id")
    assert (len(stats.queries), stats.executions, stats.users) == (2, 3, {"ann", "bob"})


def test_joins_extract_command(tmp_path: Path) -> None:
    queries = tmp_path / "queries.jsonl"
    queries.write_text(
        "\n".join(
            [
                json.dumps({"id": "1", "sql": "SELECT * FROM shop.orders o JOIN shop.customers c ON o.customer_id = c.id"}),
                json.dumps({"id": "2", "sql": "SELECT * FROM shop.orders o JOIN shop.customers c ON c.id = o.customer_id WHERE o.id = 7"}),
                json.dumps({"id": "3", "sql": "SELECT * FROM shop.items JOIN shop.orders USING (order_id)", "dialect": "duckdb"}),
                "{broken json",
            ]
        )
        + "\n"
    )
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps(SCHEMA.mapping))
    result = run_cli("extract-joins", "--queries", str(queries), "--dialect", "bigquery", "--schema", str(schema), "--json")
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout)
    assert answer["pairs"] == [
        {"left": "shop.customers.id", "right": "shop.orders.customer_id", "queries": 2, "executions": 2, "self_join": False},
        {"left": "shop.items.order_id", "right": "shop.orders.order_id", "queries": 1, "executions": 1, "self_join": False},
    ]
    assert (answer["executions"], answer["distinct_queries"], answer["bad_lines"], answer["unresolved"]) == (3, 3, 1, [])
    assert "skipped line 4" in result.stderr


def test_joins_extract_shows_unresolved_columns_with_their_query(tmp_path: Path) -> None:
    queries = tmp_path / "queries.jsonl"
    queries.write_text(json.dumps({"id": "1", "sql": "SELECT * FROM shop.orders o JOIN shop.customers c ON o.buyer = c.id"}) + "\n")
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps(SCHEMA.mapping))
    text = run_cli("extract-joins", "--queries", str(queries), "--dialect", "bigquery", "--schema", str(schema))
    assert text.returncode == 0, text.stderr
    assert "1 with unresolved columns" in text.stdout and "0 join pairs" in text.stdout
    assert "unresolved shop.orders.buyer (not a join) in: SELECT * FROM shop.orders o JOIN" in text.stderr
    answer = json.loads(run_cli("extract-joins", "--queries", str(queries), "--dialect", "bigquery", "--schema", str(schema), "--json").stdout)
    assert [row["columns"] for row in answer["unresolved"]] == [["shop.orders.buyer"]] and answer["pairs"] == []


def test_joins_extract_refuses_bad_arguments_in_one_line(tmp_path: Path) -> None:
    queries = tmp_path / "q.jsonl"
    queries.write_text("")
    assert_one_line_error(run_cli("extract-joins", "--queries", str(queries), "--dialect", "nope"), "unknown --dialect 'nope'")
    (tmp_path / "s.json").write_text("[1, 2]")
    assert_one_line_error(
        run_cli("extract-joins", "--queries", str(queries), "--dialect", "bigquery", "--schema", str(tmp_path / "s.json")),
        "must hold a JSON object",
    )
    assert_one_line_error(run_cli("extract-joins", "--queries", str(tmp_path / "absent.jsonl"), "--dialect", "bigquery"), "cannot read")


def test_a_shape_resolved_once_is_reused_from_the_cache() -> None:
    cache: dict = {}
    sql = "SELECT * FROM shop.orders o JOIN shop.customers c ON o.customer_id = c.id WHERE o.id = {}"
    first = absorb([Execution("a", sql.format(1))], "bigquery", SCHEMA, workers=1, cache=cache)
    assert len(cache) == 1
    second = absorb([Execution("b", sql.format(2)), Execution("c", sql.format(3))], "bigquery", SCHEMA, workers=1, cache=cache)
    [shape] = second.shapes
    assert second.shapes[shape] is first.shapes[shape]  # the same object: not parsed again
    assert [stats.executions for stats in second.pairs.values()] == [2]


def test_a_column_missing_from_the_schema_does_not_lose_the_query() -> None:
    sql = "SELECT c.nickname FROM shop.orders o JOIN shop.customers c ON c.id = o.customer_id"
    assert pairs(sql) == ORDERS_CUSTOMERS


FLIGHTS = {
    "airlines": {"uid": "INT", "Airline": "TEXT", "Country": "TEXT"},
    "flights": {"Airline": "INT", "FlightNo": "INT", "SourceAirport": "TEXT"},
    "airports": {"AirportCode": "TEXT", "City": "TEXT"},
}
DIALECTS = ["sqlite", "mysql", "bigquery", "duckdb", "postgres", "snowflake"]
QUOTED_STRING_DIALECTS = ["sqlite", "mysql", "bigquery"]  # where "text" may be a string
# How a catalogue stores a name its DDL wrote unquoted: PostgreSQL folds it to lower case,
# Snowflake to upper case, the others keep it as written (Spider's flight_2, created in SQLite).
AS_CREATED = {"postgres": str.lower, "snowflake": str.upper}


def flights(dialect: str) -> SchemaIndex:
    """Spider's flight_2 as created in `dialect` by its DDL with unquoted names."""
    fold = AS_CREATED.get(dialect, str)
    return SchemaIndex({fold(table): {fold(column): kind for column, kind in columns.items()} for table, columns in FLIGHTS.items()})


def found(sql: str, dialect: str, schema: SchemaIndex | None = None) -> tuple[set[tuple[str, str, bool]], set[str]]:
    result = extract(sql, dialect, schema or flights(dialect))
    assert result.error is None, result.error
    return {(str(pair.left), str(pair.right), pair.self_join) for pair in result.pairs}, set(result.unresolved)


@pytest.mark.parametrize("dialect", QUOTED_STRING_DIALECTS)
def test_a_double_quoted_value_is_a_literal_not_a_column(dialect: str) -> None:
    """Spider's flight_2: `WHERE Airline = "JetBlue Airways"` is a filter on a string."""
    assert found('SELECT Country FROM airlines WHERE Airline = "JetBlue Airways"', dialect) == (set(), set())
    joined = 'SELECT count(*) FROM flights AS T1 JOIN airlines AS T2 ON T1.Airline = T2.uid WHERE T2.Airline = "JetBlue Airways"'
    pairs_found, unresolved = found(joined, dialect)
    assert {(left.lower(), right.lower()) for left, right, _ in pairs_found} == {("airlines.uid", "flights.airline")}
    assert unresolved == set()


@pytest.mark.parametrize("dialect", DIALECTS)
def test_two_fields_of_one_row_are_a_filter_not_a_join(dialect: str) -> None:
    for sql in (
        "SELECT * FROM flights t WHERE t.Airline = t.FlightNo",
        "SELECT * FROM flights WHERE Airline = FlightNo",
        "SELECT * FROM flights t JOIN airports a ON t.SourceAirport = a.AirportCode AND t.Airline = t.FlightNo",
    ):
        pairs_found, _ = found(sql, dialect)
        assert all(not self_join for _, _, self_join in pairs_found), (dialect, sql, pairs_found)
        assert len(pairs_found) <= 1


@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_column_the_table_lacks_is_counted_unresolved_never_joined(dialect: str) -> None:
    pairs_found, unresolved = found("SELECT * FROM flights f JOIN airports a ON f.Gate = a.AirportCode", dialect)
    assert pairs_found == set()
    assert {name.lower() for name in unresolved} == {"flights.gate"}
    pairs_found, unresolved = found("SELECT * FROM flights WHERE Gate = FlightNo", dialect)
    assert pairs_found == set() and {name.lower() for name in unresolved} == {"flights.gate"}


@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_real_self_join_through_two_aliases_stays_a_join(dialect: str) -> None:
    """TPC-H Q21's shape: lineitem l1 and l2 on the same order."""
    fold = AS_CREATED.get(dialect, str)
    schema = SchemaIndex({fold("lineitem"): {fold("l_orderkey"): "INT", fold("l_suppkey"): "INT"}})
    sql = "SELECT * FROM lineitem l1 JOIN lineitem l2 ON l2.l_orderkey = l1.l_orderkey AND l2.l_suppkey <> l1.l_suppkey"
    pairs_found, unresolved = found(sql, dialect, schema)
    assert {(left.lower(), right.lower(), self_join) for left, right, self_join in pairs_found} == {("lineitem.l_orderkey", "lineitem.l_orderkey", True)}
    assert unresolved == set()


def test_without_a_schema_nothing_is_called_unresolved() -> None:
    result = extract("SELECT * FROM flights f JOIN airports a ON f.Gate = a.AirportCode", "sqlite", SchemaIndex({}))
    assert {(str(pair.left), str(pair.right)) for pair in result.pairs} == {("airports.airportcode", "flights.gate")}
    assert not result.unresolved


def test_a_correlated_subquery_joins_to_its_outer_alias() -> None:
    sql = "SELECT * FROM shop.orders o WHERE EXISTS (SELECT 1 FROM shop.customers c WHERE c.id = o.customer_id)"
    assert pairs(sql) == ORDERS_CUSTOMERS


def test_public_query_sets_learn_exactly_their_labelled_joins() -> None:
    """Spider dev (SQLite, with "string" literals and filters) and TPC-H (comma joins, self-joins,
    correlated subqueries): every learned pair is a real join, and every labelled join is learned."""
    from tests.benchmarks.join_precision import query_sets, score

    assert [path.stem for path in query_sets()] == ["spider-dev", "tpch"]
    for path in query_sets():
        result = score(path)
        assert (result.precision, result.recall, result.unresolved) == (1.0, 1.0, 0), path.stem


def test_an_unknown_dialect_is_refused_with_the_setting_named_before_any_query() -> None:
    from worker.exceptions import LakegraphError
    from worker.warehouse.query_graph import QueryGraph

    assert known_dialect("duckdb") == "duckdb"
    with pytest.raises(LakegraphError, match=r"warehouse.sql_dialect: Unknown dialect 'bigqeury'. Did you mean bigquery\?"):
        QueryGraph(driver=None, database="neo4j", dialect="bigqeury")  # type: ignore[arg-type]  # refused before the graph is used


def test_a_comment_after_the_last_statement_is_not_a_statement() -> None:
    """Spider 2.0-lite's bq031 ends `...; -- all result rounded to 1 decimal place`."""
    sql = "SELECT * FROM shop.orders o JOIN shop.customers c ON o.customer_id = c.id;\n-- all result rounded to 1 decimal place"
    assert pairs(sql) == ORDERS_CUSTOMERS
    assert isinstance(check_query(sql, "bigquery"), exp.Select)


def test_a_wildcard_table_is_read_as_its_newest_member() -> None:
    """BigQuery reads `ga_sessions_*` with its newest member's schema; the family's joins land there,
    as the family is searched through that member. A script's DECLAREs read no table."""
    shards = {f"ga_sessions_2017080{day}": {"fullVisitorId": "STRING", "visitId": "INT64"} for day in (1, 2, 3)}
    schema = SchemaIndex({"p": {"ga": {**shards, "visitors": {"fullVisitorId": "STRING"}}}}, default_catalog="p")
    sql = """DECLARE start_date STRING DEFAULT '20170801';
    SELECT * FROM `p.ga.ga_sessions_*` AS s JOIN ga.visitors v ON s.fullvisitorid = v.fullVisitorId
    WHERE _TABLE_SUFFIX >= start_date"""
    result = extract(sql, "bigquery", schema)
    assert result.error is None, result.error
    assert {(str(pair.left), str(pair.right)) for pair in result.pairs} == {("p.ga.ga_sessions_20170803.fullVisitorId", "p.ga.visitors.fullVisitorId")}
    assert result.tables == {"p.ga.ga_sessions_20170803", "p.ga.visitors"}


@pytest.mark.parametrize(
    ("dialect", "script", "expected"),
    [
        ("snowflake", 'USE SCHEMA "DB"."B"', "DB.B"),
        ("snowflake", "USE DATABASE db; USE WAREHOUSE wh; USE SCHEMA b", "DB.B"),
        ("snowflake", "USE db.a", "DB.A"),
        ("databricks", "USE CATALOG db; USE SCHEMA a", "DB.A"),
        ("mysql", "USE B", "DB.B"),  # MySQL's database is the schema level
    ],
)
def test_a_scripts_use_says_where_its_unqualified_tables_are(dialect: str, script: str, expected: str) -> None:
    """Two schemas hold ORDERS and CUSTOMERS: without a session the names are ambiguous and teach nothing."""
    fold = str.upper if dialect == "snowflake" else str
    names = {fold(table): {fold("id"): "INT", fold("customer_id"): "INT"} for table in ("orders", "customers")}
    schema = SchemaIndex({"DB": {"A": names, "B": names}}, default_catalog="DB")
    sql = "SELECT * FROM orders o JOIN customers c ON o.customer_id = c.id"
    assert not any(str(pair.left).startswith("DB.") for pair in extract(sql, dialect, schema).pairs)
    result = extract(f"{script};\n{sql}", dialect, schema)
    assert result.error is None, result.error
    assert {(str(pair.left), str(pair.right)) for pair in result.pairs} == {
        (f"{expected}.{fold('customers')}.{fold('id')}", f"{expected}.{fold('orders')}.{fold('customer_id')}")
    }
