"""run_sql against the BigQuery emulator through the real client: dry run, byte budget, row cap,
time limit with cancellation, and refusals that never reach the warehouse."""

from __future__ import annotations

import pytest
from google.api_core.client_options import ClientOptions
from google.auth.credentials import AnonymousCredentials
from google.cloud import bigquery

from shapes.access.sql_runner import SqlRunner
from shapes.spec.exceptions import ShapeError
from tests.conftest import BIGQUERY_PROJECT, Neo4jService
from worker.settings import Settings

pytestmark = pytest.mark.timeout(180)


@pytest.fixture(scope="module")
def client(bigquery_endpoint: str) -> bigquery.Client:
    client = bigquery.Client(project=BIGQUERY_PROJECT, credentials=AnonymousCredentials(), client_options=ClientOptions(api_endpoint=bigquery_endpoint))
    client.create_dataset("garage", exists_ok=True)
    client.query("CREATE OR REPLACE TABLE garage.visits (vin STRING, fault STRING, comeback BOOL)").result()
    client.query("INSERT INTO garage.visits VALUES ('VIN1', 'P0301', false), ('VIN1', 'P0301', true), ('VIN2', 'U0140', false)").result()
    return client


@pytest.fixture
def settings(neo4j_service: Neo4jService, bigquery_endpoint: str, client: bigquery.Client) -> Settings:
    return neo4j_service.settings.with_section(
        "warehouse",
        engine="bigquery",
        bigquery_project=BIGQUERY_PROJECT,
        bigquery_endpoint=bigquery_endpoint,
        bigquery_datasets=["garage"],
    )


def count_rows(client: bigquery.Client) -> int:
    return next(iter(client.query("SELECT count(*) AS n FROM garage.visits").result()))["n"]


def test_a_query_runs_within_its_budget(settings: Settings) -> None:
    result = SqlRunner(settings)("SELECT vin, countif(comeback) AS comebacks FROM garage.visits GROUP BY vin ORDER BY vin")
    assert result.engine == "bigquery" and result.columns == ["vin", "comebacks"]
    assert result.rows == [["VIN1", 1], ["VIN2", 0]] and not result.truncated
    assert result.bytes_processed is not None


def test_row_cap(settings: Settings) -> None:
    result = SqlRunner(settings.with_section("shapes", sql_max_rows=2))("SELECT * FROM garage.visits ORDER BY vin")
    assert len(result.rows) == 2 and result.truncated


@pytest.mark.reliability
@pytest.mark.parametrize(
    "sql",
    [
        "DELETE FROM garage.visits WHERE true",
        "INSERT INTO garage.visits VALUES ('x', 'y', true)",
        "DROP TABLE garage.visits",
        "CREATE TABLE garage.evil AS SELECT 1 AS x",
        "SELECT 1; DELETE FROM garage.visits WHERE true",
        "BEGIN DELETE FROM garage.visits WHERE true; END",
        "DECLARE x INT64 DEFAULT 1",
        "MERGE garage.visits t USING garage.visits s ON false WHEN NOT MATCHED THEN INSERT ROW",
    ],
)
def test_writes_and_scripts_are_refused_before_reaching_bigquery(settings: Settings, client: bigquery.Client, sql: str) -> None:
    before = count_rows(client)
    with pytest.raises(ShapeError):
        SqlRunner(settings)(sql)
    assert count_rows(client) == before
    assert "evil" not in [table.table_id for table in client.list_tables("garage")]


@pytest.mark.reliability
def test_the_job_carries_the_byte_budget(settings: Settings, client: bigquery.Client) -> None:
    """The dry run's estimate is checked before the job runs; the emulator estimates 0 bytes, so
    here the cap is proved on the job itself (BigQuery enforces maximum_bytes_billed)."""
    result = SqlRunner(settings.with_section("shapes", sql_max_bytes_billed=12345))("SELECT * FROM garage.visits")
    assert result.job_id
    job = client.get_job(result.job_id)
    assert isinstance(job, bigquery.QueryJob) and job.maximum_bytes_billed == 12345


@pytest.mark.reliability
def test_time_limit_cancels_the_job(settings: Settings) -> None:
    slow = "SELECT count(*) AS n FROM UNNEST(GENERATE_ARRAY(1, 30000000)) a CROSS JOIN UNNEST(GENERATE_ARRAY(1, 100)) b WHERE MOD(a * b, 7) = 3"
    with pytest.raises(ShapeError, match=r"time limit reached: job .* was cancelled"):
        SqlRunner(settings.with_section("shapes", sql_timeout=0.5))(slow)
