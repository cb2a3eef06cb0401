"""The access audit: one JSON line per served call — when, who (subject and client), with which
grant, what (the shape or resource and its parameters), and the outcome (ok, refused with the
shape's reason, denied by the grant, or a token rejected with the reason). Never the token: the
parameters are the shape's own, and a rejected token is described, not quoted.

Written through a rotating file handler (`auth.audit_max_bytes`, `auth.audit_backups` old files);
`lakegraph audit` reads the current file and its rotations back, oldest first.
"""

from __future__ import annotations

import json
import logging
import logging.handlers
import threading
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from shapes.serving.identity import Caller
    from worker.settings import Settings

Outcome = Literal["ok", "refused", "denied", "rejected", "error"]
MAX_VALUE = 300  # characters of one parameter kept (a long SQL text is cut, marked so)


@dataclass(frozen=True)
class Entry:
    at: str
    subject: str
    client: str
    grants: list[str]
    surface: str  # http, mcp, page
    action: str  # a shape, "read <uri>", "subscribe <uri>", or the path a rejected token asked for
    outcome: Outcome
    reason: str = ""
    params: dict[str, Any] = field(default_factory=dict)


class Audit:
    def __init__(self, path: Path, max_bytes: int, backups: int) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.handler = logging.handlers.RotatingFileHandler(path, maxBytes=max_bytes, backupCount=backups, encoding="utf-8")
        self.lock = threading.Lock()

    @classmethod
    def of(cls, settings: Settings) -> Audit:
        return cls(settings.access_audit_path, settings.auth.audit_max_bytes, settings.auth.audit_backups)

    def record(self, caller: Caller | None, surface: str, action: str, outcome: Outcome, reason: str = "", params: Mapping[str, Any] | None = None) -> None:
        entry = Entry(
            at=datetime.now(UTC).isoformat(timespec="milliseconds"),
            subject=caller.subject if caller else "",
            client=caller.client if caller else "",
            grants=list(caller.grant.names) if caller else [],
            surface=surface,
            action=action,
            outcome=outcome,
            reason=reason[:MAX_VALUE],
            params={name: _kept(value) for name, value in (params or {}).items() if value is not None},
        )
        line = logging.makeLogRecord({"msg": json.dumps(asdict(entry), default=str), "levelno": logging.INFO, "levelname": "INFO"})
        with self.lock:
            self.handler.emit(line)

    def close(self) -> None:
        self.handler.close()


def _kept(value: Any) -> Any:
    if isinstance(value, str) and len(value) > MAX_VALUE:
        return value[:MAX_VALUE] + f"… ({len(value)} characters)"
    return value


def entries(path: Path) -> Iterator[dict[str, Any]]:
    """Every entry of the audit file and its rotations, oldest first (a line cut by a crash is skipped)."""
    rotated = sorted(path.parent.glob(path.name + ".*"), key=lambda old: int(old.suffix[1:]) if old.suffix[1:].isdigit() else 0, reverse=True)
    for file in [*rotated, path]:
        if not file.is_file():
            continue
        with file.open(encoding="utf-8") as lines:
            for line in lines:
                try:
                    yield json.loads(line)
                except ValueError:
                    continue
