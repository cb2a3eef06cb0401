"""The two live paths of `lakegraph demo --google`, each timed end to end as an agent sees it over
the HTTP API: an edit uploaded to the bucket until search finds it, and a query published as an
audit-log entry until `joins` lists the join it taught."""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import httpx2

from worker.demo.google import AUDIT_TOPIC, LIBRARY_PREFIX
from worker.demo.query_log import ANALYSTS, PROJECT, entry
from worker.exceptions import LakegraphError

if TYPE_CHECKING:
    from google.cloud import pubsub_v1, storage

TIMEOUT, POLL = 60.0, 0.05  # seconds
# A join no query of the demo's log makes (parts for the system a fault code belongs to).
PROBE_SQL = "SELECT f.code, pt.part_no FROM service.fault_codes AS f JOIN service.parts AS pt ON pt.system = f.system"
PROBE_JOIN = {f"{PROJECT}.service.fault_codes.system", f"{PROJECT}.service.parts.system"}
PROBE_DOCUMENT = "bulletins/tsb-24-017.md"


@dataclass(frozen=True)
class Api:
    base: str
    token: str

    def get(self, shape: str, **params: str) -> dict:
        answer = httpx2.get(f"{self.base}/v1/{shape}", params=params, headers={"Authorization": f"Bearer {self.token}"}, timeout=30)
        answer.raise_for_status()
        return answer.json()


def timed(act: Callable[[], object], seen: Callable[[], bool], what: str) -> float:
    """Seconds from `act` until `seen` holds, polled as an agent would (every POLL seconds)."""
    began = time.monotonic()
    act()
    while not seen():
        if time.monotonic() - began > TIMEOUT:
            raise LakegraphError(f"{what}: not seen within {TIMEOUT:.0f} s")
        time.sleep(POLL)
    return time.monotonic() - began


def edit_to_search(api: Api, bucket: storage.Bucket, library: Path) -> float:
    """Upload an edited document with a new word; the seconds until search finds the word. The
    original is uploaded again afterwards."""
    original = (library / PROBE_DOCUMENT).read_bytes()
    word = f"probe{secrets.token_hex(4)}"
    blob = bucket.blob(f"{LIBRARY_PREFIX}/{PROBE_DOCUMENT}")
    seconds = timed(
        lambda: blob.upload_from_string(original + f"\n\nProbe note {word}.\n".encode()),
        lambda: bool(api.get("search", query=word)["hits"]),
        "the uploaded edit to be searchable",
    )
    blob.upload_from_string(original)
    return seconds


def executions(api: Api) -> int:
    learned = api.get("joins", table="service.parts")["learned"]
    return next((row["executions"] for row in learned if {row["left"], row["right"]} == PROBE_JOIN), 0)


def query_to_join(api: Api, publisher: pubsub_v1.PublisherClient) -> float:
    """Publish an audit-log entry of a query with a join; the seconds until `joins` counts it."""
    before = executions(api)
    job = entry(f"probe_{secrets.token_hex(6)}", PROBE_SQL, ANALYSTS[0], datetime.now(UTC))
    topic = publisher.topic_path(PROJECT, AUDIT_TOPIC)
    return timed(
        lambda: publisher.publish(topic, json.dumps(job).encode()).result(timeout=30),
        lambda: executions(api) > before,
        "the published query's join to be learned",
    )
