"""fake-gcs-server (github.com/fsouza/fake-gcs-server): Cloud Storage's JSON API on loopback, with
bucket notification configs that publish object events to the Pub/Sub emulator. Built once with
`go install` into the cache (Go from the machine; the module from the Go module proxy)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from worker.exceptions import LakegraphError
from worker.runtime.processes import free_port
from worker.runtime.services import ServiceProcess, listening, spawn
from worker.shared.google_clients import PUBSUB_EMULATOR_ENV

MODULE = "github.com/fsouza/fake-gcs-server"
VERSION = "v1.56.1"
READY_TIMEOUT = 30.0
GO_FALLBACK = Path("/usr/local/go/bin/go")


def ensure_binary(cache: Path) -> Path:
    """The server binary, installed on first use."""
    folder = cache / "go-bin" / VERSION
    binary = folder / "fake-gcs-server"
    if binary.exists():
        return binary
    go = shutil.which("go") or (str(GO_FALLBACK) if GO_FALLBACK.exists() else None)
    if go is None:
        raise LakegraphError("Go is needed to build fake-gcs-server (the Cloud Storage emulator): install Go 1.24 or later")
    folder.mkdir(parents=True, exist_ok=True)
    result = subprocess.run([go, "install", f"{MODULE}@{VERSION}"], env={**os.environ, "GOBIN": str(folder)}, capture_output=True, text=True)
    if result.returncode != 0 or not binary.exists():
        raise LakegraphError(f"could not build fake-gcs-server: {result.stderr.strip()[-500:]}")
    return binary


def start(workdir: Path, cache: Path, pubsub_host: str) -> tuple[ServiceProcess, str]:
    """Start the server (objects in memory, notifications to the Pub/Sub emulator at
    `pubsub_host`); returns the process and its endpoint for the storage client."""
    port = free_port()
    endpoint = f"http://127.0.0.1:{port}"
    service = spawn(
        "fake-gcs-server",
        [
            str(ensure_binary(cache)),
            "-scheme=http",
            "-host=127.0.0.1",
            f"-port={port}",
            "-backend=memory",
            f"-external-url={endpoint}",
            f"-public-host=127.0.0.1:{port}",
            "-log-level=warn",
        ],
        workdir / "fake-gcs-server.log",
        env={**os.environ, PUBSUB_EMULATOR_ENV: pubsub_host},
    )
    service.wait_ready(lambda: listening(port), READY_TIMEOUT)
    return service, endpoint
