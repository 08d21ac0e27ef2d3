"""The jobs benchmark's command: its arguments, and the run of its phases on a cluster of its own."""

from __future__ import annotations

import argparse
import json
import math
import pathlib
import shutil
import signal
import tempfile
from collections.abc import Mapping
from typing import Any

from kubetrain.devcluster import cluster as devcluster
from kubetrain.devcluster import kwok, process
from kubetrain.operator import main as operator_main
from kubetrain.operator.runtime import client
from kubetrain_bench import jobs
from kubetrain_bench.console import log
from kubetrain_bench.jobs import cluster, queues
from kubetrain_bench.jobs.common import (
    BENCH_USER,
    CLIENT_GO_LIMITS,
    JOBS_NAMESPACE,
    OPERATOR_USER,
    PLAIN_NAMESPACE,
    BenchTimeoutError,
)
from kubetrain_bench.jobs.operator_phase import operator_phase
from kubetrain_bench.jobs.plain import plain_phase
from kubetrain_bench.jobs.report import report


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=jobs.__doc__.split("\n\n")[0] if jobs.__doc__ else None)
    p.add_argument("--jobs", type=int, default=500, help="TrainingJobs to create (default 500)")
    p.add_argument("--replicas", type=int, default=4, help="pods per job: 1 Master + N-1 Workers (default 4)")
    p.add_argument(
        "--nodes",
        type=int,
        default=0,
        help="kwok nodes, 110 pods each (default: as many as the pods need, +10%%)",
    )
    p.add_argument("--concurrency", type=int, default=50, help="creates in flight at once (default 50)")
    p.add_argument(
        "--namespaces",
        type=int,
        default=1,
        help="spread the jobs (and the plain client's pods) over this many namespaces (default 1). "
        "For a pod with no spread constraints of its own, kube-scheduler's default spreading looks at "
        "every Service of its namespace, so thousands of per-replica Services in one namespace make "
        "the scheduler the floor of --plain-services (the operator's pods carry constraints)",
    )
    own = operator_main.parser().parse_args([])
    p.add_argument(
        "--qps",
        type=float,
        default=own.kube_api_qps,
        help=f"operator --kube-api-qps (default: the operator's own, {own.kube_api_qps:g})",
    )
    p.add_argument(
        "--burst",
        type=int,
        default=own.kube_api_burst,
        help=f"operator --kube-api-burst (default: the operator's own, {own.kube_api_burst})",
    )
    p.add_argument(
        "--workers",
        type=int,
        default=own.max_concurrent_reconciles,
        help="operator --max-concurrent-reconciles (default: the operator's own, "
        f"{own.max_concurrent_reconciles})",
    )
    p.add_argument(
        "--also-default-limits",
        action="store_true",
        help="run the operator phase again at client-go's default limits (qps 20, burst 30), which "
        "many operators keep; slow",
    )
    p.add_argument("--timeout", type=float, default=300.0, help="seconds each phase may take (default 300)")
    p.add_argument(
        "--settle",
        type=float,
        default=5.0,
        help="seconds after all jobs run before the last scrape (default 5)",
    )
    p.add_argument(
        "--gang-scheduler",
        default="none",
        help="the operator's --gang-scheduler (default none: with auto, this cluster's native gangs, "
        "kube-scheduler's gang plugin takes ten times the CPU of plain scheduling and becomes the floor)",
    )
    p.add_argument(
        "--scheduler-qps",
        type=float,
        default=1000.0,
        help="kube-scheduler's --kube-api-qps (burst twice that; default 1000): its own default, 50, "
        "would make the scheduler the floor",
    )
    p.add_argument(
        "--fairness",
        action="store_true",
        help="then as many new jobs again while the running ones finish: status lag under a burst",
    )
    p.add_argument(
        "--steady",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="then measure the operator's CPU while nothing changes for SECONDS, and --changes single changes",
    )
    p.add_argument(
        "--changes", type=int, default=5, help="single changes timed in the steady state (default 5)"
    )
    p.add_argument(
        "--quiet",
        type=float,
        default=10.0,
        help="seconds without a pod or job change before the steady state is measured (default 10)",
    )
    p.add_argument(
        "--smoke",
        action="store_true",
        help="a small run of every phase (12 jobs x 2, fairness, steady state): for make test",
    )
    p.add_argument(
        "--plain-services",
        action="store_true",
        help="also time a plain client making the pods and a headless Service for each (the objects "
        "the operator makes): the floor of the per-replica Service contract",
    )
    p.add_argument(
        "--plain-writes",
        action="store_true",
        help="also time a plain client making every write the operator's jobs cost, with no operator: "
        "the TrainingJobs, the Services and pods the operator renders for them, and two status "
        "patches each (the floor of any operator making these writes)",
    )
    p.add_argument(
        "--host-names",
        choices=("PerReplica", "PerJob"),
        default="PerJob",
        help="the jobs' spec.network.hostNames (default PerJob, what config/defaults gives a new v1beta1 "
        "job): one headless Service per job, or one per replica (Kubeflow's names, what converted and "
        "v1alpha1 jobs keep); --plain-services makes the same Services",
    )
    p.add_argument(
        "--framework",
        choices=("pytorch", "tensorflow"),
        default="pytorch",
        help="the jobs' framework (default pytorch); tensorflow's TF_CONFIG lists every host in every pod",
    )
    p.add_argument(
        "--ps", type=int, default=0, help="TensorFlow PS replicas per job, counted in --replicas (default 0)"
    )
    p.add_argument(
        "--progress",
        action="store_true",
        help="the jobs report progress (spec.progress): every kwok agent's log shows a step that moves "
        "every 2 s, so each reading the operator makes says something new (the most it writes)",
    )
    p.add_argument(
        "--progress-interval",
        type=float,
        default=None,
        help="operator --progress-interval (default: the operator's own)",
    )
    p.add_argument(
        "--kueue",
        choices=("workload", "pods"),
        default=None,
        help="the jobs wait in a Kueue queue (Kueue v0.19.2 started beside the cluster; a ClusterQueue "
        "per namespace with quota for every job) on this route: the operator's --kueue",
    )
    p.add_argument("--skip-plain", action="store_true", help="skip the plain-client lower bound")
    p.add_argument("--skip-operator", action="store_true", help="run the plain-client lower bound only")
    p.add_argument("--audit", action="store_true", help="exact attribution from an apiserver audit log")
    p.add_argument("--json", action="store_true", help="print the figures as JSON instead of the report")
    args = p.parse_args(argv)
    if args.smoke:
        args.jobs, args.replicas, args.fairness, args.settle = 12, 2, True, 1.0
        args.plain_services = args.plain_writes = True
        args.steady, args.changes, args.quiet = args.steady or 3.0, min(args.changes, 2), min(args.quiet, 2.0)
    if args.ps and (args.framework != "tensorflow" or args.ps >= args.replicas):
        p.error("--ps needs --framework tensorflow and fewer PS than --replicas")
    if not args.nodes:  # room for both waves of --fairness: the first one's Masters stay, Succeeded
        waves = 2 if args.fairness else 1
        args.nodes = math.ceil(1.1 * waves * args.jobs * args.replicas / int(kwok.NODE_CAPACITY["pods"]))
    if args.jobs < 1 or args.replicas < 1 or args.nodes < 1 or args.concurrency < 1:
        p.error("--jobs, --replicas, --nodes and --concurrency must be at least 1")
    capacity = args.nodes * int(kwok.NODE_CAPACITY["pods"])
    if args.jobs * args.replicas > capacity:
        need = math.ceil(args.jobs * args.replicas / int(kwok.NODE_CAPACITY["pods"]))
        p.error(
            f"{args.jobs * args.replicas} pods do not fit on {args.nodes} nodes; use --nodes {need} or more"
        )
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    # SIGTERM as Ctrl-C: the same clean stop of the operator and the cluster. Ctrl-C too when started
    # as a script's background job, which a shell starts with SIGINT ignored.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    workdir = pathlib.Path(tempfile.mkdtemp(prefix="kubetrain-jobs-bench-"))
    figures: dict[str, Any] = {"args": vars(args)}
    audit_log = workdir / "audit.log" if args.audit else None
    c: devcluster.Cluster | None = None
    error: str | None = None
    completed = False
    try:
        c = cluster.start(args, workdir, audit_log, figures)
        cluster.install_crd(c, figures)
        if args.kueue:
            log("starting Kueue")
            queues.start(c)
        kubeconfigs = {
            "bench": cluster.user_kubeconfig(c, BENCH_USER, workdir / "bench.kubeconfig"),
            "operator": cluster.user_kubeconfig(c, OPERATOR_USER, workdir / "operator.kubeconfig"),
        }
        run_phases(c, workdir, kubeconfigs, args, audit_log, figures)
        completed = True
    except BenchTimeoutError as e:
        error = str(e)
    except process.StartError as e:
        error = f"a process failed: {e}"
    except client.ApiError as e:  # the figures so far are still printed
        error = f"the apiserver answered {e}"
    except KeyboardInterrupt:
        error = "interrupted"
    finally:
        if c is not None:
            log("stopping the control plane")
            c.stop()
        if completed or not any(workdir.glob("*.log")):
            shutil.rmtree(workdir, ignore_errors=True)
        else:
            log(f"kept the operator's logs in {workdir}")
    if "cluster_start_seconds" in figures and "crd_seconds" in figures:
        if args.json:
            print(json.dumps({**figures, "error": error}, indent=2, default=str))
        else:
            print(report(figures))
    if error is not None:
        for run in figures.get("operator_runs", []):
            if run.get("operator_log_tail"):
                log(
                    f"--- kubetrain-operator log ({run['namespace']}), last lines ---\n{run['operator_log_tail']}"
                )
        log(f"\nerror: {error}")
        return 1
    return 0


def run_phases(
    c: devcluster.Cluster,
    workdir: pathlib.Path,
    kubeconfigs: Mapping[str, pathlib.Path],
    args: argparse.Namespace,
    audit_log: pathlib.Path | None,
    figures: dict[str, Any],
) -> None:
    """The plain client's phases, then the operator's, each in namespaces of its own, cleaned away after it.

    Each phase fills its part of ``figures`` as it goes, so that a timeout still leaves what was measured.
    """
    if not args.skip_plain:
        kinds = [
            "pods",
            *(["services"] if args.plain_services else []),
            *(["writes"] if args.plain_writes else []),
        ]
        for kind in kinds:
            key, base = (
                ("plain", PLAIN_NAMESPACE)
                if kind == "pods"
                else (f"plain_{kind}", f"{PLAIN_NAMESPACE}-{kind}")
            )
            namespaces = cluster.spread(base, args.namespaces)
            figures[key] = {}
            plain_phase(c, kubeconfigs["bench"], args, figures[key], namespaces, kind=kind)
            cluster.clean(c, kubeconfigs["bench"], namespaces, args.timeout)
    if not args.skip_operator:
        limits = [(args.qps, args.burst, JOBS_NAMESPACE)]
        if args.also_default_limits:
            limits.append((*CLIENT_GO_LIMITS, f"{JOBS_NAMESPACE}-client-go"))
        figures["operator_runs"] = []
        for i, (qps, burst, base) in enumerate(limits):
            if i:
                cluster.clean(
                    c, kubeconfigs["bench"], cluster.spread(limits[i - 1][2], args.namespaces), args.timeout
                )
            run: dict[str, Any] = {}
            figures["operator_runs"].append(run)
            namespaces = cluster.spread(base, args.namespaces)
            operator_phase(c, workdir, kubeconfigs, namespaces, qps, burst, args, audit_log, run)
