"""Answers kept while the part of the graph they read has not changed.

A shape reads its version — a source's stamp, which every write of that source bumps in its own
transaction — with one cheap query, and recomputes only what was asked under another version.
When full, the answer that was quickest to compute makes room: a column's two-way coverage (seconds
over 100,000 values) outlives a stream of one-document answers asked once each.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from time import perf_counter
from typing import Generic, TypeVar

V = TypeVar("V")


class Versioned(Generic[V]):
    def __init__(self, kept: int) -> None:
        self.kept = kept  # answers kept for one version (one per distinct call)
        self._version: Hashable = None
        self._values: dict[Hashable, tuple[V, float]] = {}  # each answer, with the seconds it took
        self._lock = threading.Lock()

    def get(self, version: Hashable, key: Hashable, compute: Callable[[], V]) -> V:
        with self._lock:
            if version != self._version:
                self._version, self._values = version, {}
            if key in self._values:
                return self._values[key][0]
        began = perf_counter()
        value = compute()
        cost = perf_counter() - began
        with self._lock:
            if version == self._version:
                if len(self._values) >= self.kept and key not in self._values:
                    del self._values[min(self._values, key=lambda kept: self._values[kept][1])]
                self._values[key] = (value, cost)
        return value
