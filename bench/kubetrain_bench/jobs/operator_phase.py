"""The operator's phase: kubetrain-operator in a process of its own, a wave of TrainingJobs to Running,
and what it cost (requests, CPU, memory); then the fairness and steady-state phases if asked."""

from __future__ import annotations

import argparse
import asyncio
import collections
import pathlib
import sys
from collections.abc import Mapping
from typing import Any

from kubetrain.devcluster import cluster as devcluster
from kubetrain.devcluster import kwok, process
from kubetrain_bench import operator_process
from kubetrain_bench.console import log
from kubetrain_bench.jobs import queues
from kubetrain_bench.jobs.common import RowKey, run_phase
from kubetrain_bench.jobs.fairness import fairness
from kubetrain_bench.jobs.metrics import operator_reconciles, operator_samples, operator_waits
from kubetrain_bench.jobs.requests import audit_rows, request_rows, request_totals
from kubetrain_bench.jobs.steady import steady
from kubetrain_bench.jobs.watches import Watches
from kubetrain_bench.jobs.waves import jobs_wave
from kubetrain_bench.procs import control_plane_cpu, cpu_delta, proc_figures


def operator_argv(
    kubeconfig: pathlib.Path,
    metrics_port: int,
    probe_port: int,
    qps: float,
    burst: int,
    gang_scheduler: str,
    workers: int,
    progress_interval: float | None = None,
    kueue_route: str | None = None,
) -> list[str]:
    script = pathlib.Path(sys.executable).parent / "kubetrain-operator"
    command = [str(script)] if script.exists() else [sys.executable, "-P", "-m", "kubetrain.operator"]
    return [
        *command,
        f"--kubeconfig={kubeconfig}",
        f"--metrics-bind-address=127.0.0.1:{metrics_port}",
        f"--health-probe-bind-address=127.0.0.1:{probe_port}",
        "--webhook-port=0",
        "--log-level=warning",
        f"--kube-api-qps={qps:g}",
        f"--kube-api-burst={burst}",
        f"--gang-scheduler={gang_scheduler}",
        f"--max-concurrent-reconciles={workers}",
        *([f"--progress-interval={progress_interval:g}"] if progress_interval else []),
        *([f"--kueue={kueue_route}"] if kueue_route else []),
    ]


def start_operator(
    kubeconfig: pathlib.Path,
    log_path: pathlib.Path,
    qps: float,
    burst: int,
    gang_scheduler: str,
    workers: int,
    progress_interval: float | None = None,
    kueue_route: str | None = None,
) -> tuple[process.Process, int]:
    """Start kubetrain-operator and wait until its caches are synced (/readyz); returns it and its metrics port."""
    metrics_port, probe_port = process.free_port(), process.free_port()
    argv = operator_argv(
        kubeconfig,
        metrics_port,
        probe_port,
        qps,
        burst,
        gang_scheduler,
        workers,
        progress_interval,
        kueue_route,
    )
    op = operator_process.start(argv, log_path, probe_port, timeout=60, interval=0.2)
    return op, metrics_port


def operator_phase(
    c: devcluster.Cluster,
    workdir: pathlib.Path,
    kubeconfigs: Mapping[str, pathlib.Path],
    namespaces: list[str],
    qps: float,
    burst: int,
    args: argparse.Namespace,
    audit_log: pathlib.Path | None,
    result: dict[str, Any],
) -> None:
    """Fills ``result`` as it goes, so that a timeout still leaves what was measured."""
    namespace = namespaces[0]
    where = namespace if len(namespaces) == 1 else f"{len(namespaces)} namespaces ({namespace}, ...)"
    log(f"operator (qps {qps:g}, burst {burst}): {args.jobs} TrainingJobs in {where}")
    result.update({"namespace": namespace, "namespaces": len(namespaces), "qps": qps, "burst": burst})
    result["count"] = args.jobs
    if args.kueue:
        queues.create(c, namespaces, cpu=args.jobs * args.replicas)
    op, metrics_port = start_operator(
        kubeconfigs["operator"],
        workdir / f"kubetrain-operator-{namespace}.log",
        qps,
        burst,
        args.gang_scheduler,
        args.workers,
        args.progress_interval,
        args.kueue,
    )
    own: collections.Counter[RowKey] = collections.Counter()
    snapshot: dict[str, Any] = {}

    def before() -> None:
        snapshot["requests"] = request_totals(c)
        snapshot["cpu"] = control_plane_cpu(c)
        snapshot["audit_offset"] = audit_log.stat().st_size if audit_log else 0
        own.clear()  # only what the benchmark does from here on is in the window

    def after() -> None:
        assert op.pid is not None
        result["operator"] = proc_figures(op.pid)
        samples = operator_samples(metrics_port)
        result["reconciles"] = operator_reconciles(samples)
        result["waits"] = operator_waits(samples)
        result["control_plane_cpu"] = cpu_delta(snapshot["cpu"], control_plane_cpu(c))
        result["requests"] = request_rows(snapshot["requests"], request_totals(c), own)
        if audit_log is not None:
            result["audit"] = audit_rows(audit_log, snapshot["audit_offset"])

    async def steps() -> None:
        """Every agent's step moves every 2 s (``--progress``)."""
        step = 0
        while True:
            step += 1
            await asyncio.to_thread(kwok.write_agent_log, c, [f"progress step={step} total=1000000 loss=0.5"])
            await asyncio.sleep(2)

    async def run() -> None:
        ticker = asyncio.create_task(steps()) if args.progress else None
        try:
            await measured()
        finally:
            if ticker is not None:
                ticker.cancel()

    async def measured() -> None:
        async with Watches.open(kubeconfigs["bench"], namespaces, own, jobs=True) as w:

            def alive() -> None:
                op.check_alive()
                w.check()

            await asyncio.to_thread(before)
            try:
                first, names = await jobs_wave(w, "bench", args, alive)
                result.update(first)
                await asyncio.sleep(args.settle)
            finally:  # at a timeout too, the requests so far
                await asyncio.to_thread(after)
            if args.fairness:
                result["fairness"] = {}
                since = await asyncio.to_thread(operator_samples, metrics_port)
                names = await fairness(w, names, first["seconds"], args, alive, result["fairness"])
                later = await asyncio.to_thread(operator_samples, metrics_port)
                result["fairness"]["waits"] = operator_waits(later, since)
            if args.steady:
                assert op.pid is not None
                result["steady"] = await steady(w, c, op.pid, metrics_port, names, args, alive)

    try:
        run_phase(run(), result)
    finally:
        if op.pid is not None and op.alive():
            result["operator_end"] = proc_figures(op.pid)
        op.stop()
        result["operator_log_tail"] = op.tail(20)
