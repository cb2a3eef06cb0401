"""Answers kept while the part of the graph they read has not changed.

A shape reads its version — a source's stamp, which every write of that source bumps in its own
transaction — with one cheap query, and recomputes only what was asked under another version.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

V = TypeVar("V")


class Versioned(Generic[V]):
    def __init__(self, kept: int) -> None:
        self.kept = kept  # answers kept for one version (one per distinct call)
        self._version: Hashable = None
        self._values: dict[Hashable, V] = {}
        self._lock = threading.Lock()

    def get(self, version: Hashable, key: Hashable, compute: Callable[[], V]) -> V:
        with self._lock:
            if version != self._version:
                self._version, self._values = version, {}
            if key in self._values:
                return self._values[key]
        value = compute()
        with self._lock:
            if version == self._version:
                if len(self._values) >= self.kept:  # the oldest answer makes room
                    del self._values[next(iter(self._values))]
                self._values[key] = value
        return value
