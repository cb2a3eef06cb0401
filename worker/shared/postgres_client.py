"""PostgreSQL connections, for the write side's catalogue reads and query-log polls and the read
side's run_sql alike. Every statement lakegraph sends starts with MARKER, so the query-log poller
(worker/warehouse/statements_poller.py) never learns from lakegraph's own reads."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from worker.exceptions import EngineUnavailable, LakegraphError

if TYPE_CHECKING:
    import psycopg

MARKER = "/* lakegraph */ "
DEFAULT_SCHEMA = "public"  # where an unqualified table is, on PostgreSQL's default search_path
CONNECT_TIMEOUT = 10  # seconds


def database_name(url: str) -> str:
    """The database a connection URL names: the first part of every table id it holds."""
    import psycopg
    from psycopg.conninfo import conninfo_to_dict

    try:
        name = conninfo_to_dict(url).get("dbname")
    except psycopg.ProgrammingError as err:
        raise LakegraphError(f"warehouse.url does not parse: {err}") from None
    if not name:
        raise LakegraphError("warehouse.url names no database: postgresql://user@host:5432/<database>")
    return str(name)


def connect(url: str, **options: Any) -> psycopg.Connection:
    """A connection in autocommit, or EngineUnavailable naming why there is none."""
    import psycopg

    try:
        return psycopg.connect(url, autocommit=True, connect_timeout=CONNECT_TIMEOUT, **options)
    except psycopg.OperationalError as err:
        raise EngineUnavailable(f"PostgreSQL unreachable: {str(err).strip().splitlines()[-1][:200]}") from None
