"""The jobs benchmark's figures from the operator's histograms read as Prometheus reads them."""

from __future__ import annotations

import types

import pytest
from prometheus_client import CollectorRegistry, Histogram
from prometheus_client.exposition import generate_latest
from prometheus_client.parser import text_string_to_metric_families
from testkit import bench as testkit_bench


@pytest.fixture(scope="module")
def bench() -> types.ModuleType:
    return testkit_bench.load("jobs_bench")


def test_a_quantile_is_interpolated_inside_its_bucket(bench: types.ModuleType) -> None:
    buckets = [(0.1, 50.0), (0.5, 90.0), (1.0, 100.0), (float("inf"), 100.0)]
    assert bench.histogram_quantile(0.5, buckets) == pytest.approx(0.1)
    assert bench.histogram_quantile(0.7, buckets) == pytest.approx(0.3)
    assert bench.histogram_quantile(0.99, buckets) == pytest.approx(0.95)


def test_a_quantile_past_the_largest_bound_is_that_bound(bench: types.ModuleType) -> None:
    assert bench.histogram_quantile(0.99, [(1.0, 10.0), (float("inf"), 20.0)]) == 1.0


def test_the_waits_are_read_per_verb_from_the_exposition(bench: types.ModuleType) -> None:
    registry = CollectorRegistry()
    latency = Histogram(
        "rest_client_request_duration_seconds", "", ["verb"], buckets=(0.1, 1.0), registry=registry
    )
    for seconds in (0.05, 0.05, 0.5, 0.5):
        latency.labels("PATCH").observe(seconds)
    latency.labels("POST").observe(5.0)
    text = generate_latest(registry).decode()
    samples = [s for f in text_string_to_metric_families(text) for s in f.samples]

    waits = bench.operator_waits(samples)

    assert set(waits) == {"PATCH", "POST"}  # no queue or reconcile histogram in this exposition
    assert waits["PATCH"]["count"] == 4
    assert waits["PATCH"]["p50"] == pytest.approx(0.1)
    assert waits["PATCH"]["p99"] == pytest.approx(0.1 + 0.9 * (3.96 - 2) / 2)
    assert waits["POST"]["p99"] == 1.0


def test_the_waits_of_a_later_phase_are_what_was_observed_since_an_earlier_scrape(
    bench: types.ModuleType,
) -> None:
    registry = CollectorRegistry()
    latency = Histogram(
        "rest_client_request_duration_seconds", "", ["verb"], buckets=(0.1, 1.0), registry=registry
    )

    def scrape() -> list[object]:
        text = generate_latest(registry).decode()
        return [s for f in text_string_to_metric_families(text) for s in f.samples]

    for _ in range(100):
        latency.labels("PATCH").observe(0.05)  # the first phase: fast
    since = scrape()
    for _ in range(10):
        latency.labels("PATCH").observe(0.5)  # the later one: slow

    waits = bench.operator_waits(scrape(), since)

    assert waits["PATCH"]["count"] == 10
    assert waits["PATCH"]["p50"] > 0.1
