"""The one percentile every benchmark reports (nearest rank)."""

from __future__ import annotations


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]
