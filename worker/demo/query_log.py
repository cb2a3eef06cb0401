"""Analyst SQL in BigQuery dialect, as exported audit-log LogEntries (v2 jobChange, DONE): what
teaches the graph the joins analysts really use — including joins no declared key covers
(work orders to procedures and fault codes by code)."""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

PROJECT = "lakegraph-demo"
ANALYSTS = ("ana@example.com", "bo@example.com", "chen@example.com", "dev@example.com")
QUERIES = (
    # undeclared: work orders ↔ fault codes, ↔ procedures by fault code
    "SELECT f.system, COUNT(*) AS visits FROM `service.work_orders` w JOIN `service.fault_codes` f ON w.fault_code = f.code GROUP BY f.system",
    (
        "SELECT w.fault_code, p.title, COUNTIF(w.is_comeback) / COUNT(*) AS comeback_ratio FROM service.work_orders AS w "
        "JOIN service.procedures AS p ON p.procedure_id = w.procedure_id GROUP BY 1, 2"
    ),
    (
        "SELECT p.procedure_id, f.code FROM service.procedures p, service.fault_codes f, service.work_orders w "
        "WHERE w.fault_code = f.code AND w.procedure_id = p.procedure_id"
    ),
    # declared, confirmed by use
    "SELECT v.model, COUNT(*) FROM service.work_orders w JOIN service.vehicles v ON v.vin = w.vin GROUP BY v.model",
    (
        "SELECT wp.part_no, COUNTIF(w.is_comeback) AS comebacks FROM service.work_orders w "
        "JOIN service.work_order_parts wp ON wp.wo_id = w.wo_id GROUP BY wp.part_no"
    ),
    (
        "WITH fixes AS (SELECT w.wo_id, w.fault_code FROM service.work_orders w WHERE NOT w.is_comeback) "
        "SELECT f.fault_code, pt.name FROM fixes f JOIN service.work_order_parts wp USING (wo_id) JOIN service.parts pt ON pt.part_no = wp.part_no"
    ),
    "SELECT a.part_no, b.part_no AS replaced_by FROM service.parts a JOIN service.parts b ON a.superseded_by = b.part_no",
)


def entry(job: str, sql: str, user: str, at: datetime) -> dict:
    name = f"projects/{PROJECT}/jobs/{job}"
    stamp = at.isoformat().replace("+00:00", "Z")
    return {
        "protoPayload": {
            "@type": "type.googleapis.com/google.cloud.audit.AuditLog",
            "status": {},
            "authenticationInfo": {"principalEmail": user},
            "serviceName": "bigquery.googleapis.com",
            "methodName": "google.cloud.bigquery.v2.JobService.InsertJob",
            "resourceName": name,
            "metadata": {
                "@type": "type.googleapis.com/google.cloud.audit.BigQueryAuditMetadata",
                "jobChange": {
                    "before": "RUNNING",
                    "after": "DONE",
                    "job": {
                        "jobName": name,
                        "jobConfig": {"type": "QUERY", "queryConfig": {"query": sql, "statementType": "SELECT"}},
                        "jobStatus": {"jobState": "DONE"},
                        "jobStats": {"createTime": stamp, "startTime": stamp, "endTime": stamp},
                    },
                },
            },
        },
        "insertId": job,
        "resource": {"type": "bigquery_project", "labels": {"project_id": PROJECT, "location": "US"}},
        "timestamp": stamp,
        "severity": "INFO",
        "logName": f"projects/{PROJECT}/logs/cloudaudit.googleapis.com%2Fdata_access",
    }


def write_query_log(folder: Path, executions: int, seed: int, now: datetime | None = None) -> int:
    """One NDJSON file of `executions` finished jobs over the last 60 days."""
    rng = random.Random(seed)
    now = now or datetime.now(UTC)
    folder.mkdir(parents=True, exist_ok=True)
    lines = []
    for index in range(executions):
        at = now - timedelta(days=rng.random() * 60)
        lines.append(json.dumps(entry(f"demo_job_{index:05d}", rng.choice(QUERIES), rng.choice(ANALYSTS), at)))
    (folder / "analyst-queries.ndjson").write_text("\n".join(lines) + "\n")
    return executions
