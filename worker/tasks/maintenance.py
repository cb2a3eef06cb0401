"""Graph upkeep tasks."""

from __future__ import annotations

from dataclasses import asdict

from worker.celery_app import app
from worker.graph.setup import apply_schema as apply_configured_schema
from worker.tasks import context
from worker.tasks.base import LakegraphTask


@app.task(name="lakegraph.apply_schema", base=LakegraphTask)
def apply_schema() -> dict[str, list[str]]:
    """Create any missing constraint or index; idempotent, so every start of the stack runs it."""
    driver, where = context.graph()
    return asdict(apply_configured_schema(context.settings(), driver, where.database))
