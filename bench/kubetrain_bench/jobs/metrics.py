"""The operator's own /metrics: its reconciles, and where a job's pass waits (its histograms)."""

from __future__ import annotations

import collections
import urllib.request
from collections.abc import Iterable
from typing import Any

from prometheus_client.parser import text_string_to_metric_families


def operator_samples(metrics_port: int) -> list[Any]:
    with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=5) as r:
        return samples_of(r.read().decode())


def samples_of(exposition: str) -> list[Any]:
    """Every sample of a Prometheus text exposition."""
    return [s for family in text_string_to_metric_families(exposition) for s in family.samples]


def operator_reconciles(samples: Iterable[Any]) -> dict[str, float]:
    out: dict[str, float] = collections.defaultdict(float)
    for s in samples:
        if s.name == "controller_runtime_reconcile_total":
            out[s.labels.get("result", "?")] += s.value
    return dict(out)


# Where a job's pass spends its time, from the operator's own histograms: (figure, metric, label).
WAITS: tuple[tuple[str, str, dict[str, str]], ...] = (
    ("queue wait: changes", "workqueue_queue_duration_seconds", {"priority": "0"}),
    ("first passes", "workqueue_queue_duration_seconds", {"priority": "-100"}),
    ("reconcile", "controller_runtime_reconcile_time_seconds", {}),
    ("PATCH", "rest_client_request_duration_seconds", {"verb": "PATCH"}),
    ("POST", "rest_client_request_duration_seconds", {"verb": "POST"}),
)


def operator_waits(samples: Iterable[Any], since: Iterable[Any] = ()) -> dict[str, dict[str, float]]:
    """p50/p99 and count of each of :data:`WAITS` (of what was observed after ``since``, an earlier
    scrape), interpolated in its buckets as Prometheus' ``histogram_quantile`` does."""
    samples, since = list(samples), list(since)
    out: dict[str, dict[str, float]] = {}
    for what, metric, labels in WAITS:
        buckets: dict[float, float] = collections.defaultdict(float)
        for sign, scrape in ((1, samples), (-1, since)):
            for s in scrape:
                if s.name == f"{metric}_bucket" and labels.items() <= s.labels.items():
                    buckets[float(s.labels["le"])] += sign * s.value
        ordered = sorted(buckets.items())
        if ordered and ordered[-1][1]:
            out[what] = {
                "count": ordered[-1][1],
                **{f"p{q * 100:g}": histogram_quantile(q, ordered) for q in (0.5, 0.99)},
            }
    return out


def histogram_quantile(q: float, buckets: list[tuple[float, float]]) -> float:
    """``buckets``: (upper bound, cumulative count) in order, the last one +Inf."""
    rank = q * buckets[-1][1]
    lower, below = 0.0, 0.0
    for bound, count in buckets:
        if count >= rank:
            if bound == float("inf"):
                return lower  # past the largest finite bound: Prometheus answers with it too
            return lower + (bound - lower) * (rank - below) / ((count - below) or 1)
        lower, below = bound, count
    return lower
