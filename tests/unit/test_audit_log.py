"""BigQuery audit-log LogEntries (the shared fixtures, checked against the real protos) into events."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from worker.warehouse.audit_log import (
    AuditLogError,
    Ignored,
    QueryEvent,
    TableEvent,
    parse_bytes,
    parse_entry,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "bigquery-audit-log"


def fixture(name: str) -> dict:
    return json.loads((FIXTURES / name).read_text())


@pytest.mark.parametrize("name", ["v2_jobChange_done.json", "v1_jobCompletedEvent.json"])
def test_a_finished_query_job_in_either_format(name: str) -> None:
    event = parse_entry(fixture(name))
    assert isinstance(event, QueryEvent)
    assert event.job_id == "my-proj:bquxjob_6b1d5c2e_18c"
    assert event.user == "alice@example.com" and not event.failed
    assert "JOIN `my-proj.shop.customers` c" in event.sql
    assert event.referenced_tables == ("my-proj.shop.orders", "my-proj.shop.customers")
    assert event.at == "2024-05-01T12:00:03.456789Z"


def test_a_failed_job_is_flagged() -> None:
    event = parse_entry(fixture("v2_jobChange_failed.json"))
    assert isinstance(event, QueryEvent) and event.failed


def test_an_inserted_job_waits_for_completion() -> None:
    assert parse_entry(fixture("v2_jobInsertion.json")) == Ignored("job inserted; counted when it completes")


@pytest.mark.parametrize(
    ("name", "kind", "table"),
    [
        ("v2_tableCreation.json", "created", "orders"),
        ("v2_tableCreation_view.json", "created", "big_orders"),
        ("v2_tableChange.json", "changed", "orders"),
        ("v2_tableDeletion.json", "deleted", "orders"),
    ],
)
def test_table_events(name: str, kind: str, table: str) -> None:
    event = parse_entry(fixture(name))
    assert isinstance(event, TableEvent)
    assert (event.kind, event.project, event.dataset, event.table) == (kind, "my-proj", "shop", table)


def test_other_methods_and_services_are_ignored_with_a_reason() -> None:
    entry = fixture("v2_tableChange.json")
    entry["protoPayload"]["metadata"] = {"datasetChange": {}}
    entry["protoPayload"]["methodName"] = "google.cloud.bigquery.v2.DatasetService.PatchDataset"
    assert parse_entry(entry) == Ignored("method google.cloud.bigquery.v2.DatasetService.PatchDataset")
    other = fixture("v2_tableChange.json")
    other["protoPayload"]["serviceName"] = "storage.googleapis.com"
    assert parse_entry(other) == Ignored("service storage.googleapis.com")
    assert parse_entry({"textPayload": "hello"}) == Ignored("not an audit log entry")


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"\xff\xfe not utf-8", "not JSON"),
        (b"{truncated", "not JSON"),
        (b"[1, 2]", "a LogEntry is a JSON object"),
    ],
)
def test_poison_bytes_raise_a_clear_error(data: bytes, message: str) -> None:
    with pytest.raises(AuditLogError, match=message):
        parse_bytes(data)


def test_a_malformed_audit_entry_is_poison() -> None:
    entry = fixture("v2_jobChange_done.json")
    del entry["protoPayload"]["metadata"]["jobChange"]["job"]["jobName"]
    with pytest.raises(AuditLogError, match="malformed"):
        parse_entry(entry)
