"""Pub/Sub delivers at least once: duplicates published on purpose, and redeliveries forced by
SIGKILLing the subscriber (its unacknowledged messages come back after the ack deadline) and the
worker (its unacknowledged tasks come back from Redis) in the middle of a load of audit-log
messages. Every job must count exactly once, every poison message be recorded exactly once."""

from __future__ import annotations

import json
import random
import time
from pathlib import Path

import pytest
from neo4j import Driver

from tests.conftest import Neo4jService
from tests.helpers import crash
from tests.integration.test_audit_pipeline import (
    EXECUTIONS,
    AuditStack,
    audit_stack,
    count,
    entry,
)
from worker import problems
from worker.graph.schema import Label
from worker.runtime import redis_server
from worker.runtime.processes import wait_until

pytestmark = [pytest.mark.timeout(420), pytest.mark.reliability]
JOBS = 1000
POISON = 20
RUNS = f"MATCH (r:{Label.QUERY_RUN}) RETURN count(r) AS n"
LEASE = 10  # seconds: a crashed subscriber's messages come back after this (pubsub_source)
VISIBILITY = 15  # seconds: a crashed worker's tasks come back after this


def messages() -> list[bytes]:
    """Every job twice, and some poison, in a shuffled (seeded) order."""
    jobs = [json.dumps(entry("v2_jobChange_done.json", job=f"load-{index}")).encode() for index in range(JOBS)]
    poison = [f'{{"not a log entry": {index}'.encode() for index in range(POISON)]
    batch = jobs + jobs + poison
    random.Random(7).shuffle(batch)
    return batch


def test_duplicates_and_redeliveries_under_load_count_exactly_once(
    neo4j_service: Neo4jService,
    driver: Driver,
    redis_service: redis_server.LocalRedis,
    pubsub_host: str,
    bigquery_endpoint: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with audit_stack(
        neo4j_service,
        driver,
        redis_service,
        pubsub_host,
        bigquery_endpoint,
        tmp_path,
        monkeypatch,
        LAKEGRAPH_WORKER__VISIBILITY_TIMEOUT=str(VISIBILITY),
    ) as stack:
        stack: AuditStack
        batch = messages()
        began = time.monotonic()
        futures = []
        for index, data in enumerate(batch):
            futures.append(stack.publish_async(data))
            if index == len(batch) // 3:
                crash(stack.subscribe)  # messages it holds unacknowledged are redelivered
                stack.start_subscriber()
            if index == 2 * len(batch) // 3:
                crash(stack.worker)  # tasks it took are redelivered by the broker
                stack.start_worker()
            if index % 100 == 0:
                time.sleep(0.2)  # a stream, not one burst: the kills land mid-flow
        for future in futures:
            future.result(timeout=60)
        published = time.monotonic() - began
        broker = redis_server.client(redis_service.url, 5)
        wait_until(
            lambda: count(driver, RUNS) == JOBS,
            240,
            f"{JOBS} query runs",
            why_dead=lambda: f" ({count(driver, RUNS)} runs; tasks queued {broker.llen('celery')}, taken {broker.zcard('unacked_index')})",
        )
        settled = time.monotonic() - began
        time.sleep(max(LEASE, VISIBILITY) + 5)  # late redeliveries land, and must add nothing
        runs, executions = count(driver, RUNS), count(driver, EXECUTIONS)
        recorded = problems.listing(driver, "neo4j")
    poison = [problem for problem in recorded if problem.source == "pubsub"]
    failed = [problem for problem in recorded if problem.kind == "failed"]
    print(
        f"\n{len(batch)} messages ({JOBS} jobs each published twice, {POISON} poison) in {published:.1f} s, subscriber and "
        f"worker SIGKILLed mid-stream: {runs} runs, {executions} join executions, {len(poison)} poison recorded, "
        f"{len(failed)} parked failures; all counted {settled:.1f} s after the first message"
    )
    assert (runs, executions, len(poison), len(failed)) == (JOBS, JOBS, POISON, 0)
