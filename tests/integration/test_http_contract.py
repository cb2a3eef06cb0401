"""The HTTP API's contract, tried by a maintained OpenAPI fuzzer: Schemathesis generates requests
from `/openapi.json` (valid and invalid ones, every method, with and without the token) against
the real server on the tests' lakehouse, and every check it has must pass — no server error, every
status and body as documented, what the schema accepts accepted and what it refuses refused,
405 with `Allow` for a method a path does not serve. A failure prints Schemathesis' report with the
command that replays it (the seed and the example count are fixed here)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import cast

import pytest

from tests.integration.conftest import serving
from tests.integration.test_mcp_http import Served
from worker.runtime import redis_server
from worker.task_names import CHECK_THEMES

pytestmark = pytest.mark.timeout(1200)
SCHEMATHESIS = str(Path(sys.executable).parent / "st")
CONFIG = Path(__file__).with_name("schemathesis.toml")  # why two operations take a 400 for schema-valid text
SEED = 20261205
EXAMPLES = 30  # per operation; --full runs 200


@pytest.fixture(scope="module")
def served(env: dict[str, str], redis_service: redis_server.LocalRedis) -> Iterator[Served]:
    """The server with a broker, as deployed: a themes refresh it is asked for is queued (202).
    No worker reads this broker here, so the refreshes queued are taken off it afterwards."""
    with serving({**env, "LAKEGRAPH_REDIS__URL": redis_service.url}) as server:
        yield server
    broker = redis_server.client(redis_service.url, 5)
    for raw in cast(list, broker.lrange("celery", 0, -1)):
        if json.loads(raw)["headers"]["task"] == CHECK_THEMES:
            broker.lrem("celery", 1, raw)


def test_the_server_does_what_its_openapi_document_promises(served: Served, full: bool) -> None:
    command = [
        SCHEMATHESIS,
        "--config-file",
        str(CONFIG),
        "run",
        f"{served.base}/openapi.json",
        "--checks",
        "all",
        "--max-examples",
        str(200 if full else EXAMPLES),
        "--seed",
        str(SEED),
        "--generation-deterministic",
        "--workers",
        "1",
        "--header",
        f"Authorization: Bearer {served.token}",
        "--request-timeout",
        "60",
    ]
    result = subprocess.run(command, capture_output=True, text=True, timeout=1100)
    assert result.returncode == 0, f"replay: {' '.join(command[:2])} ... (seed {SEED})\n{result.stdout[-12000:]}\n{result.stderr[-2000:]}"
