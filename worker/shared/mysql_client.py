"""MySQL and MariaDB connections (PyMySQL), for the write side's catalogue reads and query-log
polls and the read side's run_sql alike. The URL is mysql://user:password@host:3306/database
(mariadb:// too); its database is where lakegraph's own unqualified names are read."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit

from worker.exceptions import EngineUnavailable, LakegraphError

if TYPE_CHECKING:
    import pymysql

CONNECT_TIMEOUT = 10  # seconds
DEFAULT_PORT = 3306


@dataclass(frozen=True)
class Server:
    host: str
    port: int
    user: str
    password: str
    database: str


def server(url: str) -> Server:
    """The server, account and database a URL names."""
    try:
        parts = urlsplit(url)
        port = parts.port or DEFAULT_PORT
    except ValueError as err:
        raise LakegraphError(f"warehouse.url does not parse: {err}") from None
    database = unquote(parts.path.lstrip("/"))
    if not database or "/" in database:
        raise LakegraphError("warehouse.url names no database: mysql://user@host:3306/<database>")
    return Server(parts.hostname or "localhost", port, unquote(parts.username or ""), unquote(parts.password or ""), database)


def database_name(url: str) -> str:
    """The database a connection URL names: the first part of every table id it holds."""
    return server(url).database


def connect(url: str, **options: Any) -> pymysql.connections.Connection:
    """A connection in autocommit to the URL's database, or EngineUnavailable naming why there is none."""
    import pymysql

    where = server(url)
    try:
        return pymysql.connect(
            host=where.host,
            port=where.port,
            user=where.user,
            password=where.password,
            database=where.database,
            autocommit=True,
            connect_timeout=CONNECT_TIMEOUT,
            charset="utf8mb4",
            **options,
        )
    except pymysql.err.OperationalError as err:
        raise EngineUnavailable(f"MySQL unreachable: {err.args[-1] if err.args else err}") from None
