"""Warehouse tasks, level-triggered or deduplicated by job id, so retries and replays are harmless."""

from __future__ import annotations

from dataclasses import asdict

from worker import task_names
from worker.celery_app import app
from worker.paths import contained
from worker.tasks import context
from worker.tasks.base import LakegraphTask
from worker.warehouse import audit_files
from worker.warehouse.events import query_event
from worker.warehouse.history import history_poller
from worker.warehouse.sync import SOURCE


class WarehouseTask(LakegraphTask):
    problem_source = SOURCE


@app.task(name=task_names.SYNC_TABLE, base=WarehouseTask)
def sync_table(schema: str, table: str) -> dict:
    """A table was created, changed or deleted: re-read just that table, then its bridged values."""
    return asdict(context.warehouse().sync_table(schema, table))


@app.task(name=task_names.REFRESH_BRIDGE, base=WarehouseTask)
def refresh_bridge(schema: str | None = None, table: str | None = None) -> dict:
    """The values of identifier columns (every one, or one table's) and the mentions of new ones."""
    return asdict(context.bridge().refresh(schema, table))


@app.task(name=task_names.SYNC_WAREHOUSE, base=WarehouseTask)
def sync_warehouse() -> dict:
    """Drift reconcile: every configured schema re-read, so a missed event is repaired."""
    return context.warehouse().sync_all()


@app.task(name=task_names.SYNC_GLOSSARY, base=WarehouseTask)
def sync_glossary() -> dict | None:
    """The glossary file changed: BusinessTerms and TAGGED_WITH follow it, removals included."""
    report = context.warehouse().sync_glossary()
    return None if report is None else asdict(report)


@app.task(name=task_names.SYNC_CATALOG_GLOSSARY, base=WarehouseTask)
def sync_catalog_glossary() -> dict | None:
    """Knowledge Catalog's glossaries, periodically: additions, edits and removals of terms and links."""
    return context.warehouse().sync_catalog_glossary()


@app.task(name=task_names.ABSORB_QUERIES, base=WarehouseTask)
def absorb_queries(events: list[dict]) -> dict:
    """Finished query jobs into Query, USES and JOINS_WITH (each job id counts once)."""
    return asdict(context.query_graph().absorb([query_event(event) for event in events]))


@app.task(name=task_names.POLL_JOBS, base=WarehouseTask)
def poll_jobs() -> dict | None:
    """The warehouse's query history since the watermark: BigQuery's jobs (without a sink),
    PostgreSQL's pg_stat_statements, MySQL's statement digests (whose DDL statements also have
    the tables they change read again)."""
    driver, where = context.graph()
    poller = history_poller(context.settings(), driver, where.database, context.query_graph(), on_table=context.warehouse().sync_table)
    return None if poller is None else asdict(poller.poll())


@app.task(name=task_names.INGEST_AUDIT_FILE, base=WarehouseTask)
def ingest_audit_file(path: str) -> dict:
    """An exported audit-log file: its query jobs absorbed, its table events refreshed, bad entries
    recorded. Only a file inside the audit-log folder is read, whoever sent the message."""
    inside = contained(context.settings().audit_log_path, path)
    return audit_files.ingest(inside, context.query_graph(), context.warehouse())
