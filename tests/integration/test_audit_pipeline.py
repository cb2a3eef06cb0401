"""Audit-log events end to end: Pub/Sub emulator → `lakegraph subscribe` → Redis → Celery worker →
Neo4j, with the BigQuery emulator as the warehouse; and the audit-log folder through `lakegraph watch`."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from google.api_core.client_options import ClientOptions
from google.auth.credentials import AnonymousCredentials
from google.cloud import bigquery
from neo4j import Driver

from tests.conftest import Neo4jService
from tests.graph_dump import wipe
from tests.helpers import LAKEGRAPH, clean_env, crash, pubsub_topic, run_cli, start_worker
from worker import problems
from worker.graph import schema
from worker.runtime import redis_server
from worker.runtime.processes import wait_until

pytestmark = pytest.mark.timeout(300)
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "bigquery-audit-log"
PROJECT = "my-proj"
EXECUTIONS = "MATCH ()-[j:JOINS_WITH]->() RETURN coalesce(sum(j.executions), 0) AS n"


def entry(name: str, **changes: str) -> dict:
    data = json.loads((FIXTURES / name).read_text())
    if "job" in changes:
        job = data["protoPayload"]["metadata"]["jobChange"]["job"]
        job["jobName"] = f"projects/{PROJECT}/jobs/{changes['job']}"
    if "table" in changes:
        table = data["protoPayload"]["metadata"]["tableCreation"]["table"]
        table["tableName"] = f"projects/{PROJECT}/datasets/shop/tables/{changes['table']}"
    return data


def count(driver: Driver, query: str = EXECUTIONS) -> int:
    return driver.execute_query(query).records[0]["n"]


@dataclass
class AuditStack:
    """A BigQuery-emulator warehouse, a Pub/Sub topic and subscription, a Celery worker and
    `lakegraph subscribe`, each restartable."""

    env: dict[str, str]
    publish: Callable[[bytes], str]
    publish_async: Callable[[bytes], Future]
    warehouse: bigquery.Client
    audit_dir: Path
    worker: subprocess.Popen | None = None
    subscribe: subprocess.Popen | None = None

    def start_worker(self) -> None:
        self.worker = start_worker(self.env)

    def start_subscriber(self) -> None:
        self.subscribe = subprocess.Popen(
            [LAKEGRAPH, "subscribe"],
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )

    def stop(self) -> None:
        running = [process for process in (self.worker, self.subscribe) if process is not None and process.poll() is None]
        for process in running:
            process.send_signal(signal.SIGTERM)
        for process in running:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                crash(process)


@contextmanager
def audit_stack(
    neo4j_service: Neo4jService,
    driver: Driver,
    redis_service: redis_server.LocalRedis,
    pubsub_host: str,
    bigquery_endpoint: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    **extra_env: str,
) -> Iterator[AuditStack]:
    wipe(driver)
    schema.apply(driver, "neo4j")
    redis_server.client(redis_service.url, 5).flushall()
    warehouse = bigquery.Client(project=PROJECT, credentials=AnonymousCredentials(), client_options=ClientOptions(api_endpoint=bigquery_endpoint))
    warehouse.create_dataset("shop", exists_ok=True)
    for name in ("orders", "customers", "parts"):
        warehouse.delete_table(f"shop.{name}", not_found_ok=True)
    warehouse.query("CREATE TABLE shop.orders (id INT64, customer_id INT64, amount NUMERIC)").result()
    warehouse.query("CREATE TABLE shop.customers (id INT64, name STRING)").result()

    monkeypatch.setenv("PUBSUB_EMULATOR_HOST", pubsub_host)
    publisher, topic, subscription = pubsub_topic(PROJECT, f"audit-{tmp_path.name}", f"audit-sub-{tmp_path.name}")

    env = clean_env(
        LAKEGRAPH_STATE_DIR=str(tmp_path / "state"),
        LAKEGRAPH_REDIS__URL=redis_service.url,
        LAKEGRAPH_WAREHOUSE__ENGINE="bigquery",
        LAKEGRAPH_WAREHOUSE__BIGQUERY_PROJECT=PROJECT,
        LAKEGRAPH_WAREHOUSE__BIGQUERY_DATASETS='["shop"]',
        LAKEGRAPH_WAREHOUSE__BIGQUERY_ENDPOINT=bigquery_endpoint,
        LAKEGRAPH_PUBSUB__PROJECT=PROJECT,
        LAKEGRAPH_PUBSUB__SUBSCRIPTION=subscription,
        LAKEGRAPH_PUBSUB__EMULATOR_HOST=pubsub_host,
        **neo4j_service.env(),
        **extra_env,
    )
    assert run_cli("load", "warehouse", env=env).returncode == 0
    stack = AuditStack(
        env,
        lambda data: publisher.publish(topic, data).result(timeout=30),
        lambda data: publisher.publish(topic, data),
        warehouse,
        tmp_path / "state" / "audit-logs",
    )
    stack.start_worker()
    stack.start_subscriber()
    try:
        yield stack
    finally:
        stack.stop()


@pytest.fixture
def stack(
    neo4j_service: Neo4jService,
    driver: Driver,
    redis_service: redis_server.LocalRedis,
    pubsub_host: str,
    bigquery_endpoint: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[AuditStack]:
    with audit_stack(neo4j_service, driver, redis_service, pubsub_host, bigquery_endpoint, tmp_path, monkeypatch) as running:
        yield running


@pytest.mark.reliability
def test_pubsub_audit_logs_teach_joins_once_survive_poison_and_refresh_tables(stack: AuditStack, driver: Driver) -> None:
    publish = stack.publish
    done = json.dumps(entry("v2_jobChange_done.json")).encode()
    publish(done)
    publish(done)  # delivered twice: counts once
    publish((FIXTURES / "v1_jobCompletedEvent.json").read_bytes())  # the same job, legacy format
    publish(json.dumps(entry("v2_jobChange_failed.json", job="failed-1")).encode())
    publish((FIXTURES / "v2_jobInsertion.json").read_bytes())
    publish(b"{not a log entry")  # poison
    wait_until(lambda: count(driver) == 1, 30, "the join learned from the audit log")
    wait_until(lambda: any(p.source == "pubsub" for p in problems.listing(driver, "neo4j")), 30, "the poison message recorded")
    [poison] = problems.listing(driver, "neo4j", "pubsub")
    assert "not JSON" in poison.reason

    publish(json.dumps(entry("v2_jobChange_done.json", job="second-run")).encode())  # still subscribed after poison
    wait_until(lambda: count(driver) == 2, 30, "a second execution")
    time.sleep(1.0)
    assert count(driver) == 2

    # a first table event warms what an always-on worker has warm (its BigQuery client, the table
    # path's query plans); the second is timed: the latency of a table event in a running stack
    stack.warehouse.query("CREATE TABLE shop.warmup (id STRING)").result()
    publish(json.dumps(entry("v2_tableCreation.json", table="warmup")).encode())
    wait_until(lambda: count(driver, "MATCH (t:Table {id: 'my-proj.shop.warmup'}) RETURN count(t) AS n") == 1, 30, "the first table event")
    stack.warehouse.query("CREATE TABLE shop.parts (sku STRING, coil STRING)").result()
    began = time.monotonic()
    publish(json.dumps(entry("v2_tableCreation.json", table="parts")).encode())
    parts = "MATCH (t:Table {id: 'my-proj.shop.parts'})-[:HAS_COLUMN]->(c) RETURN count(c) AS n"
    while count(driver, parts) != 2 and time.monotonic() - began < 30:
        time.sleep(0.02)
    took = time.monotonic() - began
    print(f"\ntableCreation event → table in the graph: {took:.2f} s")
    assert took < 3.0  # measured 1.7 s on an idle machine (target 2 s); headroom for a loaded CI run

    stack.subscribe.send_signal(signal.SIGTERM)
    output = stack.subscribe.communicate(timeout=20)[0]
    assert "'poison': 1" in output and "'ignored': 1" in output


def test_audit_log_files_dropped_in_the_folder_are_ingested(stack: AuditStack, driver: Driver) -> None:
    watcher = subprocess.Popen([LAKEGRAPH, "watch"], env=stack.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert "audit logs" in watcher.stdout.readline()
        lines = [json.dumps(entry("v2_jobChange_done.json", job=f"file-{index}")) for index in range(3)]
        (stack.audit_dir / "export-1.ndjson").write_text("\n".join([*lines, "{bad line"]) + "\n")
        wait_until(lambda: count(driver) == 3, 30, "three executions from the file")
        (stack.audit_dir / "export-1.ndjson").touch()  # read again: nothing counted twice
        time.sleep(2.0)
        assert count(driver) == 3
        wait_until(lambda: any("line 4" in p.reason for p in problems.listing(driver, "neo4j", "warehouse")), 10, "bad line recorded")
    finally:
        watcher.send_signal(signal.SIGTERM)
        watcher.wait(timeout=20)
