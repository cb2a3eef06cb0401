"""Document libraries in Cloud Storage (fake-gcs-server, the real google-cloud-storage client):
the same files give the same graph from a bucket as from a folder; reloads read only what changed;
and object notifications through the Pub/Sub emulator, `lakegraph subscribe` and a Celery worker
keep the graph equal to a fresh load of the bucket — through uploads, overwrites, deletes, moves,
redelivered and reordered notifications, poison, and a subscriber killed mid-stream."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from google.api_core.client_options import ClientOptions
from google.auth.credentials import AnonymousCredentials
from google.cloud import pubsub_v1, storage
from neo4j import Driver

from tests.conftest import Neo4jService
from tests.corpora import OFFICE_SAMPLES, PDF_SAMPLES
from tests.graph_dump import differences_from_files, dump, wipe
from tests.helpers import LAKEGRAPH, clean_env, crash, pubsub_topic, run_cli, start_worker
from worker import problems
from worker.documents.loader import load
from worker.documents.source import file_hash
from worker.documents.sync import DocumentSync
from worker.graph import schema
from worker.runtime import redis_server
from worker.runtime.processes import wait_until
from worker.settings import Settings

pytestmark = [pytest.mark.corpus, pytest.mark.timeout(420)]
PROJECT = "bucket-proj"
LOCATION_PROPERTIES = {"source_path", "file_stamp"}  # where a file lives: a folder path or a gs:// name
STORED = "MATCH (d:Document) RETURN collect([d.uri, d.content_hash]) AS rows"


def client(endpoint: str) -> storage.Client:
    return storage.Client(project=PROJECT, credentials=AnonymousCredentials(), client_options=ClientOptions(api_endpoint=endpoint))


def real_library(powershell_docs: Path, into: Path) -> Path:
    """About 200 real pages (the conceptual docs but the developer guide), 27 real PDFs and 58 real
    Office and AsciiDoc files, in a folder."""
    source = powershell_docs / "docs-conceptual"
    for page in sorted(source.rglob("*.md")):
        relpath = page.relative_to(source)
        if relpath.parts[0] != "developer":
            (into / "conceptual" / relpath).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(page, into / "conceptual" / relpath)
    for pdf in sorted(PDF_SAMPLES.rglob("*.pdf")):
        (into / "pdf").mkdir(parents=True, exist_ok=True)
        shutil.copyfile(pdf, into / "pdf" / pdf.name)
    shutil.copytree(OFFICE_SAMPLES, into / "office")
    return into


def upload_folder(bucket: storage.Bucket, folder: Path, prefix: str) -> int:
    files = sorted(path for path in folder.rglob("*") if path.is_file())
    for path in files:
        bucket.blob(f"{prefix}/{path.relative_to(folder).as_posix()}").upload_from_filename(str(path))
    return len(files)


def without_location(graph: tuple[list, list]) -> tuple[list, list]:
    nodes, edges = graph
    return (
        sorted((labels, tuple(item for item in props if item[0] not in LOCATION_PROPERTIES)) for labels, props in nodes),
        sorted((kind, start, end, tuple(item for item in props if item[0] not in LOCATION_PROPERTIES)) for kind, start, end, props in edges),
    )


def differing(one: tuple[list, list], other: tuple[list, list]) -> list[str]:
    """The properties of nodes and edges that differ, named by their URIs (empty: the same graph)."""
    found = []
    for kind, mine, theirs in (("node", one[0], other[0]), ("edge", one[1], other[1])):
        for item in sorted(set(mine) ^ set(theirs), key=repr)[:6]:
            found.append(f"{kind} only in {'the first' if item in set(mine) else 'the second'}: {str(item)[:300]}")
    return found


def bucket_settings(service: Neo4jService, endpoint: str, root: str) -> Settings:
    return service.settings.with_section("storage", endpoint=endpoint, project=PROJECT).with_section("documents", libraries=[{"name": "manuals", "root": root}])


@pytest.fixture
def bucket(gcs_endpoint: str, request: pytest.FixtureRequest) -> Iterator[storage.Bucket]:
    name = f"lib-{abs(hash(request.node.name)) % 10**8}"
    created = client(gcs_endpoint).create_bucket(name)
    try:
        yield created
    finally:
        for blob in created.list_blobs():
            blob.delete()
        created.delete()


def test_a_bucket_gives_the_graph_its_folder_gives_and_reloads_read_only_what_changed(
    neo4j_service: Neo4jService, graph: Driver, gcs_endpoint: str, bucket: storage.Bucket, powershell_docs: Path, tmp_path: Path
) -> None:
    folder = real_library(powershell_docs, tmp_path / "manuals")
    uploaded = upload_folder(bucket, folder, "published/manuals")
    bucket.blob("published/elsewhere.md").upload_from_string(b"# Not in the library\n")  # beside the prefix, not below it

    from_folder = load(DocumentSync(neo4j_service.settings.with_section("documents", libraries=[{"name": "manuals", "root": folder}]), graph, "neo4j"))
    folder_graph = without_location(dump(graph))
    wipe(graph)
    schema.apply(graph, "neo4j")
    sync = DocumentSync(bucket_settings(neo4j_service, gcs_endpoint, f"gs://{bucket.name}/published/manuals/"), graph, "neo4j")
    from_bucket = load(sync)
    counted = ("documents", "sections", "linked", "unresolved", "skipped")
    assert [getattr(from_bucket, name) for name in counted] == [getattr(from_folder, name) for name in counted]
    assert from_bucket.documents + from_bucket.skipped == uploaded and from_bucket.linked > 100  # two PDFs are unreadable
    bucket_graph = without_location(dump(graph))
    assert differing(bucket_graph, folder_graph) == []
    stamps = graph.execute_query("MATCH (d:Document) RETURN d.source_path AS path LIMIT 1").records
    assert stamps[0]["path"].startswith(f"gs://{bucket.name}/published/manuals/")

    unreadable = from_bucket.skipped  # refused with their size and MD5: not downloaded again while these hold
    again = load(sync)
    assert (again.read, again.skipped) == (0, unreadable)  # every stored object's size and MD5 held: none is downloaded
    page = bucket.blob("published/manuals/conceptual/learn/ps101/00-introduction.md")
    original = page.download_as_bytes()
    page.upload_from_string(original)  # a new generation, the same bytes: its MD5 holds
    assert load(sync).read == 0
    page.upload_from_string(original.replace(b"PowerShell", b"PowerShell 7", 1))
    bucket.blob("published/manuals/pdf/pdflatex-outline.pdf").delete()
    changed = load(sync)
    assert (changed.read, changed.parsed, changed.written, changed.deleted, changed.skipped) == (1, 1, 1, 1, unreadable)
    assert differences_from_files(graph, sync.settings) == (from_bucket.documents - 1, 0)


def test_a_sync_reads_the_object_as_it_is_whatever_the_event_said(
    neo4j_service: Neo4jService, graph: Driver, gcs_endpoint: str, bucket: storage.Bucket, tmp_path: Path
) -> None:
    """Level-triggered: a sync of a path reads the bucket now, so a stale event changes nothing."""
    sync = DocumentSync(bucket_settings(neo4j_service, gcs_endpoint, f"gs://{bucket.name}"), graph, "neo4j")
    bucket.blob("guide/a.md").upload_from_string(b"# A\nSee [b](b.md).\n")
    assert sync.sync_path("manuals", "guide/a.md") == "written"
    assert sync.sync_path("manuals", "guide/a.md") == "unchanged"
    assert sync.sync_path("manuals", "guide/b.md") == "absent"  # a notification for an object already gone
    bucket.blob("guide/b.md").upload_from_string(b"# B\n")
    assert sync.sync_path("manuals", "guide") == "written"  # a folder: what is below it now
    bucket.blob("guide/a.md").delete()
    assert sync.sync_path("manuals", "guide/a.md") == "deleted"
    assert sync.sync_path("manuals", "../outside.md") == "absent"
    assert differences_from_files(graph, sync.settings) == (1, 0)

    env = clean_env(LAKEGRAPH_STATE_DIR=str(tmp_path / "state"), LAKEGRAPH_STORAGE__ENDPOINT=gcs_endpoint, **neo4j_service.env())
    loaded = run_cli("load", "docs", f"manuals=gs://{bucket.name}", "--json", env=env)
    assert loaded.returncode == 0, loaded.stderr
    assert {key: json.loads(loaded.stdout)[key] for key in ("documents", "read", "written")} == {"documents": 1, "read": 0, "written": 0}


class LiveBucket:
    """A bucket whose notifications reach `lakegraph subscribe` and a Celery worker."""

    def __init__(self, env: dict[str, str], topic: str, publisher: pubsub_v1.PublisherClient) -> None:
        self.env = env
        self.topic = topic
        self.publisher = publisher
        self.worker = start_worker(env)
        self.subscriber = self.start_subscriber()

    def start_subscriber(self) -> subprocess.Popen:
        return subprocess.Popen([LAKEGRAPH, "subscribe"], env=self.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)

    def stop(self) -> None:
        for process in (self.worker, self.subscriber):
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
                try:
                    process.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    crash(process)


def expected(bucket: storage.Bucket) -> dict[str, str]:
    """uri → the file hash of every document object, as a fresh load would store it."""
    return {f"manuals/{blob.name.removesuffix('.md')}": file_hash(blob.download_as_bytes()) for blob in bucket.list_blobs() if blob.name.endswith(".md")}


def stored(driver: Driver) -> dict[str, str]:
    return dict(driver.execute_query(STORED).records[0]["rows"])


@pytest.fixture
def live(
    neo4j_service: Neo4jService,
    graph: Driver,
    redis_service: redis_server.LocalRedis,
    pubsub_host: str,
    gcs_endpoint: str,
    bucket: storage.Bucket,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[LiveBucket]:
    redis_server.client(redis_service.url, 5).flushall()
    monkeypatch.setenv("PUBSUB_EMULATOR_HOST", pubsub_host)
    publisher, topic, subscription = pubsub_topic(PROJECT, f"objects-{bucket.name}", f"objects-sub-{bucket.name}")
    # what `gcloud storage buckets notifications create gs://BUCKET --topic=TOPIC --payload-format=json` makes
    bucket.notification(topic_name=topic.rsplit("/", 1)[1], topic_project=PROJECT, payload_format="JSON_API_V1").create()
    env = clean_env(
        LAKEGRAPH_STATE_DIR=str(tmp_path / "state"),
        LAKEGRAPH_REDIS__URL=redis_service.url,
        LAKEGRAPH_PUBSUB__PROJECT=PROJECT,
        LAKEGRAPH_PUBSUB__EMULATOR_HOST=pubsub_host,
        LAKEGRAPH_STORAGE__PROJECT=PROJECT,
        LAKEGRAPH_STORAGE__ENDPOINT=gcs_endpoint,
        LAKEGRAPH_STORAGE__SUBSCRIPTION=subscription,
        LAKEGRAPH_DOCUMENTS__LIBRARIES=json.dumps([{"name": "manuals", "root": f"gs://{bucket.name}"}]),
        **neo4j_service.env(),
    )
    running = LiveBucket(env, topic, publisher)
    try:
        yield running
    finally:
        running.stop()


@pytest.mark.reliability
def test_notifications_keep_the_graph_equal_to_the_bucket(
    live: LiveBucket, neo4j_service: Neo4jService, graph: Driver, gcs_endpoint: str, bucket: storage.Bucket
) -> None:
    def settled(timeout: float = 60) -> None:
        wait_until(lambda: stored(graph) == expected(bucket), timeout, "the graph to match the bucket")

    bucket.blob("guide/start.md").upload_from_string(b"# Start\nSee [next](next.md).\n")
    settled()
    storage_statuses = [status for status in json.loads(run_cli("doctor", "--json", env=live.env).stdout) if status["engine"] == "storage"]
    assert [status["state"] for status in storage_statuses] == ["up", "up"]
    assert f"gs://{bucket.name} (library manuals): 1 object" in storage_statuses[0]["detail"] and "objects-sub-" in storage_statuses[1]["detail"]
    bucket.blob("guide/next.md").upload_from_string(b"# Next\nBack to [start](start.md).\n")
    bucket.blob("guide/start.md").upload_from_string(b"# Start again\nSee [next](next.md#next).\n")  # an overwrite
    settled()
    bucket.copy_blob(bucket.blob("guide/next.md"), bucket, "guide/moved/next.md")  # a move: copy, then delete
    bucket.blob("guide/next.md").delete()
    bucket.blob("guide/start.md").upload_from_string(b"# Start\nSee [moved](moved/next.md).\n")
    settled()
    links = "MATCH (:Section {doc_uri: 'manuals/guide/start'})-[:LINKS_TO]->(t) RETURN collect(t.uri) AS targets"
    wait_until(lambda: graph.execute_query(links).records[0]["targets"] == ["manuals/guide/moved/next"], 30, "the link to follow the move")

    # Redelivered and reordered: an old generation's finalize for an object since deleted, and one
    # for an object since overwritten, change nothing; poison is recorded, never retried.
    old = {"eventType": "OBJECT_FINALIZE", "payloadFormat": "JSON_API_V1", "bucketId": bucket.name, "objectGeneration": "1"}
    for name in ("guide/next.md", "guide/start.md", "guide/start.md"):
        live.publisher.publish(live.topic, json.dumps({"bucket": bucket.name, "name": name}).encode(), **{**old, "objectId": name}).result(timeout=30)
    live.publisher.publish(live.topic, b"not a notification").result(timeout=30)
    wait_until(lambda: any(row.kind == "skipped" for row in problems.listing(graph, "neo4j", "documents")), 60, "the poison message to be recorded")
    settled()

    # The subscriber killed mid-stream: a burst of uploads and deletes, then a restart; nothing is lost.
    for index in range(40):
        bucket.blob(f"burst/page-{index}.md").upload_from_string(f"# Page {index}\nSee [next](page-{index + 1}.md).\n".encode())
        if index == 10:
            crash(live.subscriber)
        if index % 7 == 0 and index:
            bucket.blob(f"burst/page-{index - 1}.md").delete()
    live.subscriber = live.start_subscriber()
    settled(timeout=120)
    documents = len(expected(bucket))
    live.stop()
    assert differences_from_files(graph, bucket_settings(neo4j_service, gcs_endpoint, f"gs://{bucket.name}")) == (documents, 0)
