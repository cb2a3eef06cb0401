"""Query events into Query, USES and JOINS_WITH: counted once per job, failed jobs count for nothing."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest
from neo4j import Driver

from tests.graph_dump import wipe
from worker.graph import schema
from worker.warehouse.audit_log import QueryEvent, parse_entry
from worker.warehouse.query_graph import QueryGraph
from worker.warehouse.schema_snapshot import ColumnInfo, ForeignKey, Snapshot, TableInfo
from worker.warehouse.writer import MetadataWriter

pytestmark = pytest.mark.timeout(120)
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "bigquery-audit-log"
JOIN = """
MATCH (a:Column)-[j:JOINS_WITH]->(b:Column)
RETURN a.id AS left, b.id AS right, j.executions AS executions, j.distinct_queries AS queries,
       j.users AS users, j.declared AS declared, j.confidence AS confidence, j.first_seen AS first, j.last_seen AS last
"""
NOW = datetime(2024, 5, 10, tzinfo=UTC)


def event(name: str) -> QueryEvent:
    parsed = parse_entry(json.loads((FIXTURES / name).read_text()))
    assert isinstance(parsed, QueryEvent)
    return parsed


def shop(with_key: bool) -> Snapshot:
    column = lambda name, position: ColumnInfo(name, "INT64", position, True)
    orders = TableInfo("my-proj", "shop", "orders", "TABLE", columns=(column("id", 1), column("customer_id", 2), column("amount", 3)))
    customers = TableInfo("my-proj", "shop", "customers", "TABLE", columns=(column("id", 1), ColumnInfo("name", "STRING", 2, True)))
    keys = (ForeignKey("fk", "my-proj.shop.orders", ("customer_id",), "my-proj.shop.customers", ("id",)),) if with_key else ()
    return Snapshot("my-proj", "shop", (orders, customers), keys)


def test_a_finished_job_teaches_a_join_once_and_failures_teach_nothing(graph: Driver) -> None:
    MetadataWriter(graph, "neo4j").apply(shop(with_key=False))
    queries = QueryGraph(graph, "neo4j")
    done = event("v2_jobChange_done.json")
    report = queries.absorb([done], now=NOW)
    assert (report.runs, report.pairs, report.duplicates) == (1, 1, 0)
    [row] = graph.execute_query(JOIN).records
    assert (row["left"], row["right"], row["executions"], row["queries"], row["users"]) == (
        "my-proj.shop.customers.id",
        "my-proj.shop.orders.customer_id",
        1,
        1,
        ["alice@example.com"],
    )
    # 0.5 * (1 - e^-(1 query + 1 user)/4) + 0.2 * e^-(8 days / 90) + 0.3 * 0
    assert row["declared"] is False and row["confidence"] == pytest.approx(0.3797, abs=1e-4)
    used = graph.execute_query("MATCH (q:Query)-[:USES]->(t:Table) RETURN q.executions AS n, collect(t.name) AS tables").records[0]
    assert used["n"] == 1 and sorted(used["tables"]) == ["customers", "orders"]

    replayed = queries.absorb([event("v1_jobCompletedEvent.json"), done], now=NOW)  # the same job id, twice more
    assert (replayed.runs, replayed.duplicates) == (0, 2)
    failed = queries.absorb([replace(event("v2_jobChange_failed.json"), job_id="my-proj:failed-1")], now=NOW)
    assert (failed.runs, failed.failed) == (0, 1)
    assert graph.execute_query(JOIN).records[0]["executions"] == 1

    bob = replace(done, job_id="my-proj:job-2", user="bob@example.com", at="2024-05-03T09:00:00Z")
    queries.absorb([bob], now=NOW)
    [row] = graph.execute_query(JOIN).records
    assert (row["executions"], row["queries"], sorted(row["users"])) == (2, 1, ["alice@example.com", "bob@example.com"])
    assert (row["first"], row["last"]) == ("2024-05-01T12:00:03.456789Z", "2024-05-03T09:00:00Z")


def test_confidence_decays_with_time_since_last_seen(graph: Driver) -> None:
    MetadataWriter(graph, "neo4j").apply(shop(with_key=False))
    QueryGraph(graph, "neo4j").absorb([event("v2_jobChange_done.json")], now=datetime(2024, 8, 9, tzinfo=UTC))
    # 99 days after 2024-05-01T12:00: 0.19673 + 0.2 * e^-(99/90)
    assert graph.execute_query(JOIN).records[0]["confidence"] == pytest.approx(0.2633, abs=1e-4)


def test_agreement_with_a_declared_key_raises_confidence(graph: Driver) -> None:
    plain = QueryGraph(graph, "neo4j")
    MetadataWriter(graph, "neo4j").apply(shop(with_key=False))
    plain.absorb([event("v2_jobChange_done.json")], now=NOW)
    without = graph.execute_query(JOIN).records[0]["confidence"]
    wipe(graph)
    schema.apply(graph, "neo4j")
    MetadataWriter(graph, "neo4j").apply(shop(with_key=True))
    QueryGraph(graph, "neo4j").absorb([event("v2_jobChange_done.json")], now=NOW)
    row = graph.execute_query(JOIN).records[0]
    assert row["declared"] is True and row["confidence"] == pytest.approx(without + 0.3, abs=1e-3)


def test_sql_that_does_not_parse_is_recorded_and_skipped(graph: Driver) -> None:
    MetadataWriter(graph, "neo4j").apply(shop(with_key=False))
    broken = replace(event("v2_jobChange_done.json"), job_id="my-proj:broken", sql="SELEC FROM WHERE (")
    report = QueryGraph(graph, "neo4j").absorb([broken], now=NOW)
    assert (report.runs, report.unparsable, report.pairs) == (1, 1, 0)
    query = graph.execute_query("MATCH (q:Query) RETURN q.error AS error, q.sql AS sql").records[0]
    assert query["error"] and query["sql"] == "SELEC FROM WHERE ("


def test_joins_command_lists_declared_and_learned_with_evidence(graph: Driver, neo4j_service, tmp_path: Path) -> None:
    from tests.helpers import clean_env, run_cli

    MetadataWriter(graph, "neo4j").apply(shop(with_key=True))
    QueryGraph(graph, "neo4j").absorb([event("v2_jobChange_done.json")], now=NOW)
    env = clean_env(LAKEGRAPH_STATE_DIR=str(tmp_path), **neo4j_service.env())
    result = run_cli("joins", "--table", "shop.orders", env=env)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.strip().splitlines()
    assert lines[:2] == ["declared keys (1)", "  my-proj.shop.orders.customer_id → my-proj.shop.customers.id  (fk)"]
    assert lines[2] == "learned from query logs (1)"
    assert lines[3].startswith("  my-proj.shop.customers.id = my-proj.shop.orders.customer_id  confidence ")
    assert "1 executions, 1 queries, 1 users, last 2024-05-01T12:00:03.456789Z [declared]" in lines[3]
    data = json.loads(run_cli("joins", "--json", "--min-confidence", "0.99", env=env).stdout)
    assert data["learned"] == [] and len(data["declared"]) == 1


def test_the_schema_is_read_again_only_when_a_metadata_write_moves_it(graph: Driver) -> None:
    queries = QueryGraph(graph, "neo4j")
    writer = MetadataWriter(graph, "neo4j")
    writer.apply(shop(with_key=False))
    first = queries.schema()
    assert "orders" in first.mapping["my-proj"]["shop"]
    writer.apply(shop(with_key=False))  # the same metadata again: nothing written, nothing stamped
    assert queries.schema() is first
    writer.apply(shop(with_key=True))
    assert queries.schema() is not first


def learned(graph: Driver) -> list[tuple]:
    """The learned joins (users in name order) and what each query uses, as values."""
    joins = sorted(tuple(sorted(value) if isinstance(value, list) else value for value in row.values()) for row in graph.execute_query(JOIN).records)
    uses = graph.execute_query("MATCH (q:Query)-[:USES]->(t:Table) RETURN q.id AS q, t.id AS t, q.executions AS n, q.pending AS pending ORDER BY q, t")
    return joins + [tuple(row.values()) for row in uses.records]


def test_a_query_log_that_comes_before_its_tables_is_learned_once_they_arrive(graph: Driver) -> None:
    """The same events in either order give one graph: absorbed before the metadata, their runs
    wait (pending) and each is credited exactly once when a relearn finds the tables, however
    many relearns run, at once or again."""
    done = event("v2_jobChange_done.json")
    runs = [done, replace(done, job_id="my-proj:job-2", user="bob@example.com", at="2024-05-03T09:00:00Z")]
    later = replace(done, job_id="my-proj:job-3", user="carol@example.com", at="2024-05-04T09:00:00Z")

    MetadataWriter(graph, "neo4j").apply(shop(with_key=True))
    QueryGraph(graph, "neo4j").absorb(runs, now=NOW)
    QueryGraph(graph, "neo4j").absorb([later], now=NOW)
    metadata_first = learned(graph)
    assert graph.execute_query(JOIN).records[0]["executions"] == 3

    wipe(graph)
    schema.apply(graph, "neo4j")
    queries = QueryGraph(graph, "neo4j")  # one long-lived absorber, as in a worker
    report = queries.absorb(runs, now=NOW)
    assert (report.runs, report.pending, report.pairs) == (2, 1, 0)
    assert graph.execute_query(JOIN).records == []
    MetadataWriter(graph, "neo4j").apply(shop(with_key=True))
    with ThreadPoolExecutor(2) as pool:  # two relearns at once credit each run once
        reports = list(pool.map(lambda _: QueryGraph(graph, "neo4j").relearn(now=NOW), range(2)))
    assert sorted((r.settled, r.runs) for r in reports) == [(0, 0), (1, 2)]
    assert QueryGraph(graph, "neo4j").relearn(now=NOW).pending == 0  # and again: nothing waits, nothing moves
    assert queries.absorb([later], now=NOW).pending == 0  # the absorber's shapes were resolved against the old schema
    assert learned(graph) == metadata_first


def test_a_query_on_a_table_never_loaded_waits_without_counting(graph: Driver) -> None:
    MetadataWriter(graph, "neo4j").apply(shop(with_key=False))
    elsewhere = replace(
        event("v2_jobChange_done.json"),
        job_id="other-1",
        sql="SELECT * FROM `my-proj.shop.orders` o JOIN `my-proj.crm.contacts` c ON o.customer_id = c.id",
    )
    queries = QueryGraph(graph, "neo4j")
    assert queries.absorb([elsewhere], now=NOW).pending == 1
    assert (queries.relearn(now=NOW).pending, queries.relearn(now=NOW).settled) == (1, 0)
    assert graph.execute_query(JOIN).records == []
    used = graph.execute_query("MATCH (q:Query) OPTIONAL MATCH (q)-[:USES]->(t) RETURN q.pending AS pending, collect(t.id) AS tables").records[0]
    assert used["pending"] is True and used["tables"] == ["my-proj.shop.orders"]
    from shapes.joins import list_joins, render

    listing = list_joins(graph, "neo4j", "", 0.0)
    assert listing.pending_queries == 1 and list_joins(graph, "neo4j", "shop.orders", 0.0).pending_queries == 0
    assert "queries naming tables the graph does not hold (1; counted once their metadata is loaded)" in render(listing)


def test_a_column_the_table_lacks_is_listed_as_unresolved_and_never_joined(graph: Driver) -> None:
    from shapes.joins import list_joins, render

    MetadataWriter(graph, "neo4j").apply(shop(with_key=False))
    typo = replace(
        event("v2_jobChange_done.json"), job_id="typo-1", sql="SELECT * FROM `my-proj.shop.orders` o JOIN `my-proj.shop.customers` c ON o.customer = c.id"
    )
    report = QueryGraph(graph, "neo4j").absorb([typo], now=NOW)
    assert (report.runs, report.pairs, report.unresolved) == (1, 0, 1)
    assert graph.execute_query(JOIN).records == []
    listing = list_joins(graph, "neo4j", "", 0.0)
    assert listing.unresolved_queries == 1
    assert [row["columns"] for row in listing.unresolved_examples] == [["my-proj.shop.orders.customer"]]
    assert "queries naming columns their tables lack (1; not counted as joins)" in render(listing)
    assert list_joins(graph, "neo4j", "shop.customers", 0.0).unresolved_queries == 0
