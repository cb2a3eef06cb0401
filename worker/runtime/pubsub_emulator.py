"""Google's Pub/Sub emulator (shipped with the gcloud CLI), started directly as its Java server.

The gcloud wrapper leaves its Java child behind when killed, so the server script is run instead.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from worker.exceptions import LakegraphError
from worker.runtime.processes import free_port
from worker.runtime.services import ServiceProcess, listening, spawn

READY_TIMEOUT = 60.0
SDK_FALLBACKS = (Path("/usr/lib/google-cloud-sdk"), Path("/usr/share/google-cloud-sdk"))


def emulator_script() -> Path:
    roots = list(SDK_FALLBACKS)
    gcloud = shutil.which("gcloud")
    if gcloud:
        found = subprocess.run([gcloud, "info", "--format=value(installation.sdk_root)"], capture_output=True, text=True).stdout.strip()
        if found:
            roots.insert(0, Path(found))
    for root in roots:
        script = root / "platform" / "pubsub-emulator" / "bin" / "cloud-pubsub-emulator"
        if script.exists():
            return script
    raise LakegraphError("Google's Pub/Sub emulator was not found: install the gcloud CLI with its pubsub-emulator component")


def start(workdir: Path) -> tuple[ServiceProcess, str]:
    """Start the emulator; returns the process and its host:port for PUBSUB_EMULATOR_HOST."""
    port = free_port()
    data = workdir / "pubsub-data"
    data.mkdir(parents=True, exist_ok=True)
    service = spawn(
        "Pub/Sub emulator",
        [str(emulator_script()), "--host=127.0.0.1", f"--port={port}", f"--data-dir={data}"],
        workdir / "pubsub-emulator.log",
    )
    service.wait_ready(lambda: listening(port), READY_TIMEOUT)
    return service, f"127.0.0.1:{port}"
