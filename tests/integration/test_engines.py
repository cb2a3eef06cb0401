"""Every engine the suite needs answers over a real connection."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from google.api_core.client_options import ClientOptions
from google.api_core.exceptions import DeadlineExceeded
from google.auth.credentials import AnonymousCredentials
from google.cloud import bigquery
from neo4j import Driver

from tests.conftest import BIGQUERY_PROJECT, Neo4jService, runtime_settings
from tests.helpers import clean_env
from worker import task_names as names
from worker.celery_app import create_app
from worker.runtime import redis_server
from worker.settings import Settings

pytestmark = pytest.mark.timeout(240)


def test_gds_procedures_answer(driver: Driver) -> None:
    assert driver.execute_query("RETURN gds.version() AS v").records[0]["v"].startswith("2.13")
    driver.execute_query("MATCH (n:GdsProbe) DETACH DELETE n")
    driver.execute_query("UNWIND range(0, 5) AS i CREATE (:GdsProbe {i: i})")
    driver.execute_query("MATCH (a:GdsProbe), (b:GdsProbe) WHERE a.i < b.i AND (b.i - a.i = 1) AND NOT (a.i = 2 AND b.i = 3) CREATE (a)-[:NEAR]->(b)")
    records = driver.execute_query(
        """
        MATCH (a:GdsProbe)-[:NEAR]->(b:GdsProbe)
        WITH gds.graph.project('probe', a, b, {}, {undirectedRelationshipTypes: ['*']}) AS g
        CALL gds.leiden.stream('probe', {randomSeed: 7, concurrency: 1})
        YIELD nodeId, communityId
        RETURN gds.util.asNode(nodeId).i AS i, communityId ORDER BY i
        """
    ).records
    driver.execute_query("CALL gds.graph.drop('probe')")
    communities = [record["communityId"] for record in records]
    assert communities[0] == communities[1] == communities[2]
    assert communities[3] == communities[4] == communities[5]
    assert communities[2] != communities[3]


def test_celery_task_runs_in_a_separate_worker_process(neo4j_service: Neo4jService, redis_service: redis_server.LocalRedis, tmp_path: Path) -> None:
    env = clean_env(LAKEGRAPH_STATE_DIR=str(tmp_path), LAKEGRAPH_REDIS__URL=redis_service.url, **neo4j_service.env())
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "worker.celery_app", "worker", "--pool", "solo", "--loglevel", "warning"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        app = create_app(_with_redis(neo4j_service, redis_service))
        result = app.send_task(names.APPLY_SCHEMA).get(timeout=120)
        assert set(result) == {"created", "existing"}
        assert "document_text" in result["created"] + result["existing"]
        again = app.send_task(names.APPLY_SCHEMA).get(timeout=60)
        assert again["created"] == []  # idempotent
    finally:
        worker.terminate()
        output = worker.communicate(timeout=30)[0]
    assert "Traceback" not in output, output


def _with_redis(neo4j_service: Neo4jService, redis_service: redis_server.LocalRedis) -> Settings:
    return runtime_settings(
        neo4j_service.settings.state_path,
        neo4j={"uri": neo4j_service.uri, "password": neo4j_service.password},
        redis={"url": redis_service.url},
    )


def test_pubsub_emulator_publish_then_streaming_pull_with_ack(pubsub_host: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PUBSUB_EMULATOR_HOST", pubsub_host)
    from google.cloud import pubsub_v1

    publisher = pubsub_v1.PublisherClient()
    subscriber = pubsub_v1.SubscriberClient()
    topic = publisher.topic_path("lakegraph-test", "audit-logs")
    subscription = subscriber.subscription_path("lakegraph-test", "audit-logs-sub")
    publisher.create_topic(name=topic)
    subscriber.create_subscription(name=subscription, topic=topic, ack_deadline_seconds=10)
    for index in range(3):
        publisher.publish(topic, f"entry-{index}".encode(), origin="test").result(timeout=30)

    received: list[str] = []

    def callback(message: pubsub_v1.subscriber.message.Message) -> None:
        received.append(message.data.decode())
        message.ack()

    future = subscriber.subscribe(subscription, callback=callback)
    deadline = time.monotonic() + 30
    while len(received) < 3 and time.monotonic() < deadline:
        time.sleep(0.1)
    future.cancel()
    assert sorted(received) == ["entry-0", "entry-1", "entry-2"]
    # acked: nothing is redelivered
    try:
        again = list(subscriber.pull(subscription=subscription, max_messages=10, timeout=3).received_messages)
    except DeadlineExceeded:
        again = []
    assert again == []
    subscriber.close()


def test_bigquery_emulator_information_schema_returns_a_declared_foreign_key(bigquery_endpoint: str) -> None:
    client = bigquery.Client(
        project=BIGQUERY_PROJECT,
        credentials=AnonymousCredentials(),
        client_options=ClientOptions(api_endpoint=bigquery_endpoint),
    )
    client.create_dataset("shop", exists_ok=True)
    client.query("CREATE TABLE shop.customers (id INT64, name STRING, PRIMARY KEY (id) NOT ENFORCED)").result()
    client.query(
        "CREATE TABLE shop.orders (id INT64, customer_id INT64, PRIMARY KEY (id) NOT ENFORCED, "
        "FOREIGN KEY (customer_id) REFERENCES shop.customers(id) NOT ENFORCED)"
    ).result()
    rows = client.query(
        """
        SELECT k.table_name, k.column_name, u.table_name AS ref_table, u.column_name AS ref_column
        FROM shop.INFORMATION_SCHEMA.TABLE_CONSTRAINTS AS c
        JOIN shop.INFORMATION_SCHEMA.KEY_COLUMN_USAGE AS k USING (constraint_name)
        JOIN shop.INFORMATION_SCHEMA.CONSTRAINT_COLUMN_USAGE AS u USING (constraint_name)
        WHERE c.constraint_type = 'FOREIGN KEY'
        """
    ).result()
    assert [tuple(row.values()) for row in rows] == [("orders", "customer_id", "customers", "id")]
