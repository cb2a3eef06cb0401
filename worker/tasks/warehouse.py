"""Warehouse metadata tasks, level-triggered: re-read a table or a schema and make the graph match."""

from __future__ import annotations

from dataclasses import asdict

from worker.celery_app import app
from worker.tasks import context
from worker.tasks.base import LakegraphTask


class WarehouseTask(LakegraphTask):
    problem_source = "warehouse"


@app.task(name="lakegraph.sync_table", base=WarehouseTask)
def sync_table(schema: str, table: str) -> dict:
    """A table was created, changed or deleted: re-read just that table."""
    return asdict(context.warehouse().sync_table(schema, table))


@app.task(name="lakegraph.sync_warehouse", base=WarehouseTask)
def sync_warehouse() -> dict:
    """Drift reconcile: every configured schema re-read, so a missed event is repaired."""
    return context.warehouse().sync_all()
