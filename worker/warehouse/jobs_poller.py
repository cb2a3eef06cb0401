"""Polling INFORMATION_SCHEMA.JOBS_BY_PROJECT, for deployments without a Logging sink.

Reads jobs created since a watermark stored on the Database node, selecting only columns that
BigQuery and the local emulator share; whether a finished job failed comes from the job itself
(`get_job().error_result`). The watermark never passes a job that is still running, and every
job id counts once (QueryRun), so overlapping polls pick each query up exactly once.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from google.cloud import bigquery
from neo4j import Driver

from worker.graph.schema import Label
from worker.warehouse.audit_log import QueryEvent
from worker.warehouse.query_graph import QueryGraph, QueryLogReport

MARKER = "/* lakegraph: jobs poll */"
JOBS = (
    MARKER
    + """
SELECT job_id, project_id, job_type, state, creation_time, user_email, query
FROM `region-{location}`.INFORMATION_SCHEMA.JOBS_BY_PROJECT
WHERE creation_time >= @since
ORDER BY creation_time, job_id
LIMIT @limit
"""
)
READ_WATERMARK = f"MATCH (d:{Label.DATABASE} {{id: $project}}) RETURN d.jobs_watermark AS at"
WRITE_WATERMARK = f"""
MERGE (d:{Label.DATABASE} {{id: $project}})
ON CREATE SET d.name = $project
SET d.jobs_watermark = $at
"""
BEGINNING = datetime(1970, 1, 1, tzinfo=UTC)
PAGE = 1000


@dataclass
class PollReport:
    seen: int = 0
    finished: int = 0
    absorbed: QueryLogReport | None = None
    watermark: str = ""


class JobsPoller:
    def __init__(self, client: bigquery.Client, project: str, location: str, driver: Driver, database: str, queries: QueryGraph) -> None:
        self.client = client
        self.project = project
        self.location = location.lower()
        self.driver = driver
        self.database = database
        self.queries = queries

    def poll(self) -> PollReport:
        records = self.driver.execute_query(READ_WATERMARK, project=self.project, database_=self.database).records
        since = datetime.fromisoformat(records[0]["at"]) if records and records[0]["at"] else BEGINNING
        config = bigquery.QueryJobConfig(
            query_parameters=[
                bigquery.ScalarQueryParameter("since", "TIMESTAMP", since),
                bigquery.ScalarQueryParameter("limit", "INT64", PAGE),
            ]
        )
        rows = [
            dict(row)
            for row in self.client.query(JOBS.format(location=self.location), job_config=config).result()
            if not (row["query"] or "").startswith(MARKER)  # this poller's own queries
        ]
        report = PollReport(seen=len(rows))
        events = []
        unfinished = [row["creation_time"] for row in rows if row["state"] != "DONE"]
        for row in rows:
            if row["state"] != "DONE" or row["job_type"] != "QUERY" or not row["query"]:
                continue
            job = self.client.get_job(row["job_id"], project=row["project_id"] or self.project, location=self.location)
            events.append(
                QueryEvent(
                    job_id=f"{row['project_id'] or self.project}:{row['job_id']}",
                    sql=row["query"],
                    user=row["user_email"] or "",
                    at=_iso(row["creation_time"]),
                    failed=bool(job.error_result),
                    referenced_tables=(),
                )
            )
        report.finished = len(events)
        if events:
            report.absorbed = self.queries.absorb(events)
        if rows:
            watermark = min(unfinished) if unfinished else rows[-1]["creation_time"]
            report.watermark = _iso(watermark)
            self.driver.execute_query(WRITE_WATERMARK, project=self.project, at=report.watermark, database_=self.database)
        return report


def _iso(value: datetime | str) -> str:
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    return value.astimezone(UTC).isoformat()
