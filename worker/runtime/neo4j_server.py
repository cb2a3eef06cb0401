"""The local Neo4j 5.26 + GDS runtime: a JVM that lakegraph starts and stops, data under the state folder.

It runs Neo4j's own server entry point with the Maven-resolved jars on the classpath, and the GDS
jars in the plugins folder so their procedures register, exactly like a packaged server would.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from neo4j import GraphDatabase
from neo4j.exceptions import AuthError, ServiceUnavailable

from worker.exceptions import LakegraphError
from worker.runtime import maven, memory
from worker.runtime.processes import (
    PidRecord,
    die_with_parent,
    free_port,
    port_in_use,
    stop_pid,
    tail,
    wait_until,
)
from worker.settings import GCS_SCHEME, Settings

ENTRY_POINT = "org.neo4j.server.CommunityEntryPoint"
ADMIN_TOOL = "org.neo4j.cli.AdminTool"
LOCAL_USER = "neo4j"
HOST = "127.0.0.1"
STOP_TIMEOUT = 8.0

JVM_FLAGS = [
    "-XX:+UseG1GC",
    "-XX:-OmitStackTraceInFastThrow",
    "-XX:+DisableExplicitGC",
    "-Djdk.nio.maxCachedBufferSize=1024",
    "-Dio.netty.tryReflectionSetAccessible=true",
    "-Dlog4j2.disable.jmx=true",
    "--add-opens=java.base/java.nio=ALL-UNNAMED",
    "--add-opens=java.base/java.io=ALL-UNNAMED",
    "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
    "--add-opens=java.base/java.lang=ALL-UNNAMED",
    "--enable-native-access=ALL-UNNAMED",
]


@dataclass(frozen=True)
class Neo4jHome:
    """The runtime's folder layout under lakegraph's state folder."""

    root: Path

    @classmethod
    def of(cls, settings: Settings) -> Neo4jHome:
        return cls(settings.state_path / "neo4j")

    @property
    def conf_dir(self) -> Path:
        return self.root / "conf"

    @property
    def plugins_dir(self) -> Path:
        return self.root / "plugins"

    @property
    def data_dir(self) -> Path:
        return self.root / "data"

    @property
    def logs_dir(self) -> Path:
        return self.root / "logs"

    @property
    def pid_file(self) -> Path:
        return self.root / "run" / "lakegraph-neo4j.json"

    @property
    def password_file(self) -> Path:
        return self.root / "password"

    @property
    def console_log(self) -> Path:
        return self.logs_dir / "console.log"


@dataclass(frozen=True)
class LocalNeo4j:
    """A running local runtime, as recorded in its pid file."""

    pid: int
    uri: str
    password: str
    started_at: float
    heap: str = ""  # the sizes it was started with (known to the process that started it)
    pagecache: str = ""


def password(home: Neo4jHome) -> str:
    """The runtime's password: generated once, stored with mode 0600."""
    if home.password_file.exists():
        return home.password_file.read_text().strip()
    home.root.mkdir(parents=True, exist_ok=True)
    value = secrets.token_hex(24)  # hex: never starts with "-", which the admin tool would take for an option
    fd = os.open(home.password_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(value)
    return value


def status(settings: Settings) -> LocalNeo4j | None:
    home = Neo4jHome.of(settings)
    record = PidRecord.read(home.pid_file)
    if record is None:
        return None
    return LocalNeo4j(record.pid, record.address, password(home), record.started_at)


def start(settings: Settings, supervised: bool = False) -> LocalNeo4j:
    """Start the runtime and wait until Bolt answers. `supervised` ties its life to this process."""
    home = Neo4jHome.of(settings)
    running = status(settings)
    if running is not None:
        raise LakegraphError(f"Neo4j is already running on {home.data_dir} (pid {running.pid}, {running.uri}); stop it with `lakegraph neo4j stop`")
    jars = maven.resolve(settings.cache_path / "maven")
    port = settings.neo4j.bolt_port or free_port(HOST)
    if port_in_use(port, HOST):
        raise LakegraphError(f"port {port} on {HOST} is in use; set neo4j.bolt_port to a free port, or 0")
    secret = password(home)
    folders = [Path(library.root) for library in settings.documents.libraries if not library.root.startswith(GCS_SCHEME)]
    store = memory.expected_store(memory.store_bytes(home.data_dir), memory.source_bytes(folders))
    machine = memory.physical_memory()
    pagecache = memory.pagecache_for(settings.neo4j.pagecache_size, store, machine)
    heap = memory.heap_for(settings.neo4j.heap_size, store, machine, pagecache)
    _prepare_home(home, jars, port, secret, pagecache, settings.neo4j.server_config)
    command = [
        str(jars.java),
        f"-Xms{heap}",
        f"-Xmx{heap}",
        *JVM_FLAGS,
        "-cp",
        jars.classpath,
        ENTRY_POINT,
        f"--home-dir={home.root}",
        f"--config-dir={home.conf_dir}",
    ]
    env = {**os.environ, "NEO4J_HOME": str(home.root), "NEO4J_CONF": str(home.conf_dir)}
    with open(home.console_log, "ab") as log:
        process = subprocess.Popen(
            command,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            cwd=home.root,
            start_new_session=not supervised,
            preexec_fn=die_with_parent if supervised else None,
        )
    uri = f"bolt://{HOST}:{port}"
    PidRecord(process.pid, uri, time.time()).write(home.pid_file)
    try:
        wait_until(
            lambda: _answers(uri, secret),
            settings.neo4j.start_timeout,
            "Neo4j",
            alive=lambda: process.poll() is None,
            why_dead=lambda: _why(home),
        )
    except BaseException:
        stop_pid(process.pid, STOP_TIMEOUT)
        home.pid_file.unlink(missing_ok=True)
        raise
    return LocalNeo4j(process.pid, uri, secret, time.time(), heap, pagecache)


def stop(settings: Settings) -> LocalNeo4j | None:
    """Stop the runtime if it runs; returns what was stopped."""
    running = status(settings)
    if running is None:
        return None
    stop_pid(running.pid, STOP_TIMEOUT)
    Neo4jHome.of(settings).pid_file.unlink(missing_ok=True)
    return running


def _prepare_home(home: Neo4jHome, jars: maven.RuntimeJars, port: int, secret: str, pagecache: str, extra: dict[str, str]) -> None:
    for folder in (home.conf_dir, home.plugins_dir, home.data_dir, home.logs_dir, home.pid_file.parent):
        folder.mkdir(parents=True, exist_ok=True)
    for stale in home.plugins_dir.glob("*.jar"):
        stale.unlink()
    for jar in jars.gds_jars:
        (home.plugins_dir / jar.name).symlink_to(jar)
    (home.conf_dir / "neo4j.conf").write_text(_config(home, port, pagecache, extra))
    if not (home.data_dir / "dbms").exists():
        result = subprocess.run(
            [str(jars.java), "-cp", jars.classpath, ADMIN_TOOL, "dbms", "set-initial-password", secret],
            capture_output=True,
            text=True,
            env={**os.environ, "NEO4J_HOME": str(home.root), "NEO4J_CONF": str(home.conf_dir)},
        )
        if result.returncode != 0:
            raise LakegraphError(f"could not set the Neo4j password: {(result.stderr or result.stdout).strip()[:300]}")


def _config(home: Neo4jHome, port: int, pagecache: str, extra: dict[str, str]) -> str:
    settings: dict[str, object] = {
        "server.default_listen_address": HOST,
        "server.bolt.listen_address": f"{HOST}:{port}",
        "server.bolt.advertised_address": f"{HOST}:{port}",
        "server.http.enabled": "false",
        "server.https.enabled": "false",
        "server.directories.data": home.data_dir,
        "server.directories.logs": home.logs_dir,
        "server.directories.plugins": home.plugins_dir,
        "server.directories.run": home.pid_file.parent,
        "server.directories.import": home.root / "import",
        "dbms.security.auth_enabled": "true",
        "dbms.security.procedures.unrestricted": "gds.*",
        "dbms.usage_report.enabled": "false",
        "server.memory.pagecache.size": pagecache,
        # stop within the supervisor's 10 s budget: don't linger on idle Bolt connections
        "db.shutdown_transaction_end_timeout": "2s",
        "internal.server.bolt.connection_shutdown_wait_time": "1s",
        "internal.server.bolt.thread_pool_shutdown_wait_time": "1s",
    }
    if owned := sorted(extra.keys() & settings.keys()):
        raise LakegraphError(f"neo4j.server_config cannot set {', '.join(owned)}: lakegraph writes it for the local runtime")
    header = "# Written by lakegraph at each start of the local runtime; edits are overwritten.\n"
    return header + "".join(f"{key}={value}\n" for key, value in {**settings, **extra}.items())


def _answers(uri: str, secret: str) -> bool:
    try:
        with GraphDatabase.driver(uri, auth=(LOCAL_USER, secret), connection_timeout=2) as driver, driver.session() as session:
            session.run("RETURN 1").consume()  # a plain session: execute_query would retry for a minute
        return True
    except (ServiceUnavailable, OSError):
        return False
    except AuthError as err:
        raise LakegraphError(f"the local Neo4j refused the stored password ({err.message}); remove the state folder's neo4j/ to start afresh") from None


def _why(home: Neo4jHome) -> str:
    for log in (home.logs_dir / "neo4j.log", home.console_log):
        lines = [line for line in tail(log, 40).splitlines() if "ERROR" in line or "Exception" in line]
        if lines:
            return f": {lines[-1].strip()[:300]} (see {log})"
    return f" (see {home.logs_dir})"
