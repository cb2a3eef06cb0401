"""Identifiers and questions read as the same words, and date-sharded tables as one family."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shapes.table_context import lucene_query, matched
from worker.shared.words import family, meaningful, stem, unsharded, words


@pytest.mark.parametrize(
    ("identifier", "expected"),
    [
        ("work_orders", ["work", "orders"]),
        ("customerID", ["customer", "id"]),
        ("HTTPServerName", ["http", "server", "name"]),
        ("ga_sessions_20170801", ["ga", "sessions", "20170801"]),
        ("14_DAY_TOTAL_SALES", ["14", "day", "total", "sales"]),
        ("hits.product.productSKU", ["hits", "product", "product", "sku"]),
        ("BusinessEntityID", ["business", "entity", "id"]),
        ("Fahrzeug_Modell", ["fahrzeug", "modell"]),
        ("données_véhicule", ["données", "véhicule"]),
        ("車両 モデル", ["車両", "モデル"]),
        ("", []),
    ],
)
def test_identifiers_split_into_words(identifier: str, expected: list[str]) -> None:
    assert words(identifier) == expected


@pytest.mark.parametrize(
    ("word", "expected"),
    [
        ("vehicles", "vehicle"),
        ("categories", "category"),
        ("orders", "order"),
        ("status", "status"),
        ("class", "class"),
        ("parts", "part"),
        ("running", "runn"),
    ],
)
def test_plural_and_ing_forms_fold(word: str, expected: str) -> None:
    assert stem(word) == expected


def test_a_question_keeps_its_meaningful_words_once() -> None:
    assert meaningful("How many work orders per vehicle model, and which orders?") == ["work", "orders", "vehicle", "model"]
    assert meaningful("what is the of and or") == []


@pytest.mark.parametrize(
    ("table_id", "expected"),
    [
        ("p.ds.ga_sessions_20170801", "p.ds.ga_sessions_*"),
        ("p.ds.events_intraday_20210131", "p.ds.events_intraday_*"),
        ("p.ds.orders", "p.ds.orders"),
        ("p.ds.census_2020", "p.ds.census_2020"),
    ],
)
def test_date_sharded_tables_answer_as_their_family(table_id: str, expected: str) -> None:
    assert family(table_id) == expected


def test_a_family_name_drops_the_shard_date() -> None:
    assert unsharded("ga_sessions_20170801") == "ga_sessions"
    assert unsharded("events20210101") == "events"
    assert unsharded("orders") == "orders"


@given(st.text(max_size=200))
def test_any_question_makes_a_query_of_plain_words(question: str) -> None:
    """Whatever a question holds (Lucene syntax, quotes, other scripts), the query holds only its
    letters and digits, lower-cased, inside each field's parentheses."""
    query = lucene_query(meaningful(question), (("search_name", 3.0), ("search_columns", 1.0)))
    for clause in query.split(") "):
        name, _, said = clause.partition(":(")
        assert name in {"search_name", "search_columns"}
        assert all(word.isalnum() and word == word.lower() for word in said.split(")")[0].split())


def test_matches_name_the_columns_a_question_meets() -> None:
    columns = ["vin", "model", "model_year", "make"]
    assert matched("work orders per vehicle model", "vehicles", columns, []) == ["name vehicles", "column vehicles.model", "column vehicles.model_year"]
    assert matched("comeback ratio", "work_orders", ["is_comeback"], ["comeback ratio"]) == ["column work_orders.is_comeback", "term comeback ratio"]
