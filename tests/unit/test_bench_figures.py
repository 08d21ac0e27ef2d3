"""The jobs benchmark's figures from the operator's histograms read as Prometheus reads them."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry, Histogram
from prometheus_client.exposition import generate_latest

from kubetrain_bench.jobs import metrics


def test_a_quantile_is_interpolated_inside_its_bucket() -> None:
    buckets = [(0.1, 50.0), (0.5, 90.0), (1.0, 100.0), (float("inf"), 100.0)]
    assert metrics.histogram_quantile(0.5, buckets) == pytest.approx(0.1)
    assert metrics.histogram_quantile(0.7, buckets) == pytest.approx(0.3)
    assert metrics.histogram_quantile(0.99, buckets) == pytest.approx(0.95)


def test_a_quantile_past_the_largest_bound_is_that_bound() -> None:
    assert metrics.histogram_quantile(0.99, [(1.0, 10.0), (float("inf"), 20.0)]) == 1.0


class Operator:
    """The operator's request-latency histogram, in a registry of its own, and its scrapes."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.latency = Histogram(
            "rest_client_request_duration_seconds", "", ["verb"], buckets=(0.1, 1.0), registry=self.registry
        )

    def scrape(self) -> list[object]:
        return list(metrics.samples_of(generate_latest(self.registry).decode()))


def test_the_waits_are_read_per_verb_from_the_exposition() -> None:
    op = Operator()
    for seconds in (0.05, 0.05, 0.5, 0.5):
        op.latency.labels("PATCH").observe(seconds)
    op.latency.labels("POST").observe(5.0)

    waits = metrics.operator_waits(op.scrape())

    assert set(waits) == {"PATCH", "POST"}  # no queue or reconcile histogram in this exposition
    assert waits["PATCH"]["count"] == 4
    assert waits["PATCH"]["p50"] == pytest.approx(0.1)
    assert waits["PATCH"]["p99"] == pytest.approx(0.1 + 0.9 * (3.96 - 2) / 2)
    assert waits["POST"]["p99"] == 1.0


def test_the_waits_of_a_later_phase_are_what_was_observed_since_an_earlier_scrape() -> None:
    op = Operator()
    for _ in range(100):
        op.latency.labels("PATCH").observe(0.05)  # the first phase: fast
    since = op.scrape()
    for _ in range(10):
        op.latency.labels("PATCH").observe(0.5)  # the later one: slow

    waits = metrics.operator_waits(op.scrape(), since)

    assert waits["PATCH"]["count"] == 10
    assert waits["PATCH"]["p50"] > 0.1
