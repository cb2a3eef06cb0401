"""Session fixtures that start the real services a test asks for, and stop them afterwards.

A test names the services it needs by its fixtures (`neo4j_service`, `redis_service`,
`pubsub_host`, `bigquery_endpoint`, `gcs_endpoint`, `postgres_server`, `mariadb_server`); each starts once per session on free loopback ports, and
is stopped at the end even when tests failed.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from neo4j import Driver, GraphDatabase

from tests import corpora
from tests.services import mysql, postgres
from worker.runtime import bigquery_emulator, fake_gcs, neo4j_server, pubsub_emulator, redis_server
from worker.settings import Settings, load_settings

TEST_HEAP = "768m"
TEST_PAGECACHE = "256m"
BIGQUERY_PROJECT = "lakegraph-test"


FULL_FUZZ_EXAMPLES = "1000"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--full",
        action="store_true",
        help="run the slow tests at full size (the reliability suite: 1,000 fuzz examples per target, a 10-minute soak)",
    )


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("--full"):  # read when the fuzz module is imported, before any test runs
        os.environ.setdefault("FUZZ_EXAMPLES", FULL_FUZZ_EXAMPLES)


# A test that needs a service gets its marker from the fixture it asks for (`-m "not bigquery"`).
SERVICE_MARKERS = {
    "neo4j_service": "neo4j",
    "redis_service": "redis",
    "pubsub_host": "pubsub",
    "bigquery_endpoint": "bigquery",
    "gcs_endpoint": "gcs",
    "postgres_server": "postgres",
    "mariadb_server": "mysql",
}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    skip_corpus = None if corpora.present() or os.environ.get("CI") else pytest.mark.skip(reason=corpora.WHERE)
    for item in items:
        for fixture, marker in SERVICE_MARKERS.items():
            if fixture in getattr(item, "fixturenames", ()):
                item.add_marker(marker)
        if "powershell_docs" in getattr(item, "fixturenames", ()):
            item.add_marker("corpus")
        if skip_corpus is not None and item.get_closest_marker("corpus"):
            item.add_marker(skip_corpus)


@pytest.fixture(scope="session")
def full(request: pytest.FixtureRequest) -> bool:
    """True under `--full`: slow tests run their long version."""
    return bool(request.config.getoption("--full"))


@pytest.fixture(autouse=True)
def _clean_lakegraph_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests set what they need; a developer's own LAKEGRAPH_* variables must not leak in."""
    for key in list(os.environ):
        if key.startswith("LAKEGRAPH_"):
            monkeypatch.delenv(key)


@dataclass(frozen=True)
class Neo4jService:
    uri: str
    password: str
    settings: Settings  # points at the running server through neo4j.uri

    def env(self) -> dict[str, str]:
        """Environment for child processes (CLI, Celery worker) that use this server."""
        return {
            "LAKEGRAPH_NEO4J__URI": self.uri,
            "LAKEGRAPH_NEO4J__PASSWORD": self.password,
        }


@pytest.fixture(scope="session")
def services_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("services")


def runtime_settings(state_dir: Path, **overrides: object) -> Settings:
    """Settings for a test's own state folder, sized for a 2-core CI machine."""
    neo4j = {"heap_size": TEST_HEAP, "pagecache_size": TEST_PAGECACHE, **overrides.pop("neo4j", {})}  # type: ignore[dict-item]
    return load_settings(state_dir=str(state_dir), neo4j=neo4j, **overrides)


@pytest.fixture(scope="session")
def neo4j_service(services_dir: Path) -> Iterator[Neo4jService]:
    local = runtime_settings(services_dir / "state")
    running = neo4j_server.start(local)
    try:
        settings = runtime_settings(services_dir / "state", neo4j={"uri": running.uri, "password": running.password})
        yield Neo4jService(running.uri, running.password, settings)
    finally:
        neo4j_server.stop(local)


@pytest.fixture(scope="session")
def driver(neo4j_service: Neo4jService) -> Iterator[Driver]:
    with GraphDatabase.driver(neo4j_service.uri, auth=(neo4j_server.LOCAL_USER, neo4j_service.password)) as opened:
        yield opened


@pytest.fixture(scope="session")
def redis_service(services_dir: Path) -> Iterator[redis_server.LocalRedis]:
    settings = runtime_settings(services_dir / "state")
    running = redis_server.start(settings)
    try:
        yield running
    finally:
        redis_server.stop(settings)


@pytest.fixture(scope="session")
def pubsub_host(services_dir: Path) -> Iterator[str]:
    service, host = pubsub_emulator.start(services_dir)
    try:
        yield host
    finally:
        service.stop()


@pytest.fixture(scope="session")
def gcs_endpoint(services_dir: Path, pubsub_host: str) -> Iterator[str]:
    service, endpoint = fake_gcs.start(services_dir, load_settings().cache_path, pubsub_host)
    try:
        yield endpoint
    finally:
        service.stop()


@pytest.fixture(scope="session")
def bigquery_endpoint(services_dir: Path) -> Iterator[str]:
    cache = load_settings().cache_path
    service, endpoint = bigquery_emulator.start(services_dir, cache, BIGQUERY_PROJECT)
    try:
        yield endpoint
    finally:
        service.stop()


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[postgres.PostgresServer]:
    if not postgres.installed() and not os.environ.get("CI"):
        pytest.skip("PostgreSQL is not installed (apt-get install postgresql); CI installs it")
    server = postgres.start()
    try:
        yield server
    finally:
        server.remove()


@pytest.fixture(scope="session")
def mariadb_server() -> Iterator[mysql.MariaDBServer]:
    if not mysql.installed() and not os.environ.get("CI"):
        pytest.skip("MariaDB is not installed (apt-get install mariadb-server); CI installs it")
    server = mysql.start()
    try:
        yield server
    finally:
        server.remove()


@pytest.fixture(scope="session")
def powershell_docs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The real PowerShell documentation estate (3,088 Markdown pages), unpacked once per session."""
    return corpora.unpack_powershell_docs(tmp_path_factory.mktemp("corpora"))
