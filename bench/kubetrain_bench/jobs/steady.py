"""The steady state: the operator's CPU while nothing changes, then single changes timed one by one."""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Callable
from typing import Any

from kubetrain.api import naming
from kubetrain.devcluster import cluster as devcluster
from kubetrain_bench.console import log
from kubetrain_bench.jobs.common import BenchTimeoutError
from kubetrain_bench.jobs.metrics import operator_reconciles, operator_samples
from kubetrain_bench.jobs.requests import request_rows, request_totals
from kubetrain_bench.jobs.watches import Watches, wait_all
from kubetrain_bench.procs import control_plane_cpu, cpu_delta, proc_figures
from kubetrain_bench.stats import percentiles


async def steady(
    w: Watches,
    c: devcluster.Cluster,
    pid: int,
    metrics_port: int,
    running: list[str],
    args: argparse.Namespace,
    alive: Callable[[], None],
) -> dict[str, Any]:
    """The operator's CPU while nothing changes, then how fast a change to one job shows. With
    ``--progress`` the jobs' progress moves meanwhile (only the pods are waited quiet): the window's
    control-plane CPU and the operator's requests then say what reading and writing it costs."""
    log(f"steady state: {len(running)} running jobs; waiting for {args.quiet:.0f}s without a change")
    waited = time.perf_counter()

    def last_change() -> float:
        return w.pods.changed_at if args.progress else max(w.pods.changed_at, w.jobs.changed_at)

    while time.perf_counter() - last_change() < args.quiet:
        if time.perf_counter() - waited > args.timeout:
            raise BenchTimeoutError(f"pods or jobs still changing after {args.timeout:.0f}s")
        alive()
        await asyncio.sleep(1)
    waited = time.perf_counter() - waited
    log(f"  quiet after {waited:.0f}s; {args.steady:.0f}s with nothing changing")

    def reconciles_so_far() -> float:
        return sum(operator_reconciles(operator_samples(metrics_port)).values())

    changes, reconciles = w.pods.changes + w.jobs.changes, reconciles_so_far()
    requests, plane = await asyncio.to_thread(request_totals, c), control_plane_cpu(c)
    cpu, t = proc_figures(pid)["cpu_seconds"], time.perf_counter()
    await asyncio.sleep(args.steady)
    alive()
    elapsed = time.perf_counter() - t
    cpu_percent = 100 * (proc_figures(pid)["cpu_seconds"] - cpu) / elapsed
    plane_cpu = cpu_delta(plane, control_plane_cpu(c))
    rows = request_rows(requests, await asyncio.to_thread(request_totals, c), {})
    changes = w.pods.changes + w.jobs.changes - changes
    reconciles = reconciles_so_far() - reconciles
    from_patch, from_pod = [], []
    for job in running[: args.changes]:  # one at a time: a single change in a quiet cluster
        master = naming.replica_name(job, "Master", 0)
        sent = time.perf_counter()
        await w.finish([master], rate=1e9)
        done = await wait_all(w.jobs, [job], "Succeeded", "changed TrainingJobs", sent, 60, alive)
        from_patch.append(done - sent)
        from_pod.append(done - w.pods.first[master]["Succeeded"])
    return {
        "jobs": len(running),
        "seconds": args.steady,
        "waited": waited,
        "changes_seen": changes,
        "reconciles": reconciles,
        "cpu_percent": cpu_percent,
        "elapsed": elapsed,
        "control_plane_cpu_percent": {k: 100 * v / elapsed for k, v in plane_cpu.items()},
        "requests": rows,
        "change_from_patch": percentiles(from_patch),
        "change_from_pod": percentiles(from_pod),
    }
