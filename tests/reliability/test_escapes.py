"""File parameters that try to leave their folder, sent as real task messages to a real worker
(anyone who can write to the broker can send one, and `errors --replay` re-sends recorded
arguments): each is refused and recorded, nothing outside is read, the graph gains nothing."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from celery.result import AsyncResult
from neo4j import Driver

from tests.conftest import Neo4jService
from tests.graph_dump import dump
from tests.integration.test_audit_pipeline import FIXTURES
from tests.integration.test_live_documents import Live, live_stack
from worker import problems
from worker import task_names as names
from worker.celery_app import create_app
from worker.graph.schema import Label
from worker.runtime import redis_server
from worker.runtime.processes import wait_until

pytestmark = [pytest.mark.timeout(180), pytest.mark.reliability]
QUERIES = f"MATCH (q:{Label.QUERY}) RETURN count(q) AS n"


def _refusals(live: Live, outside: Path) -> list[tuple[str, tuple]]:
    audit = Path(live.env["LAKEGRAPH_STATE_DIR"]) / "audit-logs"
    return [
        (names.SYNC_DOCUMENT, ("lib", "../secret.md")),
        (names.SYNC_DOCUMENT, ("lib", str(outside / "secret.md"))),
        (names.SYNC_DOCUMENT, ("lib", "batch/../../secret.md")),
        (names.SYNC_FOLDER, ("lib", "..")),
        (names.SYNC_FOLDER, ("lib", str(outside))),
        (names.INGEST_AUDIT_FILE, (str(outside / "jobs.json"),)),
        (names.INGEST_AUDIT_FILE, (f"{audit}/../../jobs.json",)),
        (names.INGEST_AUDIT_FILE, ("/etc/passwd",)),
    ]


@pytest.fixture
def live(neo4j_service: Neo4jService, driver: Driver, redis_service: redis_server.LocalRedis, tmp_path: Path) -> Iterator[Live]:
    with live_stack(neo4j_service, driver, redis_service, tmp_path) as stack:
        yield stack


def test_task_messages_naming_files_outside_their_folder_are_refused(live: Live, tmp_path: Path) -> None:
    outside = tmp_path  # the library is tmp_path/lib, the audit folder tmp_path/state/audit-logs
    (outside / "secret.md").write_text("# Secret\nsecretword lives outside the library\n")
    shutil.copy(FIXTURES / "v2_jobChange_done.json", outside / "jobs.json")
    (live.root / "inside.md").write_text("# Inside\ninsideword\n")
    wait_until(lambda: live.search("insideword") == ["lib/inside#inside"], 10, "the library's own file")
    before = dump(live.driver)
    app = create_app(live.settings())
    sent = [(name, args, app.send_task(name, args=args)) for name, args in _refusals(live, outside)]
    outcomes = []
    for name, args, result in sent:
        result: AsyncResult
        result.get(timeout=60, propagate=False)
        outcomes.append((name, args, result.state, str(result.result)))
    print(f"\n{len(outcomes)} escaping file parameters sent as task messages: {sum(state == 'FAILURE' for _, _, state, _ in outcomes)} refused")
    for name, args, state, reason in outcomes:
        assert state == "FAILURE" and "refused path" in reason, (name, args, state, reason)
    assert live.search("secretword") == []
    assert dump(live.driver) == before
    assert live.driver.execute_query(QUERIES).records[0]["n"] == 0  # the audit entry outside was never absorbed
    recorded = problems.listing(live.driver, "neo4j")
    assert len(recorded) == len(outcomes) and all("OutsideFolder: refused path" in problem.reason for problem in recorded)
