"""A running `lakegraph serve --http` that the command line can hand a shape call to.

`serve` publishes `serve/address.json` under the state folder once it listens — its URL, its pid
and a fingerprint of the settings that decide answers — and withdraws it on exit. A read command
started with the same settings sends its call there and prints the answer the server renders,
which is the answer it would have computed itself: it skips starting the graph's clients (the
driver and the shapes' code are most of a one-shot call's start) and shares the server's kept
answers. Any doubt — no file, a dead pid, other settings, a refused connection, a wrong token —
and the command answers by itself. It imports the stdlib and the pid records (http.client only
when there is a server to ask), so looking costs a command next to nothing.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode, urlsplit

from shapes.spec.exceptions import BY_STATUS
from worker.exceptions import LakegraphError
from worker.runtime.processes import PidRecord

if TYPE_CHECKING:
    from shapes.spec import ShapeSpec
    from worker.settings import Settings

# Settings that do not change an answer: where this process listens, how it logs, its own folders
# (the address file is in the state folder, so both sides share it already).
NOT_IN_ANSWERS = {"serve", "log_level", "state_dir", "cache_dir"}
CALL_TIMEOUT = 600.0  # seconds: a connection is refused at once; an answer may take a while
WILDCARDS = {"0.0.0.0": "127.0.0.1", "::": "::1"}  # a bound socket's wildcard addresses, reached on loopback


class ServerGone(Exception):
    """The server could not take the call (gone, restarted with another token, not the API)."""


def token_file(settings: Settings) -> Path:
    return settings.state_path / "serve" / "token"


def address_file(settings: Settings) -> Path:
    return settings.state_path / "serve" / "address.json"


def fingerprint(settings: Settings) -> str:
    """Equal for two processes whose answers are equal: every setting but NOT_IN_ANSWERS."""
    answering = settings.model_dump(mode="json", exclude=NOT_IN_ANSWERS)
    return hashlib.sha256(json.dumps(answering, sort_keys=True).encode()).hexdigest()


def publish(settings: Settings, host: str, port: int) -> None:
    """Once the socket listens; a wildcard bind is reached on loopback."""
    reachable = WILDCARDS.get(host, host)
    url = f"http://[{reachable}]:{port}" if ":" in reachable else f"http://{reachable}:{port}"
    PidRecord(os.getpid(), url, time.time(), fingerprint(settings)).write(address_file(settings))


def withdraw(settings: Settings) -> None:
    """Removed only if it is still this process's (another server may have started since)."""
    found = PidRecord.read(address_file(settings))
    if found is not None and found.pid == os.getpid():
        address_file(settings).unlink(missing_ok=True)


def find(settings: Settings) -> PidRecord | None:
    """The published server, if it is alive (a stale record is removed) and answers with these settings."""
    if not settings.serve.cli_via_server:
        return None
    found = PidRecord.read(address_file(settings))
    return found if found is not None and found.settings == fingerprint(settings) else None


def stored_token(settings: Settings) -> str | None:
    """The token the server demands: configured, or the one a server stored; None when neither
    can be read (making one is the server's: shapes/serving/serve.py)."""
    configured = settings.serve.token.get_secret_value()
    if configured:
        return configured
    try:
        return token_file(settings).read_text().strip()
    except OSError:
        return None


def ask(server: PidRecord, token: str, spec: ShapeSpec, raw: dict[str, Any], as_json: bool) -> str:
    """The server's answer to the call as the command prints it (text, or the JSON document).
    A refusal raises ShapeError and an engine the server cannot reach LakegraphError, with the
    server's words; anything else that stops the call raises ServerGone."""
    import http.client  # only when a server is there: with its email parser, 10-20 ms of a start

    params = {**raw, "format": "json" if as_json else "text"}
    parts = urlsplit(server.address)
    headers = {"Authorization": f"Bearer {token}"}
    if spec.method == "POST":
        path, body = spec.path, json.dumps(params).encode()
        headers["Content-Type"] = "application/json"
    else:
        path, body = f"{spec.path}?{urlencode(_query(params), doseq=True)}", None
    connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=CALL_TIMEOUT)
    try:
        connection.request(spec.method, path, body=body, headers=headers)
        response = connection.getresponse()
        text = response.read().decode()
    except (OSError, http.client.HTTPException) as failed:
        raise ServerGone(str(failed)) from None
    finally:
        connection.close()
    if response.status == 200:
        return text
    if response.status in BY_STATUS or response.status == 503:
        error = _error(text)
        raise BY_STATUS[response.status](error) if response.status in BY_STATUS else LakegraphError(error)
    raise ServerGone(f"HTTP {response.status}")


def _query(params: dict[str, Any]) -> dict[str, Any]:
    """A GET's values as the API reads them back: booleans as true/false, lists repeated."""
    return {name: str(value).lower() if isinstance(value, bool) else value for name, value in params.items()}


def _error(text: str) -> str:
    try:
        return str(json.loads(text)["error"])
    except (ValueError, KeyError, TypeError):
        return text
