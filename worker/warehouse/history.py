"""Which poller reads the configured warehouse's query history, if it has one to poll."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from neo4j import Driver

from worker.settings import Settings
from worker.warehouse.jobs_poller import JobsPoller
from worker.warehouse.query_graph import QueryGraph
from worker.warehouse.statements_poller import StatementsPoller


def history_poller(
    settings: Settings, driver: Driver, database: str, queries: QueryGraph, on_table: Callable[[str, str], object] | None = None
) -> JobsPoller | StatementsPoller | None:
    """BigQuery's INFORMATION_SCHEMA.JOBS_BY_PROJECT, PostgreSQL's pg_stat_statements, MySQL's
    statement digests; DuckDB keeps no history. `on_table(schema, table)`: what a server's DDL
    statement changed is read again (BigQuery's table events come from its audit log)."""
    conf = settings.warehouse
    url = conf.url.get_secret_value()
    if on_table is not None and conf.schemas:  # a configured selection: a table outside it stays out
        wanted, read_again = set(conf.schemas), on_table
        on_table = lambda schema, table: read_again(schema, table) if schema in wanted else None
    if conf.engine == "postgres":
        from worker.shared.postgres_client import DEFAULT_SCHEMA, database_name
        from worker.warehouse import postgres

        read = partial(postgres.read_statements, url)
        return StatementsPoller("postgres", database_name(url), read, driver, database, queries, DEFAULT_SCHEMA, on_table)
    if conf.engine == "mysql":
        from worker.shared import mysql_client
        from worker.warehouse import mysql

        read = partial(mysql.read_statements, url)
        return StatementsPoller("mysql", mysql_client.database_name(url), read, driver, database, queries, None, on_table)  # a digest names its database
    if conf.engine == "bigquery":
        from worker.shared.google_clients import bigquery_client

        return JobsPoller(bigquery_client(settings), conf.bigquery_project, conf.bigquery_location, driver, database, queries)
    return None
