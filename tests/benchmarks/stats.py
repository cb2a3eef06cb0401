"""The one percentile every benchmark reports (nearest rank), and the one way to time a call."""

from __future__ import annotations

import time
from collections.abc import Callable


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def timed(call: Callable[[], object], count: int, warmup: int = 10, before: Callable[[], None] = lambda: None) -> list[float]:
    """Milliseconds of `count` calls after `warmup` untimed ones; `before` runs, untimed, ahead of each."""
    for _ in range(warmup):
        before()
        call()
    samples = []
    for _ in range(count):
        before()
        began = time.perf_counter()
        call()
        samples.append((time.perf_counter() - began) * 1000)
    return samples
