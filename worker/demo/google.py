"""`lakegraph demo --google`: the demo on Google's services, emulated on this machine — the
warehouse in the BigQuery emulator, its audit logs through the Pub/Sub emulator, the library in
a Cloud Storage bucket (fake-gcs-server) whose object notifications reach Pub/Sub too. lakegraph
reads all of it through Google's own clients, exactly as it would a real project."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

from google.cloud import pubsub_v1, storage

from worker.bridge.refresh import BridgeRefresh
from worker.demo.bigquery_copy import copy_warehouse
from worker.demo.library import LIBRARY
from worker.demo.query_log import PROJECT
from worker.graph.connection import connect
from worker.pubsub_stream import create_topic_with_subscription
from worker.runtime import bigquery_emulator, fake_gcs, pubsub_emulator
from worker.runtime.processes import wait_until
from worker.runtime.services import ServiceProcess
from worker.settings import Settings
from worker.shared.google_clients import bigquery_client, pubsub_environment, storage_client
from worker.warehouse.audit_log import QueryEvent, parse_bytes
from worker.warehouse.query_graph import SEEN_RUNS

CONFIG = "lakegraph-google.toml"
STATE = "state-google"
BUCKET = f"{PROJECT}-library"
LIBRARY_PREFIX = "library"
AUDIT_TOPIC, AUDIT_SUBSCRIPTION = "bigquery-audit", "lakegraph-audit"
OBJECTS_TOPIC, OBJECTS_SUBSCRIPTION = "library-objects", "lakegraph-library-objects"
PUBLISH_TIMEOUT, ABSORB_TIMEOUT = 60.0, 300.0  # seconds


@dataclass(frozen=True)
class Emulators:
    """Where each emulated service answers (ports are picked at each start)."""

    pubsub_host: str
    bigquery_endpoint: str
    storage_endpoint: str


def _stop_if_started(future: Future[tuple[ServiceProcess, str]]) -> None:
    if future.exception() is None:
        future.result()[0].stop()


@contextmanager
def emulators(workdir: Path, cache: Path) -> Iterator[Emulators]:
    """Start the three emulators (the BigQuery one and fake-gcs-server are installed into the
    cache on first use); stop them, whatever happens, on leaving."""
    with ExitStack() as stack, ThreadPoolExecutor(max_workers=2) as pool:
        # The two slow starts (a JVM, a Python with DuckDB) overlap; each is stopped even if the other failed.
        starting = [pool.submit(pubsub_emulator.start, workdir), pool.submit(bigquery_emulator.start, workdir, cache, PROJECT)]
        for future in starting:
            stack.callback(_stop_if_started, future)
        (_, pubsub_host), (_, bigquery_endpoint) = (future.result() for future in starting)
        objects, storage_endpoint = fake_gcs.start(workdir, cache, pubsub_host)
        stack.callback(objects.stop)
        yield Emulators(pubsub_host, bigquery_endpoint, storage_endpoint)


def config_text(folder: Path, found: Emulators) -> str:
    return f'''# lakegraph settings for the demo on Google's emulators, written by `lakegraph demo --google`
# at each start (the emulators' ports change). Point the same keys at a real project to go live.
state_dir = "{folder / STATE}"

[warehouse]
engine = "bigquery"
bigquery_project = "{PROJECT}"
bigquery_datasets = ["service"]
bigquery_endpoint = "{found.bigquery_endpoint}"
glossary_path = "{folder / "glossary.toml"}"
sql_dialect = "bigquery"

[pubsub]
project = "{PROJECT}"
subscription = "{AUDIT_SUBSCRIPTION}"
emulator_host = "{found.pubsub_host}"

[storage]
project = "{PROJECT}"
endpoint = "{found.storage_endpoint}"
subscription = "{OBJECTS_SUBSCRIPTION}"

[documents]
libraries = [{{ name = "{LIBRARY}", root = "gs://{BUCKET}/{LIBRARY_PREFIX}" }}]
'''


def upload_library(bucket: storage.Bucket, folder: Path) -> int:
    files = sorted(path for path in folder.rglob("*") if path.is_file())
    for path in files:
        bucket.blob(f"{LIBRARY_PREFIX}/{path.relative_to(folder).as_posix()}").upload_from_filename(str(path))
    return len(files)


@dataclass(frozen=True)
class Provisioned:
    library_objects: int
    warehouse_rows: int


def provision(settings: Settings, folder: Path) -> Provisioned:
    """What a team's project would already hold: the two topics with their subscriptions, the
    bucket with its notification config (as `gcloud storage buckets notifications create` makes
    it) and the library in it, and the warehouse in BigQuery."""
    with pubsub_environment(settings):  # the emulators start empty at each start: nothing exists yet
        publisher = pubsub_v1.PublisherClient()
        create_topic_with_subscription(publisher, PROJECT, AUDIT_TOPIC, AUDIT_SUBSCRIPTION)
        create_topic_with_subscription(publisher, PROJECT, OBJECTS_TOPIC, OBJECTS_SUBSCRIPTION)
    created = storage_client(settings.storage.project, settings.storage.endpoint).create_bucket(BUCKET)
    uploaded = upload_library(created, folder / "library")  # before notifications, as in a bucket that already held it
    created.notification(topic_name=OBJECTS_TOPIC, topic_project=PROJECT, payload_format="JSON_API_V1").create()
    rows = copy_warehouse(folder / "warehouse.duckdb", bigquery_client(settings))
    return Provisioned(uploaded, sum(rows.values()))


def publish_query_log(settings: Settings, folder: Path) -> list[str]:
    """The dataset's audit-log entries, published as a Logging sink would publish them; their job ids."""
    entries = [line.encode() for path in sorted((folder / "audit-logs").glob("*.ndjson")) for line in path.read_text().splitlines() if line.strip()]
    with pubsub_environment(settings):
        publisher = pubsub_v1.PublisherClient()
        topic = publisher.topic_path(PROJECT, AUDIT_TOPIC)
        for future in [publisher.publish(topic, data) for data in entries]:
            future.result(timeout=PUBLISH_TIMEOUT)
    return [event.job_id for event in map(parse_bytes, entries) if isinstance(event, QueryEvent)]


def bucket(settings: Settings) -> storage.Bucket:
    return storage_client(settings.storage.project, settings.storage.endpoint).bucket(BUCKET)


def absorb_query_log(settings: Settings, folder: Path) -> int:
    """Publish the dataset's audit log and wait until every job is counted in the graph — after the
    warehouse load, so each query's tables and columns are there to learn joins from."""
    jobs = publish_query_log(settings, folder)
    driver, where = connect(settings)
    with driver:
        wait_until(
            lambda: len(driver.execute_query(SEEN_RUNS, ids=jobs, database_=where.database).records) == len(jobs),
            ABSORB_TIMEOUT,
            f"the {len(jobs)} published audit-log entries to be counted",
        )
        BridgeRefresh(settings, driver, where.database).refresh()  # as `load warehouse` does after its query logs
    return len(jobs)
