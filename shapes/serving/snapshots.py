"""The whole answers that cursors are walking, kept for a while by the serving process.

A first page that had to be cut leaves its whole answer here under a fresh id that its cursor
carries; the pages after it are cut from that same snapshot, so a walk costs one computation and
reads one consistent state of the graph. A snapshot older than `TTL`, or pushed out by newer
ones, is simply recomputed — the cursor's own check of its last row keeps that walk exact.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections import OrderedDict
from typing import Any

TTL = 300.0  # seconds a snapshot serves its cursors
KEPT = 16  # snapshots at most (a large outline can be tens of MB)


class Snapshots:
    def __init__(self) -> None:
        self._kept: OrderedDict[str, tuple[float, str, Any]] = OrderedDict()
        self._lock = threading.Lock()

    def keep(self, call: str, whole: Any) -> str:
        """Keep `whole` for the call with this hash; the id its cursors carry."""
        sid = secrets.token_urlsafe(6)
        with self._lock:
            self._kept[sid] = (time.monotonic(), call, whole)
            while len(self._kept) > KEPT:
                self._kept.popitem(last=False)
        return sid

    def get(self, sid: str, call: str) -> Any | None:
        with self._lock:
            found = self._kept.get(sid)
            if found is None:
                return None
            kept_at, kept_call, whole = found
            if time.monotonic() - kept_at > TTL:
                del self._kept[sid]
                return None
            if kept_call != call:
                return None
            self._kept.move_to_end(sid)
            return whole
