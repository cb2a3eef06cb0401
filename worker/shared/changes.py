"""What the graph just changed, announced on a Redis stream every serving replica reads.

A writer announces a `Change` after its transaction committed: which source moved and, when it
knows, which documents or tables (`keys`; empty means anything of that source). Replicas read the
stream from where they were (`XREAD`), so each one hears every change whichever worker made it,
and a replica that lost Redis for a while resumes from its last entry and re-checks what its
subscribers watch. A writer that cannot reach its Redis keeps what it could not announce and sends
it with its next announcement; past `MAX_PENDING_KEYS` it widens them to "anything of that
source", so nothing is dropped, only made coarser. With no Redis at all (the command line on its
own) there is nobody to tell, and nothing is kept.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from worker.exceptions import LakegraphError
from worker.graph.stamps import SourceName

if TYPE_CHECKING:
    import redis

    from worker.settings import Settings

log = logging.getLogger(__name__)
STREAM = "lakegraph:changes"
STREAM_LENGTH = 10_000  # entries kept (approximately): a replica away longer re-checks everything
MAX_PENDING_KEYS = 10_000
ChangeSource = SourceName | Literal["themes"]


@dataclass(frozen=True)
class Change:
    source: ChangeSource
    keys: tuple[str, ...] = ()  # document URIs or table ids the change touched; () is all of the source

    def encode(self) -> dict[Any, Any]:  # redis-py types stream fields loosely
        return {"source": self.source, "keys": json.dumps(self.keys)}

    @classmethod
    def decode(cls, fields: dict[bytes, bytes]) -> Change:
        return cls(fields[b"source"].decode(), tuple(json.loads(fields.get(b"keys", b"[]"))))  # type: ignore[arg-type]


Announce = Callable[[Change], None]


class Announcer:
    """Appends changes to the stream; what fails to go out is retried with the next one. The
    first failure in a row is a warning, the rest are quiet until one goes out again."""

    def __init__(self, connect: Callable[[], redis.Redis]) -> None:
        self.connect = connect
        self.client: redis.Redis | None = None
        self.pending: dict[ChangeSource, set[str] | None] = {}  # None: the whole source
        self.failing = False
        self.lock = threading.Lock()

    def __call__(self, change: Change) -> None:
        with self.lock:
            self._hold(change)
            self._flush()

    def _hold(self, change: Change) -> None:
        if not change.keys:
            self.pending[change.source] = None
            return
        held = self.pending.setdefault(change.source, set())
        if held is not None:
            held.update(change.keys)
            if len(held) > MAX_PENDING_KEYS:
                self.pending[change.source] = None

    def _flush(self) -> None:
        import redis

        try:
            self.client = self.client or self.connect()
        except LakegraphError as absent:
            # No Redis at all (none configured, the embedded one not running): there is no stream,
            # so no replica can be listening; a replica that later finds Redis reads everything again.
            log.debug("changes not announced: %s", absent)
            self.pending.clear()
            return
        try:
            pipe = self.client.pipeline(transaction=False)
            for source, keys in self.pending.items():
                pipe.xadd(STREAM, Change(source, tuple(sorted(keys or ()))).encode(), maxlen=STREAM_LENGTH, approximate=True)
            pipe.execute()
        except redis.RedisError as failed:
            self.client = None
            log.log(logging.DEBUG if self.failing else logging.WARNING, "changes not announced yet (%s); they go out with the next one", failed)
            self.failing = True
            return
        self.pending.clear()
        self.failing = False


def announcer(settings: Settings) -> Announcer:
    """An announcer on the broker's Redis, found when the first change is announced."""
    from worker.runtime import redis_server

    return Announcer(lambda: redis_server.broker_client(settings, timeout=2.0))
