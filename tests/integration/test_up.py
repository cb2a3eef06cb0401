"""`lakegraph up` on an empty state folder: ready, every local engine up, and a clean stop; on one
whose local Neo4j already runs, that one used and left running."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import time
from pathlib import Path

import psutil
import pytest

from tests.helpers import LAKEGRAPH, run_cli
from tests.integration.test_neo4j_runtime import runtime_env
from worker.runtime.processes import is_alive

pytestmark = pytest.mark.timeout(300)
READY = re.compile(r"ready in ([0-9.]+) s")


def start_up(env: dict[str, str]) -> tuple[subprocess.Popen, list[str]]:
    process = subprocess.Popen([LAKEGRAPH, "up"], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines: list[str] = []
    for line in process.stdout:
        lines.append(line.rstrip())
        if READY.search(line):
            return process, lines
    raise AssertionError("lakegraph up exited before ready:\n" + "\n".join(lines))


def test_up_reaches_ready_and_stops_everything_within_ten_seconds(tmp_path: Path) -> None:
    """Stopped by SIGTERM, as a service manager stops it; Ctrl-C (SIGINT) stops `lakegraph demo`, the
    same supervisor, in the demo tests."""
    library = tmp_path / "library"
    library.mkdir()
    env = runtime_env(tmp_path / "state", LAKEGRAPH_DOCUMENTS__LIBRARIES=json.dumps([{"name": "lib", "root": str(library)}]))
    process, lines = start_up(env)
    try:
        family = psutil.Process(process.pid).children(recursive=True)
        names = " ".join(" ".join(child.cmdline()) for child in family)
        assert "CommunityEntryPoint" in names and "redis-server" in names
        assert "celery -A worker.celery_app worker" in names and "celery -A worker.celery_app:beat_app beat" in names
        assert "-m worker.watch" in names

        (library / "hello.md").write_text("# Hello\nSee [nowhere](missing.md).\n")
        deadline = time.monotonic() + 20
        while "1 unresolved" not in (listing := run_cli("links", "--broken", env=env)).stdout and time.monotonic() < deadline:
            time.sleep(0.2)
        assert "lib/hello#hello  missing.md  (no document at lib/missing)" in listing.stdout

        doctor = run_cli("doctor", "--json", env=env)
        states = {row["engine"]: row["state"] for row in json.loads(doctor.stdout)}
        assert states == {"neo4j": "up", "gds": "up", "redis": "up", "workers": "up", "warehouse": "up", "pubsub": "off", "storage": "off", "glossary": "off"}
        assert doctor.returncode == 0
    finally:
        began = time.monotonic()
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=30)
        took = time.monotonic() - began
    print(f"\n{lines[-2] if len(lines) > 1 else ''} {lines[-1]}; stop took {took:.1f} s")
    assert took < 10
    assert process.returncode == 0
    assert [child.pid for child in family if is_alive(child.pid)] == []


def test_killed_supervisor_leaves_no_orphans(tmp_path: Path) -> None:
    process, _ = start_up(runtime_env(tmp_path))
    family = psutil.Process(process.pid).children(recursive=True)
    process.kill()
    process.wait()
    deadline = time.monotonic() + 15
    while any(is_alive(child.pid) for child in family) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert [" ".join(child.cmdline()[:5]) for child in family if is_alive(child.pid)] == []


def test_up_uses_a_local_neo4j_already_running_and_leaves_it_running(tmp_path: Path) -> None:
    env = runtime_env(tmp_path / "state")
    assert run_cli("neo4j", "start", env=env).returncode == 0
    try:
        before = json.loads(run_cli("neo4j", "status", "--json", env=env).stdout)
        process, lines = start_up(env)
        try:
            assert f"neo4j   local runtime {before['uri']} (pid {before['pid']}), already running: used, and left running" in lines, lines
            states = {row["engine"]: row["state"] for row in json.loads(run_cli("doctor", "--json", env=env).stdout)}
            assert states["neo4j"] == states["workers"] == "up", states
        finally:
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=30)
        assert process.returncode == 0
        assert json.loads(run_cli("neo4j", "status", "--json", env=env).stdout)["pid"] == before["pid"]
    finally:
        run_cli("neo4j", "stop", env=env)
