"""pypdf's own warnings (an xref it repaired, an object it ignored) as the parse's problems, never
on the user's terminal.

pypdf logs them on its `pypdf` logger, which no one configures, so Python's last-resort handler
printed each to stderr (thousands on a folder of broken files). Importing this module takes that
logger over: every record goes to lakegraph's log at debug level, and while `collected()` is open
in a thread, that thread's records are also kept for the parse it guards.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager

log = logging.getLogger(__name__)
_local = threading.local()


class _Collector(logging.Handler):
    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        log.debug("pypdf: %s", message)
        found: list[str] | None = getattr(_local, "found", None)
        if found is not None:
            found.append(message)


_pypdf = logging.getLogger("pypdf")
_pypdf.addHandler(_Collector())
_pypdf.setLevel(logging.WARNING)  # counted whatever the root logger's level
_pypdf.propagate = False


@contextmanager
def collected() -> Iterator[list[str]]:
    """The messages pypdf logs in this thread while the block runs."""
    found: list[str] = []
    _local.found = found
    try:
        yield found
    finally:
        _local.found = None
