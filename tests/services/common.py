"""A started service process: wait for readiness, stop it even when a test failed."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

from worker.runtime.processes import stop_pid, tail, wait_until


@dataclass
class ServiceProcess:
    name: str
    process: subprocess.Popen
    log: Path

    def wait_ready(self, ready, timeout: float) -> None:
        wait_until(
            ready, timeout, self.name,
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
            argv, stdout=handle, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env, cwd=cwd,
            start_new_session=True,
        )
    return ServiceProcess(name, process, log)
