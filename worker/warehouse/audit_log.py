"""BigQuery audit-log LogEntries (v2 BigQueryAuditMetadata and legacy v1 AuditData) into events.

A finished query job becomes a `QueryEvent`; a table created, changed or deleted becomes a
`TableEvent`; everything else a feed carries (other methods, other services, job insertions,
which are counted when the job completes) is `Ignored` with the reason. Bytes that are not a
LogEntry raise `AuditLogError`: the caller records them as poison.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Literal

AUDIT_LOG = "type.googleapis.com/google.cloud.audit.AuditLog"
BIGQUERY = "bigquery.googleapis.com"
_JOB_NAME = re.compile(r"^projects/([^/]+)/jobs/([^/]+)$")
_TABLE_NAME = re.compile(r"^projects/([^/]+)/datasets/([^/]+)/tables/([^/$@]+)")


class AuditLogError(ValueError):
    """Not a LogEntry this parser can read: a poison message."""


@dataclass(frozen=True)
class QueryEvent:
    job_id: str  # project:job
    sql: str
    user: str
    at: str  # the entry's timestamp (RFC 3339)
    failed: bool
    referenced_tables: tuple[str, ...]  # project.dataset.table
    runs: int = 1  # the executions it stands for: a statement-statistics row counts several


@dataclass(frozen=True)
class TableEvent:
    kind: Literal["created", "changed", "deleted"]
    project: str
    dataset: str
    table: str
    at: str


@dataclass(frozen=True)
class Ignored:
    reason: str


Event = QueryEvent | TableEvent | Ignored


def parse_bytes(data: bytes) -> Event:
    try:
        entry = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as err:
        raise AuditLogError(f"not JSON: {err}") from None
    return parse_entry(entry)


def parse_entry(entry: Any) -> Event:
    if not isinstance(entry, dict):
        raise AuditLogError("a LogEntry is a JSON object")
    payload = entry.get("protoPayload")
    if not isinstance(payload, dict) or payload.get("@type") != AUDIT_LOG:
        return Ignored("not an audit log entry")
    service = payload.get("serviceName", BIGQUERY)
    if service != BIGQUERY:
        return Ignored(f"service {service}")
    at = str(entry.get("timestamp") or "")
    user = str(_get(payload, "authenticationInfo", "principalEmail") or "")
    try:
        metadata = payload.get("metadata") or {}
        if "jobChange" in metadata:
            return _job_change(metadata["jobChange"], user, at)
        if "jobInsertion" in metadata:
            return Ignored("job inserted; counted when it completes")
        for key, kind in (("tableCreation", "created"), ("tableChange", "changed")):
            if key in metadata:
                return _table_event(kind, _get(metadata, key, "table", "tableName"), at)
        if "tableDeletion" in metadata:
            return _table_event("deleted", payload.get("resourceName"), at)
        completed = _get(payload, "serviceData", "jobCompletedEvent")
        if completed is not None:
            return _job_completed_v1(completed, user, at)
    except (KeyError, TypeError, AttributeError) as err:
        raise AuditLogError(f"malformed {payload.get('methodName', 'entry')}: {type(err).__name__} {err}") from None
    return Ignored(f"method {payload.get('methodName', '?')}")


def _job_change(change: dict, user: str, at: str) -> Event:
    job = change["job"]
    if change.get("after") != "DONE":
        return Ignored(f"job state {change.get('after')}")
    config = job.get("jobConfig") or {}
    if config.get("type") != "QUERY":
        return Ignored(f"{config.get('type', 'unknown')} job")
    match = _JOB_NAME.match(job["jobName"])
    if match is None:
        raise AuditLogError(f"bad jobName {job['jobName']!r}")
    status = job.get("jobStatus") or {}
    references = _get(job, "jobStats", "queryStats", "referencedTables") or []
    return QueryEvent(
        job_id=f"{match.group(1)}:{match.group(2)}",
        sql=config["queryConfig"]["query"],
        user=user,
        at=at,
        failed=bool(status.get("errorResult")),
        referenced_tables=tuple(_table_id(name) for name in references),
    )


def _job_completed_v1(event: dict, user: str, at: str) -> Event:
    if event.get("eventName") != "query_job_completed":
        return Ignored(f"v1 event {event.get('eventName')}")
    job = event["job"]
    name = job["jobName"]
    status = job.get("jobStatus") or {}
    references = _get(job, "jobStatistics", "referencedTables") or []
    return QueryEvent(
        job_id=f"{name['projectId']}:{name['jobId']}",
        sql=job["jobConfiguration"]["query"]["query"],
        user=user,
        at=at,
        failed=bool(status.get("error")),
        referenced_tables=tuple(f"{ref['projectId']}.{ref['datasetId']}.{ref['tableId']}" for ref in references),
    )


def _table_event(kind: str, name: object, at: str) -> TableEvent:
    match = _TABLE_NAME.match(str(name or ""))
    if match is None:
        raise AuditLogError(f"no table name in a table {kind} event: {name!r}")
    return TableEvent(kind, match.group(1), match.group(2), match.group(3), at)  # type: ignore[arg-type]


def _table_id(name: str) -> str:
    match = _TABLE_NAME.match(name)
    return ".".join(match.groups()) if match else name


def _get(data: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(data, dict):
            return None
        data = data.get(key)
    return data
