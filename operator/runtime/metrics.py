"""Prometheus metrics under the names controller-runtime uses, plus kubetrain's job counters.

Dashboards and alerts written for controller-runtime operators work unchanged:
``controller_runtime_reconcile_total{controller,result}``, the reconcile-time histogram,
``workqueue_*`` per queue, ``leader_election_master_status``, and client-go's
``rest_client_requests_total{code,method}`` and ``rest_client_request_duration_seconds{verb}`` (the
time on the wire, after the client's own rate limit). kubetrain adds
``kubetrain_jobs_{created,succeeded,failed,restarted}_total{framework,namespace}``, and
``kubetrain_goodput_seconds_total{framework,namespace,cause}``: the jobs' wall time as their
``status.goodput`` accounts it, productive or lost by cause (seven causes: the series are the
job counters' times seven, never one per job). The share of a namespace's time that was
productive is ``sum by (namespace) (rate(kubetrain_goodput_seconds_total{cause="productive"}[1h]))
/ sum by (namespace) (rate(kubetrain_goodput_seconds_total[1h]))``.
``kubetrain_remembered_entries{owner,map}`` counts what the process keeps per job between passes
(its memory, expectations, tombstones, progress reads, the work queue's keys, Events to aggregate):
each empties with the jobs, which the churn benchmark checks.
Everything lives in :data:`REGISTRY`, served at ``/metrics``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

__all__ = ["REGISTRY", "QueueMetrics", "remember"]

REGISTRY = CollectorRegistry()

_BUCKETS = (
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.15,
    0.2,
    0.25,
    0.3,
    0.35,
    0.4,
    0.45,
    0.5,
    0.6,
    0.7,
    0.8,
    0.9,
    1.0,
    1.25,
    1.5,
    1.75,
    2.0,
    2.5,
    3.0,
    3.5,
    4.0,
    4.5,
    5,
    6,
    7,
    8,
    9,
    10,
    15,
    20,
    25,
    30,
    40,
    50,
    60,
)

RECONCILE_TOTAL = Counter(
    "controller_runtime_reconcile_total",
    "Reconciliations per controller and result.",
    ["controller", "result"],
    registry=REGISTRY,
)
RECONCILE_ERRORS = Counter(
    "controller_runtime_reconcile_errors_total",
    "Reconciliation errors per controller.",
    ["controller"],
    registry=REGISTRY,
)
TERMINAL_ERRORS = Counter(
    "controller_runtime_terminal_reconcile_errors_total",
    "Terminal reconciliation errors per controller.",
    ["controller"],
    registry=REGISTRY,
)
RECONCILE_TIME = Histogram(
    "controller_runtime_reconcile_time_seconds",
    "Time per reconciliation.",
    ["controller"],
    buckets=_BUCKETS,
    registry=REGISTRY,
)
MAX_CONCURRENT = Gauge(
    "controller_runtime_max_concurrent_reconciles",
    "Workers per controller.",
    ["controller"],
    registry=REGISTRY,
)
ACTIVE_WORKERS = Gauge(
    "controller_runtime_active_workers", "Workers reconciling now.", ["controller"], registry=REGISTRY
)

WORKQUEUE_DEPTH = Gauge("workqueue_depth", "Current depth of the work queue.", ["name"], registry=REGISTRY)
WORKQUEUE_ADDS = Counter(
    "workqueue_adds_total", "Adds handled by the work queue.", ["name"], registry=REGISTRY
)
WORKQUEUE_LATENCY = Histogram(
    "workqueue_queue_duration_seconds",
    "Time a key waits before it is processed, by the priority it was handed out at.",
    ["name", "priority"],
    buckets=_BUCKETS,
    registry=REGISTRY,
)
WORKQUEUE_WORK = Histogram(
    "workqueue_work_duration_seconds",
    "Time processing a key takes.",
    ["name"],
    buckets=_BUCKETS,
    registry=REGISTRY,
)
WORKQUEUE_RETRIES = Counter("workqueue_retries_total", "Rate-limited requeues.", ["name"], registry=REGISTRY)
WORKQUEUE_UNFINISHED = Gauge(
    "workqueue_unfinished_work_seconds", "Seconds of work in progress.", ["name"], registry=REGISTRY
)
WORKQUEUE_LONGEST = Gauge(
    "workqueue_longest_running_processor_seconds",
    "Longest running key, in seconds.",
    ["name"],
    registry=REGISTRY,
)

REST_CLIENT_REQUESTS = Counter(
    "rest_client_requests_total",
    "Requests to the apiserver by status code (0: no answer) and method.",
    ["code", "method"],
    registry=REGISTRY,
)
REST_CLIENT_LATENCY = Histogram(
    "rest_client_request_duration_seconds",
    "Time from sending a request to its whole answer, by verb.",
    ["verb"],
    buckets=_BUCKETS,
    registry=REGISTRY,
)

LEADER = Gauge("leader_election_master_status", "1 while this process leads.", ["name"], registry=REGISTRY)

JOBS_CREATED = Counter(
    "kubetrain_jobs_created_total",
    "TrainingJobs seen created.",
    ["framework", "namespace"],
    registry=REGISTRY,
)
JOBS_SUCCEEDED = Counter(
    "kubetrain_jobs_succeeded_total",
    "TrainingJobs that succeeded.",
    ["framework", "namespace"],
    registry=REGISTRY,
)
JOBS_FAILED = Counter(
    "kubetrain_jobs_failed_total", "TrainingJobs that failed.", ["framework", "namespace"], registry=REGISTRY
)
JOBS_RESTARTED = Counter(
    "kubetrain_jobs_restarted_total", "TrainingJob restarts.", ["framework", "namespace"], registry=REGISTRY
)
GOODPUT_SECONDS = Counter(
    "kubetrain_goodput_seconds_total",
    "TrainingJobs' wall time as status.goodput accounts it, by cause: productive, or lost (queued, "
    "starting, restarting, redone, hung, checkpointing).",
    ["framework", "namespace", "cause"],
    registry=REGISTRY,
)


class QueueMetrics:
    """The work queue's hooks, reported under ``name``."""

    def __init__(self, name: str) -> None:
        self._depth = WORKQUEUE_DEPTH.labels(name)
        self._adds = WORKQUEUE_ADDS.labels(name)
        self._name = name
        self._work = WORKQUEUE_WORK.labels(name)
        self._retries = WORKQUEUE_RETRIES.labels(name)

    def added(self) -> None:
        self._adds.inc()

    def depth(self, depth: int) -> None:
        self._depth.set(depth)

    def started(self, waited: float, priority: int) -> None:
        WORKQUEUE_LATENCY.labels(self._name, str(priority)).observe(waited)

    def finished(self, worked: float) -> None:
        self._work.observe(worked)

    def retried(self) -> None:
        self._retries.inc()


class _Remembered(Collector):
    """``kubetrain_remembered_entries``, read from its owners when scraped."""

    def __init__(self) -> None:
        self.owners: dict[str, Callable[[], Mapping[str, int]]] = {}

    def collect(self) -> Iterator[Metric]:
        family = GaugeMetricFamily(
            "kubetrain_remembered_entries",
            "Entries a per-job map of this process holds; each empties with the jobs.",
            labels=["owner", "map"],
        )
        for owner, sizes in list(self.owners.items()):
            for name, size in sizes().items():
                family.add_metric([owner, name], size)
        yield family


_REMEMBERED = _Remembered()
REGISTRY.register(_REMEMBERED)


def remember(owner: str, sizes: Callable[[], Mapping[str, int]]) -> None:
    """Report ``sizes()`` (map name -> entries) under ``owner``; a later owner of the name replaces it."""
    _REMEMBERED.owners[owner] = sizes
