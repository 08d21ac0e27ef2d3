"""Figures from what the benchmark's watches saw: latencies of a wave of creates, each job's status
lag behind its pods, and when a wave's pods were created and ran."""

from __future__ import annotations

import collections
from collections.abc import Iterable, Mapping
from typing import Any

from kubetrain_bench.jobs.common import BOUND
from kubetrain_bench.jobs.watches import Waiter
from kubetrain_bench.stats import percentiles


def status_lags(
    jobs: Waiter, pods: Waiter, names: Iterable[str], job_state: str, pod_state: str, pods_per_job: int | None
) -> list[float]:
    """Per job: job first seen in ``job_state`` minus its last pod first seen in ``pod_state``.

    With ``pods_per_job``, a job counts once that many of its pods reached ``pod_state`` (all
    Running); without, once any did (the Master that finished the job).
    """
    by_job: dict[str, list[float]] = collections.defaultdict(list)
    for pod, job in pods.job.items():
        t = pods.first.get(pod, {}).get(pod_state)
        if t is not None:
            by_job[job].append(t)
    lags = []
    for name in names:
        seen = jobs.first.get(name, {}).get(job_state)
        times = by_job.get(name, [])
        if seen is None or not times or (pods_per_job and len(times) < pods_per_job):
            continue
        lags.append(seen - (max(times) if pods_per_job else min(times)))
    return lags


def wave(
    sent: Mapping[str, float], done: Mapping[str, float], started: float, created: float
) -> dict[str, Any]:
    """The figures of one batch of creates: wall time to the last one done, and per-object latency."""
    finished = max(done.values())
    return {
        "count": len(sent),
        "create_seconds": created - started,
        "seconds": finished - started,
        "per_second": len(sent) / (finished - started),
        "latency": percentiles(done[n] - sent[n] for n in sent),
    }


def pods_of(pods: Waiter, jobs: set[str]) -> list[str]:
    """The pods the watch has seen of ``jobs``."""
    return [p for p, job in pods.job.items() if job in jobs]


def pod_timeline(pods: Waiter, jobs: set[str], started: float) -> dict[str, float]:
    """When the jobs' pods were first seen (created) and seen Running: half of them, and all.

    It tells the operator's part (making the pods) from the cluster's (running them)."""
    mine = pods_of(pods, jobs)
    seen = sorted(min(pods.first[p].values()) - started for p in mine)
    running = sorted(pods.first[p]["Running"] - started for p in mine if "Running" in pods.first[p])
    if not seen or not running:
        return {}
    return {
        "created_p50": seen[len(seen) // 2],
        "created_all": seen[-1],
        "running_p50": running[len(running) // 2],
        "running_all": running[-1],
    }


def binds(pods: Waiter, names: Iterable[str], started: float) -> dict[str, float]:
    """kube-scheduler's pace for ``names``: how many it bound, when the last was bound (from the
    phase's start), and its binds per second from its first bind to its last."""
    bound = sorted(pods.first[p][BOUND] for p in names if BOUND in pods.first.get(p, {}))
    if len(bound) < 2:
        return {}
    return {
        "count": len(bound),
        "bound_all": bound[-1] - started,
        "per_second": (len(bound) - 1) / ((bound[-1] - bound[0]) or 1e-9),
    }
