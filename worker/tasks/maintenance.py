"""Graph upkeep tasks."""

from __future__ import annotations

from dataclasses import asdict

from worker.celery_app import app
from worker.graph import schema
from worker.tasks import context


@app.task(
    name="lakegraph.apply_schema",
    autoretry_for=context.TRANSIENT_ERRORS,
    retry_backoff=True,
    retry_jitter=True,
    max_retries=8,
)
def apply_schema() -> dict[str, list[str]]:
    """Create any missing constraint or index; idempotent, so every start of the stack runs it."""
    driver, where = context.graph()
    return asdict(schema.apply(driver, where.database))
