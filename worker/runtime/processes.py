"""Child-process plumbing shared by the local runtimes: pid records, free ports, waiting, stopping."""

from __future__ import annotations

import ctypes
import json
import os
import signal
import socket
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from worker.exceptions import LakegraphError

PR_SET_PDEATHSIG = 1


@dataclass(frozen=True)
class PidRecord:
    """What a running runtime left in its state folder so other commands can find and stop it."""

    pid: int
    address: str
    started_at: float
    settings: str = ""  # a server's: the fingerprint of the settings it answers with (shapes/serving/running_server.py)

    def write(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(asdict(self)))
        tmp.replace(path)

    @classmethod
    def read(cls, path: Path) -> PidRecord | None:
        """The record if its process still runs; a stale record is removed."""
        try:
            record = cls(**json.loads(path.read_text()))
        except (OSError, ValueError, TypeError):
            return None
        if not is_alive(record.pid):
            path.unlink(missing_ok=True)
            return None
        return record


def is_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie child still answers kill(0); reap it if it is ours
        done, _ = os.waitpid(pid, os.WNOHANG)
        return done == 0
    except ChildProcessError:
        return _not_zombie(pid)


def _not_zombie(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def port_in_use(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return True
        return False


def die_with_parent(sig: signal.Signals = signal.SIGTERM) -> None:
    """preexec_fn: have the kernel send `sig` to the child if its supervisor dies, so no orphan stays."""
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, sig)


def wait_until(
    ready: Callable[[], bool],
    timeout: float,
    what: str,
    alive: Callable[[], bool] = lambda: True,
    why_dead: Callable[[], str] = lambda: "",
) -> None:
    """Poll `ready` until it is true; fail early and clearly if the process died meanwhile."""
    deadline = time.monotonic() + timeout
    delay = 0.05
    while True:
        if ready():
            return
        if not alive():
            raise LakegraphError(f"{what} exited during start-up{why_dead()}")
        if time.monotonic() > deadline:
            raise LakegraphError(f"{what} did not become ready within {timeout:.0f} s{why_dead()}")
        time.sleep(delay)
        delay = min(delay * 1.5, 0.5)


def stop_pid(pid: int, timeout: float) -> bool:
    """SIGTERM, wait up to `timeout`, then SIGKILL. True when it stopped gracefully."""
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return True
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not is_alive(pid):
            return True
        time.sleep(0.05)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        return True
    while is_alive(pid):
        time.sleep(0.02)
    return False


def tail(path: Path, lines: int = 5) -> str:
    try:
        content = path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return ""
    return "\n".join(content[-lines:])
