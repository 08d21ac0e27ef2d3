"""A wave of TrainingJobs: created at the benchmark's concurrency and waited for until all are Running."""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

from kubetrain.operator.runtime import client
from kubetrain_bench.console import log
from kubetrain_bench.jobs.bodies import QUEUE, job_body
from kubetrain_bench.jobs.timings import binds, pod_timeline, pods_of, status_lags, wave
from kubetrain_bench.jobs.watches import Watches, wait_all
from kubetrain_bench.stats import percentiles


async def jobs_wave(
    w: Watches, prefix: str, args: argparse.Namespace, alive: Callable[[], None]
) -> tuple[dict[str, Any], list[str]]:
    """Create ``--jobs`` TrainingJobs and wait until all are Running: the figures, and their names."""
    spaces = w.namespaces
    bodies = [
        job_body(
            f"{prefix}-{i:05d}",
            args.replicas,
            spaces[i % len(spaces)],
            args.host_names,
            args.framework,
            args.ps,
            args.progress,
            QUEUE if args.kueue else None,
        )
        for i in range(args.jobs)
    ]
    names = [b["metadata"]["name"] for b in bodies]
    started = time.perf_counter()
    await w.create(client.TRAININGJOBS, bodies, args.concurrency)
    created = time.perf_counter()
    log(f"  created {len(bodies)} TrainingJobs in {created - started:.1f}s")
    await wait_all(w.jobs, names, "Running", "TrainingJobs", started, args.timeout, alive)
    sent = {name: w.sent[name] for name in names}
    figures = wave(sent, w.jobs.done_at(names, "Running"), started, created)
    figures["status_lag"] = percentiles(
        status_lags(w.jobs, w.pods, names, "Running", "Running", args.replicas)
    )
    jobs = set(names)
    figures["pods"] = pod_timeline(w.pods, jobs, started)
    figures["binds"] = binds(w.pods, pods_of(w.pods, jobs), started)
    return figures, names
