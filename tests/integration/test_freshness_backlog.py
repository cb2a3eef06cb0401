"""The backlog in every answer's freshness: tasks waiting in a real Redis, counted per source from
the messages Celery itself wrote; unknown (never an error) when no broker answers."""

from __future__ import annotations

from pathlib import Path

import pytest

from shapes.freshness import FreshnessProbe
from tests.conftest import runtime_settings
from worker import task_names as names
from worker.celery_app import create_app
from worker.runtime import redis_server

pytestmark = pytest.mark.redis


def test_queued_tasks_are_counted_per_source(tmp_path: Path) -> None:
    settings = runtime_settings(tmp_path, redis={"url": ""})
    redis_server.start(settings)  # its own Redis: no worker here takes the tasks
    try:
        app = create_app(settings)
        for name, args in [
            (names.SYNC_DOCUMENT, ["lib", "a.md"]),
            (names.SYNC_DOCUMENT, ["lib", "b.md"]),
            (names.SYNC_TABLE, ["p.d.t"]),
            (names.POLL_JOBS, []),
        ]:
            app.send_task(name, args=args)
        assert FreshnessProbe(None, "neo4j", settings).backlog() == {"documents": 2, "warehouse": 1, "query-log": 1}  # type: ignore[arg-type]
    finally:
        redis_server.stop(settings)
    assert FreshnessProbe(None, "neo4j", settings).backlog() is None, "no broker running: the backlog is unknown"  # type: ignore[arg-type]


def test_an_unreachable_configured_broker_leaves_the_backlog_unknown(tmp_path: Path) -> None:
    settings = runtime_settings(tmp_path, redis={"url": "redis://127.0.0.1:1/0"})
    assert FreshnessProbe(None, "neo4j", settings).backlog() is None  # type: ignore[arg-type]
