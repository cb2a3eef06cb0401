"""`lakegraph doctor`: each engine up, down or off, with its version or the reason."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, cast

import duckdb
from neo4j import Driver
from neo4j.exceptions import ClientError

from worker.exceptions import LakegraphError
from worker.graph import batches
from worker.graph.connection import connect
from worker.runtime import memory, redis_server
from worker.runtime.neo4j_server import Neo4jHome
from worker.runtime.redis_server import broker_url
from worker.settings import Settings
from worker.shared.duckdb_read import open_read_only
from worker.shared.google_clients import bigquery_client

PROBE_TIMEOUT = 5.0
POSTGRES_PROBE = """
SELECT current_setting('server_version'), current_database(),
       (SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE c.relkind IN ('r', 'p', 'f', 'v', 'm') AND n.nspname NOT IN ('information_schema', 'pg_catalog', 'pg_toast')),
       CASE WHEN to_regclass('pg_stat_statements') IS NULL THEN false ELSE has_table_privilege(to_regclass('pg_stat_statements'), 'SELECT') END
"""
MYSQL_PROBE = """
SELECT VERSION(), DATABASE(),
       (SELECT count(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA NOT IN ('information_schema', 'mysql', 'performance_schema', 'sys')),
       @@performance_schema,
       (SELECT ENABLED FROM performance_schema.setup_consumers WHERE NAME = 'statements_digest'),
       @@performance_schema_max_digest_length
"""
STORAGE_COUNT_CAP = 10_000

NEO4J_COMPONENTS = "CALL dbms.components() YIELD name, versions, edition RETURN name, versions[0] AS version, edition"
GDS_VERSION = "RETURN gds.version() AS version"
PAGECACHE_SETTING = "SHOW SETTINGS YIELD name, value WHERE name = 'server.memory.pagecache.size' RETURN value"
HEAP = "CALL dbms.queryJmx('java.lang:type=Memory') YIELD attributes RETURN attributes.HeapMemoryUsage.value.properties.max AS max"


@dataclass(frozen=True)
class EngineStatus:
    engine: str
    state: Literal["up", "down", "off"]
    detail: str


def check(settings: Settings) -> list[EngineStatus]:
    return [
        *_probe("neo4j", lambda: _neo4j(settings)),
        *_probe("redis", lambda: _redis(settings)),
        *_probe("workers", lambda: _workers(settings)),
        *_probe("warehouse", lambda: _warehouse(settings)),
        *_probe("pubsub", lambda: _pubsub(settings)),
        *_probe("storage", lambda: _storage(settings)),
        *_probe("glossary", lambda: _knowledge_catalog(settings)),
    ]


def _probe(engine: str, probe: Callable[[], list[EngineStatus]]) -> list[EngineStatus]:
    try:
        return probe()
    except LakegraphError as err:
        return [EngineStatus(engine, "down", str(err))]
    except Exception as err:  # an engine's own error type: report it, never crash the report
        return [EngineStatus(engine, "down", f"{type(err).__name__}: {str(err).splitlines()[0][:200] if str(err) else ''}")]


def _neo4j(settings: Settings) -> list[EngineStatus]:
    driver, where = connect(settings)
    with driver:
        kernel = driver.execute_query(NEO4J_COMPONENTS, database_=where.database).records[0]
        origin = "local runtime" if where.local else "configured"
        detail = f"{kernel['version']} {kernel['edition']} at {where.uri} ({origin})"
        heap = _heap(driver, where.database)
        limit = batches.transaction_limit(driver, where.database)
        detail += f"; heap {memory.size_text(heap)}" if heap else ""
        detail += f", transaction memory {memory.size_text(limit)}"
        warnings = [batches.small_limit(limit)]
        if where.local:  # its store is on this disk: compare it with the memory it runs with
            pagecache = driver.execute_query(PAGECACHE_SETTING, database_=where.database).records[0]["value"]
            store = memory.store_bytes(Neo4jHome.of(settings).data_dir)
            detail += f"; store {store / 2**20:,.0f} MB, page cache {pagecache}"
            warnings += [memory.outgrown(store, pagecache), memory.small_heap(heap, store) if heap else None]
        detail += "".join(f"; {warning}" for warning in warnings if warning)
        statuses = [EngineStatus("neo4j", "up", detail)]
        try:
            gds = driver.execute_query(GDS_VERSION, database_=where.database).records[0]["version"]
            statuses.append(EngineStatus("gds", "up", f"Graph Data Science {gds}"))
        except ClientError as err:
            statuses.append(EngineStatus("gds", "down", f"GDS plugin not available ({err.code})"))
    return statuses


def _heap(driver: Driver, database: str) -> int | None:
    """The server's maximum heap, where it shows it (JMX is not open on every managed service)."""
    try:
        return driver.execute_query(HEAP, database_=database).records[0]["max"]
    except ClientError:
        return None


def _redis(settings: Settings) -> list[EngineStatus]:
    url = broker_url(settings)
    client = redis_server.client(url, PROBE_TIMEOUT)
    try:
        version = cast(dict, client.info("server"))["redis_version"]
    finally:
        client.close()
    origin = "configured" if settings.redis.url.get_secret_value() else "embedded"
    return [EngineStatus("redis", "up", f"{version} ({origin})")]


def _workers(settings: Settings) -> list[EngineStatus]:
    from worker.celery_app import (
        create_app,  # Celery is slow to import; only needed here
    )

    replies = create_app(settings).control.ping(timeout=1.0)
    if not replies:
        return [EngineStatus("workers", "down", "no Celery worker answered; is `lakegraph up` running?")]
    names = sorted(name for reply in replies for name in reply)
    return [EngineStatus("workers", "up", f"{len(names)} Celery worker(s): {', '.join(names)}")]


def _warehouse(settings: Settings) -> list[EngineStatus]:
    conf = settings.warehouse
    if conf.engine == "duckdb":
        path = settings.duckdb_file
        if not path.exists():
            return [EngineStatus("warehouse", "up", f"DuckDB {duckdb.__version__}; {path} not created yet")]
        with open_read_only(path) as con:
            (tables,) = con.execute("SELECT count(*) FROM information_schema.tables").fetchone() or (0,)
        return [EngineStatus("warehouse", "up", f"DuckDB {duckdb.__version__}, {path}: {tables} tables")]
    if conf.engine == "postgres":
        return [_postgres(conf.url.get_secret_value())]
    if conf.engine == "mysql":
        return [_mysql(conf.url.get_secret_value())]
    client = bigquery_client(settings)
    datasets = list(client.list_datasets(max_results=100, timeout=PROBE_TIMEOUT))
    where = conf.bigquery_endpoint or "BigQuery"
    return [EngineStatus("warehouse", "up", f"{where}, project {client.project}: {len(datasets)} datasets")]


def _postgres(url: str) -> EngineStatus:
    """The server, how many tables it shows, and whether its query log (pg_stat_statements) can be read."""
    from worker.shared.postgres_client import MARKER, connect

    with connect(url) as con:
        version, database, tables, statements = con.execute(MARKER + POSTGRES_PROBE).fetchone() or ("", "", 0, False)
    log = "pg_stat_statements readable" if statements else "no pg_stat_statements: no query log (CREATE EXTENSION pg_stat_statements)"
    return EngineStatus("warehouse", "up", f"PostgreSQL {version}, database {database}: {tables} tables; {log}")


def _mysql(url: str) -> EngineStatus:
    """The server, how many tables it shows, and whether its query log (statement digests) is kept."""
    from worker.shared.mysql_client import connect

    with connect(url) as con, con.cursor() as cursor:
        cursor.execute(MYSQL_PROBE)
        version, database, tables, schema_on, digests, cut = cursor.fetchone() or ("", "", 0, "OFF", "NO", 0)
    kept = str(schema_on).upper() in ("ON", "1") and digests == "YES"
    log = f"statement digests kept, cut at {cut:,} bytes" if kept else "no statement digests: no query log (performance_schema = ON, a restart)"
    return EngineStatus("warehouse", "up", f"MySQL {version}, database {database}: {tables} tables; {log}")


def _pubsub(settings: Settings) -> list[EngineStatus]:
    if not settings.pubsub.subscription:
        return [EngineStatus("pubsub", "off", "no subscription configured (pubsub.subscription)")]
    return [_subscription(settings, "pubsub", settings.pubsub.subscription)]


def _storage(settings: Settings) -> list[EngineStatus]:
    """Each bucket library (it exists, and how many objects lie below its prefix, counted to
    STORAGE_COUNT_CAP), and the subscription its notifications arrive on."""
    from worker.documents.bucket import BucketLibrary
    from worker.documents.libraries import libraries

    buckets = [library for library in libraries(settings) if isinstance(library, BucketLibrary)]
    if not buckets:
        return [EngineStatus("storage", "off", "no library in a bucket (documents.libraries root gs://...)")]
    from worker.shared.google_clients import storage_client

    client = storage_client(settings.storage.project, settings.storage.endpoint)
    where = settings.storage.endpoint or "Cloud Storage"
    statuses = []
    for library in buckets:
        if client.lookup_bucket(library.bucket, timeout=PROBE_TIMEOUT) is None:
            statuses.append(EngineStatus("storage", "down", f"{where}: bucket {library.bucket} of library {library.name} not found"))
            continue
        count = sum(1 for _ in client.list_blobs(library.bucket, prefix=library.base, max_results=STORAGE_COUNT_CAP, timeout=PROBE_TIMEOUT))
        shown = f"{count}+" if count == STORAGE_COUNT_CAP else str(count)
        statuses.append(EngineStatus("storage", "up", f"{where}: {library.location} (library {library.name}): {shown} object{'' if count == 1 else 's'}"))
    if settings.storage.subscription:
        statuses.append(_subscription(settings, "storage", settings.storage.subscription))
    else:
        statuses.append(EngineStatus("storage", "off", "no notification subscription (storage.subscription): buckets are kept by the reconcile alone"))
    return statuses


def _knowledge_catalog(settings: Settings) -> list[EngineStatus]:
    conf = settings.knowledge_catalog
    if not conf.project:
        return [EngineStatus("glossary", "off", "no Knowledge Catalog glossary (knowledge_catalog.project)")]
    from worker.warehouse.knowledge_catalog import KnowledgeCatalog  # the Dataplex client, only when configured

    catalog = KnowledgeCatalog(settings)
    names = catalog.glossary_names()
    where = conf.endpoint or "Knowledge Catalog"
    return [EngineStatus("glossary", "up", f"{where}: {len(names)} glossaries in {catalog.parent}")]


def _subscription(settings: Settings, engine: str, name: str) -> EngineStatus:
    from google.cloud import (
        pubsub_v1,  # imported here: slow, and only needed when configured
    )

    from worker.shared.google_clients import pubsub_environment

    with pubsub_environment(settings):
        subscriber = pubsub_v1.SubscriberClient()
        path = subscriber.subscription_path(settings.pubsub.project, name)
        try:
            found = subscriber.get_subscription(subscription=path, timeout=PROBE_TIMEOUT)
        finally:
            subscriber.close()
    where = settings.pubsub.emulator_host or "Pub/Sub"
    return EngineStatus(engine, "up", f"{where}: {path} on topic {found.topic}")
