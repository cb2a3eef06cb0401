"""`lakegraph demo --google`: the demo on Google's emulators, started and stopped by the demo itself
— the warehouse copied into the BigQuery emulator, its audit log published through the Pub/Sub
emulator, the library uploaded to a fake-gcs-server bucket whose notifications reach Pub/Sub. It
prints the two live latencies it measured; agents then see the project's tables, the learned
joins and the bucket's documents, and the bucket stays live (an upload and a delete follow)."""

from __future__ import annotations

import re
from collections.abc import Iterator

import httpx2
import psutil
import pytest

from tests.integration.test_demo import Demo, start_demo, stop_demo
from worker.demo import google
from worker.demo.query_log import PROJECT
from worker.runtime.processes import free_port, wait_until
from worker.settings import load_settings
from worker.shared.google_clients import storage_client

pytestmark = [pytest.mark.timeout(600), pytest.mark.slow]
EMULATOR_COMMANDS = ("fake-gcs-server", "bigquery_launcher", "cloud-pubsub-emulator")


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Demo]:
    running = start_demo(tmp_path_factory.mktemp("google") / "lakegraph-demo", free_port(), "--google")
    try:
        yield running
    finally:
        if running.process.poll() is None:
            stop_demo(running)


def get(demo: Demo, shape: str, **params: str) -> dict:
    answer = httpx2.get(f"{demo.base}/v1/{shape}", params=params, headers={"Authorization": f"Bearer {demo.token}"}, timeout=30)
    answer.raise_for_status()
    return answer.json()


def emulators_of(demo: Demo) -> list[str]:
    found = []
    for process in psutil.Process(demo.process.pid).children(recursive=True):
        try:
            command = " ".join(process.cmdline())
        except psutil.Error:
            continue
        found += [name for name in EMULATOR_COMMANDS if name in command]
    return sorted(set(found))


def test_the_demo_runs_on_the_emulators_and_times_both_live_paths(demo: Demo) -> None:
    assert emulators_of(demo) == sorted(EMULATOR_COMMANDS)
    live = next(line for line in demo.output if line.startswith("live"))
    edit, join = (float(seconds) for seconds in re.findall(r"in ([\d.]+) s", live))
    assert 0 < edit < 30 and 0 < join < 30, live

    # The warehouse is the BigQuery project's, with its declared keys and the joins its log taught.
    tables = {row["id"] for row in get(demo, "table-context", question="comeback ratio by part")["tables"]}
    assert f"{PROJECT}.service.work_orders" in tables
    joins = get(demo, "joins", table="service.work_orders")
    assert joins["declared"] and any(
        {row["left"], row["right"]} == {f"{PROJECT}.service.work_orders.fault_code", f"{PROJECT}.service.fault_codes.code"} for row in joins["learned"]
    )
    # The documents are the bucket's.
    hits = get(demo, "search", query="P0301 misfire")["hits"]
    assert hits and all(hit["uri"].startswith("technical-library/") for hit in hits)


def test_the_bucket_stays_live(demo: Demo) -> None:
    settings = load_settings(demo.folder / google.CONFIG)
    bucket = storage_client(settings.storage.project, settings.storage.endpoint).bucket(google.BUCKET)
    bucket.blob(f"{google.LIBRARY_PREFIX}/bulletins/tsb-99-001.md").upload_from_string(b"# TSB 99-001\n\nZebracorn harness chafe near the firewall.\n")
    wait_until(lambda: bool(get(demo, "search", query="zebracorn")["hits"]), 60, "the uploaded bulletin to be searchable")
    bucket.blob(f"{google.LIBRARY_PREFIX}/bulletins/tsb-99-001.md").delete()
    wait_until(lambda: not get(demo, "search", query="zebracorn")["hits"], 60, "the deleted bulletin to leave search")


def test_stopping_the_demo_stops_the_emulators(demo: Demo) -> None:
    children = psutil.Process(demo.process.pid).children(recursive=True)
    stop_demo(demo)
    assert demo.process.returncode == 0
    _, alive = psutil.wait_procs(children, timeout=30)
    assert alive == [], [process.pid for process in alive]
