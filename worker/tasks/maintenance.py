"""Graph upkeep tasks."""

from __future__ import annotations

from dataclasses import asdict

from worker import problems, task_names
from worker.celery_app import app
from worker.graph.setup import apply_schema as apply_configured_schema
from worker.tasks import context
from worker.tasks.base import LakegraphTask


@app.task(name=task_names.APPLY_SCHEMA, base=LakegraphTask)
def apply_schema() -> dict[str, list[str]]:
    """Create any missing constraint or index; idempotent, so every start of the stack runs it."""
    driver, where = context.graph()
    return asdict(apply_configured_schema(context.settings(), driver, where.database))


@app.task(name=task_names.SETTLE_HELD_PROBLEMS, base=LakegraphTask)
def settle_held_problems() -> int:
    """Problems held in Redis while the graph was down, moved into the graph (beat, every minute)."""
    driver, where = context.graph()
    return problems.settle_held(context.broker(), driver, where.database)
