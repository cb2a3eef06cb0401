"""`lakegraph up`: the whole stack as supervised child processes, stopped cleanly on SIGINT/SIGTERM.

Local engines (Neo4j + GDS, Redis) start only where none is configured. Children that crash are
restarted with backoff; every child dies with the supervisor (PR_SET_PDEATHSIG), so even a killed
supervisor leaves no orphan JVM or redis-server behind.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from worker.graph.connection import connect
from worker.graph.setup import apply_schema
from worker.runtime import neo4j_server, redis_server
from worker.runtime.processes import die_with_parent, stop_pid, wait_until
from worker.settings import Settings
from worker.watching import WATCHING

CHILD_STOP_TIMEOUT = 4.0
WORKER_READY_TIMEOUT = 60.0
SOURCE_READY_TIMEOUT = 60.0
MAX_BACKOFF = 30.0
HEALTHY_AFTER = 60.0  # a child that ran this long has its backoff reset


@dataclass
class Child:
    """One supervised process and its restart bookkeeping."""

    name: str
    argv: list[str]
    # What the kernel sends it if the supervisor dies. The Celery worker is killed outright: its warm
    # shutdown waits on a broker that died with the same supervisor (it outlived a 15 s wait under
    # load), and acks_late gives its task back.
    orphan_signal: signal.Signals = signal.SIGTERM
    # It turns outside changes into tasks (the file watcher, the Pub/Sub subscriber): started after
    # a one-shot load, so its catch-up finds the graph current rather than redoing the load beside it.
    source: bool = False
    live_line: str = ""  # what a source prints once changes made from now on reach it ("" : at once)
    process: subprocess.Popen | None = None
    log_from: int = 0  # where this start's output begins in its log
    restarts: int = 0
    started_at: float = 0.0
    next_start: float = 0.0


@dataclass
class Stack:
    settings: Settings
    env: dict[str, str]
    say: Callable[[str], None]
    children: list[Child] = field(default_factory=list)
    owns_neo4j: bool = False
    owns_redis: bool = False
    stopping: threading.Event = field(default_factory=threading.Event)
    started: bool = False

    @property
    def logs_dir(self) -> Path:
        return self.settings.state_path / "logs"

    def start_engines(self) -> None:
        if not self.settings.neo4j.uri and (already := neo4j_server.status(self.settings)) is not None:
            # started by `lakegraph neo4j start` (a first load before the stack, say): used, and left running
            self.say(f"neo4j   local runtime {already.uri} (pid {already.pid}), already running: used, and left running")
        elif not self.settings.neo4j.uri:
            began = time.monotonic()
            running = neo4j_server.start(self.settings, supervised=True)
            self.owns_neo4j = True
            self.say(f"neo4j   local runtime {running.uri} (pid {running.pid}) in {time.monotonic() - began:.1f} s")
        if not self.settings.redis.url.get_secret_value():
            redis = redis_server.start(self.settings, supervised=True)
            self.owns_redis = True
            self.say(f"redis   embedded {redis.url} (pid {redis.pid})")
        driver, where = connect(self.settings)
        with driver:
            report = apply_schema(self.settings, driver, where.database)
        self.say(f"schema  {len(report.created)} created, {len(report.existing)} already present")

    def spawn(self, child: Child) -> None:
        self.logs_dir.mkdir(parents=True, exist_ok=True)
        with open(self.log_of(child), "ab") as log:
            child.log_from = log.tell()
            child.process = subprocess.Popen(
                child.argv,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=self.env,
                preexec_fn=partial(die_with_parent, child.orphan_signal),
            )
        child.started_at = time.monotonic()

    def wait_for_workers(self) -> None:
        """`ready` means a Celery worker answers, not merely that its process exists."""
        from worker.celery_app import (
            create_app,  # Celery is slow to import; only `up` needs it here
        )

        app = create_app(self.settings)
        worker = next(child for child in self.children if child.name == "worker")
        wait_until(
            lambda: bool(app.control.ping(timeout=0.5)),
            WORKER_READY_TIMEOUT,
            "the Celery worker",
            alive=lambda: worker.process is not None and worker.process.poll() is None,
            why_dead=lambda: f" (see {self.logs_dir / 'worker.log'})",
        )

    def warm_up(self) -> None:
        """Plan the edit path's queries now, not in the first edit after a (re)start."""
        from worker.components import Components  # the documents code: only the warm-up needs it here

        began = time.monotonic()
        try:
            with Components.open(self.settings) as components:
                warmed = components.documents.warm_up()
        except Exception as err:  # a document gone, Neo4j busy: the first edit is merely slower
            self.say(f"warm-up skipped ({type(err).__name__}: {str(err)[:200]})")
            return
        if warmed:
            self.say(f"warm-up the edit path planned in {time.monotonic() - began:.1f} s")

    def log_of(self, child: Child) -> Path:
        return self.logs_dir / f"{child.name}.log"

    def _live(self, child: Child) -> bool:
        """Whether the source printed, since it started, that it sees changes made from now on."""
        with open(self.log_of(child), "rb") as log:
            log.seek(child.log_from)
            return child.live_line.encode() in log.read()

    def wait_for_sources(self) -> None:
        """`ready` means an edit made now is seen: wait until each source says it is live."""
        for child in self.children:
            if child.source and child.live_line:
                wait_until(
                    partial(self._live, child),
                    SOURCE_READY_TIMEOUT,
                    f"the {child.name} process",
                    alive=partial(_running, child),
                    why_dead=partial(str, f" (see {self.log_of(child)})"),
                )

    def watch(self) -> None:
        """Restart children that exit, with exponential backoff, until asked to stop."""
        while not self.stopping.wait(0.5):
            for child in self.children:
                if child.process is not None and child.process.poll() is not None:
                    code = child.process.returncode
                    child.process = None
                    if time.monotonic() - child.started_at > HEALTHY_AFTER:
                        child.restarts = 0
                    delay = min(2.0**child.restarts, MAX_BACKOFF)
                    child.restarts += 1
                    child.next_start = time.monotonic() + delay
                    self.say(f"{child.name} exited with {code}; restarting in {delay:.0f} s")
                if child.process is None and time.monotonic() >= child.next_start:
                    self.spawn(child)

    def shutdown(self) -> None:
        self.stopping.set()
        for child in self.children:
            if child.process is not None and child.process.poll() is None:
                child.process.send_signal(signal.SIGTERM)
        for child in self.children:
            if child.process is not None:
                stop_pid(child.process.pid, CHILD_STOP_TIMEOUT)
                child.process.wait()
        stoppers = []
        if self.owns_redis:
            stoppers.append(threading.Thread(target=redis_server.stop, args=(self.settings,)))
        if self.owns_neo4j:
            stoppers.append(threading.Thread(target=neo4j_server.stop, args=(self.settings,)))
        for thread in stoppers:
            thread.start()
        for thread in stoppers:
            thread.join()


def _running(child: Child) -> bool:
    return child.process is not None and child.process.poll() is None


def child_env(settings: Settings) -> dict[str, str]:
    """Children read the same settings: pin the state folder (and user file) by absolute path."""
    env = {**os.environ, "LAKEGRAPH_STATE_DIR": str(settings.state_path)}
    if settings.user_file is not None:
        env["LAKEGRAPH_CONFIG"] = str(Path(settings.user_file).resolve())
    return env


def children(settings: Settings, serve: bool = False) -> list[Child]:
    celery = [sys.executable, "-m", "celery", "-A"]
    schedule = settings.state_path / "celerybeat-schedule"
    found = [
        Child("worker", [*celery, "worker.celery_app", "worker", "--loglevel", settings.log_level, "--hostname", "lakegraph@%h"], orphan_signal=signal.SIGKILL),
        Child("beat", [*celery, "worker.celery_app:beat_app", "beat", "--loglevel", settings.log_level, "--schedule", str(schedule)]),
    ]
    found.append(Child("watch", [sys.executable, "-m", "worker.watch"], source=True, live_line=WATCHING))  # lean: not the whole CLI
    if settings.pubsub.subscription or settings.storage.subscription:
        found.append(Child("subscribe", [sys.executable, "-m", "worker.cli", "subscribe"], source=True))
    if serve:
        found.append(Child("serve", [sys.executable, "-m", "worker.cli", "serve", "--mcp", "http", "--http"]))
    return found


def run(
    settings: Settings,
    say: Callable[[str], None],
    ready: Callable[[Stack], None],
    serve: bool = False,
    load: Callable[[Stack], None] | None = None,
) -> None:
    """Start everything, call `ready`, supervise until SIGINT/SIGTERM, then stop everything.
    `load` (the demo's one-shot load) runs once the worker answers, before the sources start."""
    stack = Stack(settings, child_env(settings), say, children(settings, serve))

    def request_stop(signum: int, _frame: object) -> None:
        stack.stopping.set()
        if not stack.started:  # abort a start-up in progress; `finally` cleans up
            raise KeyboardInterrupt

    previous = {sig: signal.signal(sig, request_stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        stack.start_engines()
        for child in stack.children:
            if not child.source:
                stack.spawn(child)
        stack.wait_for_workers()
        if load is not None:
            load(stack)
        stack.warm_up()
        for child in stack.children:
            if child.source:
                stack.spawn(child)
        stack.wait_for_sources()
        stack.started = True
        ready(stack)
        stack.watch()
        say("stopping")
    finally:
        began = time.monotonic()
        stack.shutdown()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        say(f"stopped in {time.monotonic() - began:.1f} s")
