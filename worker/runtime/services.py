"""A started emulator process (Pub/Sub, BigQuery, Cloud Storage): wait for readiness, stop it even
when its user (a test, `lakegraph demo --google`) failed."""

from __future__ import annotations

import shutil
import socket
import subprocess
from dataclasses import dataclass
from pathlib import Path

from worker.exceptions import LakegraphError
from worker.runtime.processes import die_with_parent, stop_pid, tail, wait_until


@dataclass
class ServiceProcess:
    name: str
    process: subprocess.Popen
    log: Path

    def wait_ready(self, ready, timeout: float) -> None:
        wait_until(
            ready,
            timeout,
            self.name,
            alive=lambda: self.process.poll() is None,
            why_dead=lambda: f":\n{tail(self.log, 15)}",
        )

    def stop(self) -> None:
        if self.process.poll() is None:
            stop_pid(self.process.pid, 10.0)
        self.process.wait()


def spawn(name: str, argv: list[str], log: Path, env: dict[str, str] | None = None, cwd: Path | None = None) -> ServiceProcess:
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as handle:
        process = subprocess.Popen(
            argv,
            stdout=handle,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            cwd=cwd,
            start_new_session=True,
            preexec_fn=die_with_parent,  # a killed demo or test run leaves no emulator behind
        )
    return ServiceProcess(name, process, log)


def ensure_venv(venv: Path, python: str, packages: list[str], what: str) -> Path:
    """A venv of its own for a service (its pins may fight ours), created and filled on first use;
    returns its bin folder. A marker names the packages, so a change of pins rebuilds it."""
    marker = venv / ".lakegraph-complete"
    if marker.exists() and marker.read_text() == "\n".join(packages):
        return venv / "bin"
    shutil.rmtree(venv, ignore_errors=True)
    subprocess.run([python, "-m", "venv", str(venv)], check=True)
    result = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", *packages], capture_output=True, text=True)
    if result.returncode != 0:
        raise LakegraphError(f"could not install {what}: {result.stderr.strip()[-500:]}")
    marker.write_text("\n".join(packages))
    return venv / "bin"


def listening(port: int) -> bool:
    """Something accepts connections on this loopback port."""
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0
