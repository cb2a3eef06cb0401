"""Graph upkeep tasks."""

from __future__ import annotations

from dataclasses import asdict

from worker.celery_app import app
from worker.graph import schema
from worker.tasks import context
from worker.tasks.base import LakegraphTask


@app.task(name="lakegraph.apply_schema", base=LakegraphTask)
def apply_schema() -> dict[str, list[str]]:
    """Create any missing constraint or index; idempotent, so every start of the stack runs it."""
    driver, where = context.graph()
    return asdict(schema.apply(driver, where.database))
