"""Which poller reads the configured warehouse's query history, if it has one to poll."""

from __future__ import annotations

from neo4j import Driver

from worker.settings import Settings
from worker.warehouse.jobs_poller import JobsPoller
from worker.warehouse.query_graph import QueryGraph
from worker.warehouse.statements_poller import StatementsPoller


def history_poller(settings: Settings, driver: Driver, database: str, queries: QueryGraph) -> JobsPoller | StatementsPoller | None:
    """BigQuery's INFORMATION_SCHEMA.JOBS_BY_PROJECT or PostgreSQL's pg_stat_statements; DuckDB keeps no history."""
    conf = settings.warehouse
    if conf.engine == "postgres":
        return StatementsPoller(conf.postgres_url.get_secret_value(), driver, database, queries)
    if conf.engine == "bigquery":
        from worker.shared.google_clients import bigquery_client

        return JobsPoller(bigquery_client(settings), conf.bigquery_project, conf.bigquery_location, driver, database, queries)
    return None
