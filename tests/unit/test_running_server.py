"""The record a running `serve --http` leaves for the command line: found only while its process
lives and only by commands whose settings give the same answers."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from shapes.serving import running_server
from worker.runtime.processes import PidRecord
from worker.settings import load_settings


def test_settings_that_change_no_answer_keep_the_fingerprint(tmp_path: Path) -> None:
    base = load_settings(state_dir=str(tmp_path))
    same = load_settings(state_dir=str(tmp_path / "elsewhere"), log_level="debug", serve={"port": 0, "host": "0.0.0.0", "token": "t"})
    assert running_server.fingerprint(same) == running_server.fingerprint(base)
    for other in ({"neo4j": {"database": "other"}}, {"shapes": {"answer_tokens": 300}}, {"documents": {"extensions": [".md"]}}):
        assert running_server.fingerprint(load_settings(state_dir=str(tmp_path), **other)) != running_server.fingerprint(base), other


def test_a_published_server_is_found_by_the_same_settings_only(tmp_path: Path) -> None:
    settings = load_settings(state_dir=str(tmp_path))
    running_server.publish(settings, "0.0.0.0", 8765)
    found = running_server.find(settings)
    assert found is not None and found.address == "http://127.0.0.1:8765"
    assert running_server.find(load_settings(state_dir=str(tmp_path), shapes={"answer_tokens": 300})) is None
    assert running_server.find(load_settings(state_dir=str(tmp_path), serve={"cli_via_server": False})) is None
    running_server.withdraw(settings)
    assert not running_server.address_file(settings).exists() and running_server.find(settings) is None


def test_a_dead_servers_record_is_ignored_and_removed(tmp_path: Path) -> None:
    settings = load_settings(state_dir=str(tmp_path))
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True, check=True)
    PidRecord(int(gone.stdout), "http://127.0.0.1:1", 0.0, running_server.fingerprint(settings)).write(running_server.address_file(settings))
    assert running_server.find(settings) is None
    assert not running_server.address_file(settings).exists()


def test_a_server_withdraws_only_its_own_record(tmp_path: Path) -> None:
    """A server that stops after another one started in the same state folder leaves the new one's record."""
    settings = load_settings(state_dir=str(tmp_path))
    with subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"]) as other:
        try:
            PidRecord(other.pid, "http://127.0.0.1:2", 0.0, running_server.fingerprint(settings)).write(running_server.address_file(settings))
            running_server.withdraw(settings)
            found = running_server.find(settings)
            assert found is not None and found.pid == other.pid
        finally:
            other.kill()
