"""The rule of "may see" has two spellings — Python (`Grant.sees_uri`, `Grant.sees_table`) for the
checks made before a query, Cypher (`visible`, `visible_table`) for the rows a query keeps — and
they must agree on every URI and table id, whatever its case, depth or near-miss of a prefix."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from neo4j import Driver

from shapes.access.scope import visible, visible_table
from worker.shared.grants import Grant

pytestmark = pytest.mark.timeout(300)
SEEN = f"UNWIND $values AS value RETURN value, {visible('value')} AS uri_seen, {visible_table('value')} AS table_seen"

names = st.sampled_from(["sales", "SALES", "Sales", "sales_eu", "sale", "orders", "Orders", "proj", "shop", "x"])
table_ids = st.lists(names, min_size=1, max_size=4).map(".".join)
patterns = st.one_of(
    names,
    st.tuples(names, st.one_of(names, st.just("*"))).map(".".join),
    st.tuples(names, names, st.one_of(names, st.just("*"))).map(".".join),
)
segments = st.sampled_from(["shop", "manuals", "manuals-old", "Manuals", "engine", "a"])
uris = st.tuples(st.lists(segments, min_size=1, max_size=4).map("/".join), st.sampled_from(["", "#intro", "#intro/step"])).map("".join)


@given(
    tables=st.lists(patterns, max_size=4),
    libraries=st.lists(st.lists(segments, min_size=1, max_size=3).map("/".join), max_size=3),
    values=st.lists(st.one_of(table_ids, uris), min_size=1, max_size=40),
)
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_cypher_and_python_see_the_same_things(driver: Driver, tables: list[str], libraries: list[str], values: list[str]) -> None:
    grant = Grant(("random",), tuple(libraries), tuple(tables))
    rows = driver.execute_query(SEEN, values=values, **grant.cypher()).records
    for row in rows:
        assert row["uri_seen"] == grant.sees_uri(row["value"]), (row["value"], libraries)
        assert row["table_seen"] == grant.sees_table(row["value"]), (row["value"], tables)
