"""A real PostgreSQL server for the tests (Debian's `postgresql` package): a fresh cluster on a
free loopback port, with pg_stat_statements loaded, trust authentication for its superuser.

PostgreSQL refuses to run as root; under root the cluster belongs to the `postgres` user the
package creates, and its commands run as that user.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from worker.runtime.processes import free_port

INITDB = "/usr/lib/postgresql/*/bin/initdb"
SUPERUSER = "lakegraph"
SETTINGS = {
    "listen_addresses": "127.0.0.1",
    "shared_preload_libraries": "pg_stat_statements",
    "pg_stat_statements.track": "top",
    "fsync": "off",  # a test cluster: nothing to keep after a crash
}


def installed() -> bool:
    return bool(glob.glob(INITDB))


def binaries() -> Path:
    """The newest installed server's bin folder."""
    found = sorted(glob.glob(INITDB), key=lambda path: int(Path(path).parent.parent.name))
    if not found:
        raise RuntimeError("PostgreSQL is not installed: apt-get install postgresql (the tests start their own cluster)")
    return Path(found[-1]).parent


@dataclass
class PostgresServer:
    data: Path
    port: int

    @property
    def url(self) -> str:
        return f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/postgres"

    def url_of(self, database: str, user: str = SUPERUSER) -> str:
        return f"postgresql://{user}@127.0.0.1:{self.port}/{database}"

    def _ctl(self, *args: str) -> None:
        options = f"-p {self.port} -k {self.data}" + "".join(f" -c {name}={value}" for name, value in SETTINGS.items())
        _as_owner([str(binaries() / "pg_ctl"), "-D", str(self.data), "-o", options, "-l", str(self.data / "server.log"), "-w", *args])

    def start(self) -> None:
        self._ctl("start")

    def restart(self) -> None:
        """A clean restart: pg_stat_statements saves its statistics at shutdown and reads them back."""
        self._ctl("-m", "fast", "restart")

    def stop(self) -> None:
        self._ctl("-m", "fast", "stop")

    def remove(self) -> None:
        """Stopped, and its cluster deleted."""
        try:
            self.stop()
        finally:
            shutil.rmtree(self.data, ignore_errors=True)


def _as_owner(argv: list[str]) -> None:
    if os.geteuid() == 0:
        argv = ["runuser", "-u", "postgres", "--", *argv]
    subprocess.run(argv, check=True, capture_output=True, timeout=120)


def start() -> PostgresServer:
    """A new cluster in a folder of its own (pytest's are root's alone), started; `remove` it after."""
    data = Path(tempfile.mkdtemp(prefix="lakegraph-postgres-"))
    if os.geteuid() == 0:
        shutil.chown(data, "postgres")
    _as_owner([str(binaries() / "initdb"), "-D", str(data), "-A", "trust", "-U", SUPERUSER, "-E", "UTF8", "--no-sync", "--no-instructions"])
    server = PostgresServer(data, free_port())
    server.start()
    return server
