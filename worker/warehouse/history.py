"""Which poller reads the configured warehouse's query history, if it has one to poll."""

from __future__ import annotations

from functools import partial

from neo4j import Driver

from worker.settings import Settings
from worker.warehouse.jobs_poller import JobsPoller
from worker.warehouse.query_graph import QueryGraph
from worker.warehouse.statements_poller import StatementsPoller


def history_poller(settings: Settings, driver: Driver, database: str, queries: QueryGraph) -> JobsPoller | StatementsPoller | None:
    """BigQuery's INFORMATION_SCHEMA.JOBS_BY_PROJECT, PostgreSQL's pg_stat_statements, MySQL's
    statement digests; DuckDB keeps no history."""
    conf = settings.warehouse
    url = conf.url.get_secret_value()
    if conf.engine == "postgres":
        from worker.shared.postgres_client import database_name
        from worker.warehouse import postgres

        return StatementsPoller("postgres", database_name(url), partial(postgres.read_statements, url), driver, database, queries)
    if conf.engine == "mysql":
        from worker.shared import mysql_client
        from worker.warehouse import mysql

        return StatementsPoller("mysql", mysql_client.database_name(url), partial(mysql.read_statements, url), driver, database, queries)
    if conf.engine == "bigquery":
        from worker.shared.google_clients import bigquery_client

        return JobsPoller(bigquery_client(settings), conf.bigquery_project, conf.bigquery_location, driver, database, queries)
    return None
