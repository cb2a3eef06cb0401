"""The HTTP API's contract, tried by a maintained OpenAPI fuzzer: Schemathesis generates requests
from `/openapi.json` (valid and invalid ones, every method, with and without the token) against
the real server on the tests' lakehouse, and every check it has must pass — no server error, every
status and body as documented, what the schema accepts accepted and what it refuses refused,
405 with `Allow` for a method a path does not serve. A failure prints Schemathesis' report with the
command that replays it (the seed and the example count are fixed here)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.test_mcp_http import Served

pytestmark = pytest.mark.timeout(1200)
SCHEMATHESIS = str(Path(sys.executable).parent / "st")
CONFIG = Path(__file__).with_name("schemathesis.toml")  # why two operations take a 400 for schema-valid text
SEED = 20261205
EXAMPLES = 30  # per operation; --full runs 200


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
