"""Percentiles of measured values, one definition for every benchmark.

Python's ``statistics.quantiles`` with the inclusive method (a straight line between the two
nearest values, as numpy's default); a single value is every percentile of itself.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable


def cut_points(values: Iterable[float]) -> list[float]:
    """The 99 percentiles (p1 ... p99) of ``values``, which must not be empty."""
    ordered = sorted(values)
    if len(ordered) == 1:
        return ordered * 99
    return statistics.quantiles(ordered, n=100, method="inclusive")


def percentile(values: Iterable[float], q: int) -> float:
    """The ``q``-th percentile (1-99) of ``values``; 0.0 when there are none."""
    ordered = sorted(values)
    return cut_points(ordered)[q - 1] if ordered else 0.0


def percentiles(values: Iterable[float]) -> dict[str, float]:
    """p50, p95, p99, max and count of ``values``; empty when there are none."""
    ordered = sorted(values)
    if not ordered:
        return {}
    q = cut_points(ordered)
    return {"p50": q[49], "p95": q[94], "p99": q[98], "max": ordered[-1], "count": len(ordered)}
