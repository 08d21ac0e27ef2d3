"""The fairness phase: as many new jobs again while the running ones finish."""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Callable
from typing import Any

from kubetrain.api import naming
from kubetrain_bench.console import log
from kubetrain_bench.jobs.timings import status_lags
from kubetrain_bench.jobs.watches import Watches, wait_all
from kubetrain_bench.jobs.waves import jobs_wave
from kubetrain_bench.stats import percentiles


async def fairness(
    w: Watches,
    running: list[str],
    first_seconds: float,
    args: argparse.Namespace,
    alive: Callable[[], None],
    result: dict[str, Any],
) -> list[str]:
    """As many new jobs arrive while the running ones finish; the names of the new ones.

    The running jobs' Masters exit 0 at a steady rate, spread over as long as the first wave
    took to run, so most of their status updates compete with the new jobs' first passes:
    the lag from a Master seen Succeeded to its job seen Succeeded is what fairness is about.
    """
    rate = len(running) / max(first_seconds, 1.0)
    log(f"fairness: {args.jobs} new TrainingJobs while {len(running)} running ones finish ({rate:.0f}/s)")
    masters = [naming.replica_name(n, "Master", 0) for n in running]
    finishing = asyncio.create_task(w.finish(masters, rate))
    started = time.perf_counter()
    try:
        late, names = await jobs_wave(w, "late", args, alive)
        await finishing
        await wait_all(w.jobs, running, "Succeeded", "first-wave TrainingJobs", started, args.timeout, alive)
    finally:
        finishing.cancel()
    result.update(late)
    result["finished_lag"] = percentiles(status_lags(w.jobs, w.pods, running, "Succeeded", "Succeeded", None))
    return names
