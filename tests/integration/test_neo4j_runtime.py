"""`lakegraph neo4j start|stop|status` and the one-line errors around the graph connection."""

from __future__ import annotations

import json
import os
import shutil
import socket
import stat
import subprocess
from pathlib import Path

import pytest

from tests.conftest import TEST_HEAP, TEST_PAGECACHE, Neo4jService
from tests.helpers import LAKEGRAPH, assert_one_line_error, clean_env, run_cli
from worker.graph.schema import SCHEMA, VECTOR_INDEXES
from worker.runtime.processes import free_port, is_alive

pytestmark = pytest.mark.timeout(300)


def runtime_env(state: Path, **extra: str) -> dict[str, str]:
    return clean_env(
        LAKEGRAPH_STATE_DIR=str(state),
        LAKEGRAPH_NEO4J__HEAP_SIZE=TEST_HEAP,
        LAKEGRAPH_NEO4J__PAGECACHE_SIZE=TEST_PAGECACHE,
        **extra,
    )


def test_start_status_refuse_second_start_stop(tmp_path: Path) -> None:
    env = runtime_env(tmp_path)
    started = run_cli("neo4j", "start", env=env)
    assert started.returncode == 0, started.stderr
    try:
        status = json.loads(run_cli("neo4j", "status", "--json", env=env).stdout)
        assert status["uri"].startswith("bolt://127.0.0.1:")
        password_file = tmp_path / "neo4j" / "password"
        assert stat.S_IMODE(password_file.stat().st_mode) == 0o600
        doctor = json.loads(run_cli("doctor", "--json", env=env).stdout)
        states = {row["engine"]: row for row in doctor}
        assert states["neo4j"]["state"] == "up" and "5.26" in states["neo4j"]["detail"]
        assert states["gds"]["state"] == "up" and "2.13" in states["gds"]["detail"]

        second = run_cli("neo4j", "start", env=env)
        assert_one_line_error(second, "already running", str(tmp_path / "neo4j" / "data"))

        init = run_cli("init", env=env)
        wanted = len(SCHEMA) + len(VECTOR_INDEXES)  # the vector indexes too: embeddings are on by default
        assert init.returncode == 0 and f"{wanted} created" in init.stdout, init.stdout + init.stderr
        again = run_cli("init", env=env)
        assert f"0 created, {wanted} already present" in again.stdout
    finally:
        stopped = run_cli("neo4j", "stop", env=env)
    assert stopped.returncode == 0 and "stopped Neo4j" in stopped.stdout
    assert not is_alive(status["pid"])
    assert run_cli("neo4j", "status", env=env).returncode == 3


def test_port_in_use_is_refused(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = run_cli("neo4j", "start", env=runtime_env(tmp_path, LAKEGRAPH_NEO4J__BOLT_PORT=str(port)))
    assert_one_line_error(result, f"port {port}", "in use")


def test_wrong_password_is_one_clear_line(neo4j_service: Neo4jService, tmp_path: Path) -> None:
    env = clean_env(LAKEGRAPH_NEO4J__URI=neo4j_service.uri, LAKEGRAPH_NEO4J__PASSWORD="wrong", LAKEGRAPH_STATE_DIR=str(tmp_path))
    assert_one_line_error(run_cli("init", env=env), "refused user 'neo4j'", "neo4j.password")


def test_unreachable_neo4j_is_one_clear_line(tmp_path: Path) -> None:
    uri = f"bolt://127.0.0.1:{free_port()}"
    env = clean_env(LAKEGRAPH_NEO4J__URI=uri, LAKEGRAPH_STATE_DIR=str(tmp_path))
    assert_one_line_error(run_cli("init", env=env), uri, "unreachable")


def test_no_local_runtime_says_how_to_start_one(tmp_path: Path) -> None:
    assert_one_line_error(run_cli("init", env=clean_env(LAKEGRAPH_STATE_DIR=str(tmp_path))), "lakegraph neo4j start")


def _bin_with(tmp_path: Path, *tools: str) -> str:
    """A PATH holding only the named tools (and lakegraph's own Python)."""
    folder = tmp_path / "bin"
    folder.mkdir()
    for tool in tools:
        os.symlink(shutil.which(tool), folder / tool)
    return f"{folder}:{Path(LAKEGRAPH).parent}"


def test_no_java_is_one_clear_line(tmp_path: Path) -> None:
    env = runtime_env(tmp_path, PATH=_bin_with(tmp_path))
    env.pop("JAVA_HOME", None)
    assert_one_line_error(run_cli("neo4j", "start", env=env), "Java not found", "JAVA_HOME")


def test_no_maven_on_first_start_is_one_clear_line(tmp_path: Path) -> None:
    env = runtime_env(tmp_path / "state", PATH=_bin_with(tmp_path, "java"), LAKEGRAPH_CACHE_DIR=str(tmp_path / "empty-cache"))
    env.pop("JAVA_HOME", None)
    assert_one_line_error(run_cli("neo4j", "start", env=env), "Maven not found", "apt-get install maven")


def test_maven_central_unreachable_on_first_start_is_one_clear_line(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".m2").mkdir(parents=True)
    (home / ".m2" / "settings.xml").write_text(  # offline, with an empty local repository
        f"<settings><offline>true</offline><localRepository>{tmp_path / 'repo'}</localRepository></settings>"
    )
    env = runtime_env(tmp_path / "state", MAVEN_OPTS=f"-Duser.home={home}", LAKEGRAPH_CACHE_DIR=str(tmp_path / "empty-cache"))
    try:
        assert_one_line_error(run_cli("neo4j", "start", env=env), "could not resolve Neo4j", "Maven Central")
    finally:
        run_cli("neo4j", "stop", env=env)
    assert not list((tmp_path / "empty-cache").glob("maven/neo4j-*"))  # nothing half-resolved is kept


RESOLVE_AND_REPORT = """
import json, sys
from pathlib import Path
from worker.runtime import maven
jars = maven.resolve(Path(sys.argv[1]))
print(json.dumps({"lib_dir": str(jars.lib_dir), "inode": jars.lib_dir.stat().st_ino}))
"""


def test_two_first_starts_at_once_share_one_resolution(tmp_path: Path) -> None:
    """A fresh cache resolved by two processes at once: the second waits for the first and takes
    its folder, which is never replaced under the process already using it."""
    cache = tmp_path / "cache"
    command = [str(Path(LAKEGRAPH).parent / "python"), "-c", RESOLVE_AND_REPORT, str(cache)]
    first, second = (subprocess.Popen(command, stdout=subprocess.PIPE, text=True) for _ in range(2))
    reports = [json.loads(process.communicate(timeout=240)[0]) for process in (first, second)]
    assert first.returncode == second.returncode == 0
    lib_dir = Path(reports[0]["lib_dir"])
    assert reports[0] == reports[1] and lib_dir.stat().st_ino == reports[0]["inode"]
    assert (lib_dir / ".complete").exists() and list(lib_dir.glob("org.neo4j.gds.*.jar"))
    assert [path.name for path in cache.iterdir() if path.name.startswith(".resolving-")] == []
