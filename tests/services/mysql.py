"""A real MariaDB server for the tests (Debian's `mariadb-server` package): a fresh data folder on a
free loopback port with performance_schema on (the statement digests are lakegraph's MySQL query
log), its root account without a password."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from worker.runtime.processes import free_port, stop_pid

SERVER = "mariadbd"
INSTALL = "mariadb-install-db"
STARTUP_SECONDS = 60


def installed() -> bool:
    return shutil.which(SERVER, path=f"{os.environ.get('PATH', '')}:/usr/sbin") is not None and shutil.which(INSTALL) is not None


@dataclass
class MariaDBServer:
    root: Path
    port: int
    process: subprocess.Popen | None = None

    def url_of(self, database: str, user: str = "root") -> str:
        return f"mysql://{user}@127.0.0.1:{self.port}/{database}"

    def start(self) -> None:
        server = shutil.which(SERVER, path=f"{os.environ.get('PATH', '')}:/usr/sbin") or SERVER
        argv = [
            server,
            "--no-defaults",
            f"--datadir={self.root / 'data'}",
            f"--port={self.port}",
            "--bind-address=127.0.0.1",
            f"--socket={self.root / 'socket'}",
            f"--pid-file={self.root / 'pid'}",
            f"--log-error={self.root / 'error.log'}",
            "--performance-schema=ON",
            "--skip-log-bin",
        ]
        if os.geteuid() == 0:
            argv.append("--user=root")
        self.process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self._wait_ready()

    def _wait_ready(self) -> None:
        import pymysql

        deadline = time.monotonic() + STARTUP_SECONDS
        while True:
            try:
                pymysql.connect(host="127.0.0.1", port=self.port, user="root", connect_timeout=2).close()
                return
            except pymysql.err.OperationalError:
                if (self.process is not None and self.process.poll() is not None) or time.monotonic() > deadline:
                    log = (self.root / "error.log").read_text(errors="replace")[-2000:] if (self.root / "error.log").exists() else ""
                    raise RuntimeError(f"MariaDB did not start on port {self.port}:\n{log}") from None
                time.sleep(0.2)

    def restart(self) -> None:
        """A clean shutdown and a start: performance_schema begins again, empty."""
        self.stop()
        self.start()

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                stop_pid(self.process.pid, timeout=5)
        self.process = None

    def remove(self) -> None:
        try:
            self.stop()
        finally:
            shutil.rmtree(self.root, ignore_errors=True)


def start() -> MariaDBServer:
    """A new data folder, installed and started; `remove` it after."""
    root = Path(tempfile.mkdtemp(prefix="lakegraph-mariadb-"))
    argv = [INSTALL, "--no-defaults", f"--datadir={root / 'data'}", "--auth-root-authentication-method=normal", "--skip-test-db"]
    if os.geteuid() == 0:
        argv.append("--user=root")
    subprocess.run(argv, check=True, capture_output=True, timeout=120)
    server = MariaDBServer(root, free_port())
    server.start()
    return server
