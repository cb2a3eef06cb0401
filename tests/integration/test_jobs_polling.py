"""INFORMATION_SCHEMA.JOBS_BY_PROJECT polling against the BigQuery emulator: each query once."""

from __future__ import annotations

import pytest
from google.api_core.client_options import ClientOptions
from google.api_core.exceptions import BadRequest
from google.auth.credentials import AnonymousCredentials
from google.cloud import bigquery
from neo4j import Driver

from tests.conftest import BIGQUERY_PROJECT
from tests.graph_dump import wipe
from worker.graph import schema
from worker.warehouse.connectors import BigQueryConnector
from worker.warehouse.jobs_poller import JobsPoller
from worker.warehouse.query_graph import QueryGraph
from worker.warehouse.writer import MetadataWriter

pytestmark = pytest.mark.timeout(180)
JOIN = f"""
MATCH (:Column {{id: '{BIGQUERY_PROJECT}.polling.b.id'}})-[j:JOINS_WITH]-(:Column {{id: '{BIGQUERY_PROJECT}.polling.a.b_id'}})
RETURN j.executions AS n
"""


def executions(driver: Driver) -> int:
    records = driver.execute_query(JOIN).records
    return records[0]["n"] if records else 0


def drain(poller: JobsPoller) -> None:
    """Poll until the watermark stops moving (earlier tests left jobs in the emulator too)."""
    previous = None
    while (report := poller.poll()).watermark != previous:
        previous = report.watermark


def test_polling_picks_up_each_query_exactly_once(bigquery_endpoint: str, driver: Driver) -> None:
    wipe(driver)
    schema.apply(driver, "neo4j")
    client = bigquery.Client(project=BIGQUERY_PROJECT, credentials=AnonymousCredentials(), client_options=ClientOptions(api_endpoint=bigquery_endpoint))
    client.create_dataset("polling", exists_ok=True)
    client.query("CREATE TABLE IF NOT EXISTS polling.a (id INT64, b_id INT64)").result()
    client.query("CREATE TABLE IF NOT EXISTS polling.b (id INT64, label STRING)").result()
    MetadataWriter(driver, "neo4j").apply(BigQueryConnector(client, BIGQUERY_PROJECT, ["polling"]).snapshot("polling"))
    poller = JobsPoller(client, BIGQUERY_PROJECT, "US", driver, "neo4j", QueryGraph(driver, "neo4j"))

    client.query("SELECT a.id, b.label FROM polling.a JOIN polling.b ON a.b_id = b.id").result()
    drain(poller)
    assert executions(driver) == 1
    drain(poller)
    assert executions(driver) == 1  # polled again: nothing counted twice

    client.query("SELECT COUNT(*) FROM polling.b b, polling.a a WHERE b.id = a.b_id").result()
    with pytest.raises(BadRequest):
        client.query("SELECT a.nope FROM polling.a a JOIN polling.b b ON a.b_id = b.id").result()
    drain(poller)
    assert executions(driver) == 2  # the new query counts; the failed one does not
    runs = driver.execute_query("MATCH (r:QueryRun) WHERE r.failed RETURN count(r) AS n").records[0]["n"]
    assert runs >= 1
