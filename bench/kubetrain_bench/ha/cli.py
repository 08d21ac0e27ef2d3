"""``make bench-ha``: its arguments, and one cluster and one failover per Lease setting."""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import subprocess

from kubetrain.devcluster import kwok, process
from kubetrain_bench.console import log
from kubetrain_bench.ha import replicas, report, run
from kubetrain_bench.jobs.common import BenchTimeoutError

DEFAULT_LEASE = "15/10/2"


def lease_setting(text: str) -> tuple[str, list[str]]:
    """``DURATION/DEADLINE/PERIOD`` (seconds): the setting and the operator's flags for it."""
    try:
        duration, deadline, period = (float(x) for x in text.split("/"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"want DURATION/DEADLINE/PERIOD in seconds, got {text!r}") from None
    if not (duration == int(duration) and duration > deadline > 1.2 * period > 0):
        raise argparse.ArgumentTypeError(
            f"{text}: want a whole lease duration > renew deadline > 1.2 x retry period > 0"
        )
    return text, [
        f"--leader-elect-lease-duration={int(duration)}",
        f"--leader-elect-renew-deadline={deadline:g}",
        f"--leader-elect-retry-period={period:g}",
    ]


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="ha_bench.py", description="the leader of two operator replicas SIGKILLed under load"
    )
    p.add_argument("--jobs", type=int, default=2000, help="running TrainingJobs (default 2000)")
    p.add_argument("--replicas", type=int, default=4, help="pods per job (default 4)")
    p.add_argument(
        "--wave", type=int, help="new jobs created as the leader is killed (default: a tenth of --jobs)"
    )
    p.add_argument(
        "--lease",
        type=lease_setting,
        action="append",
        help=f"a Lease setting to run (repeatable; default {DEFAULT_LEASE})",
    )
    p.add_argument("--admission-rate", type=float, default=10.0, help="dry-run creates a second (default 10)")
    p.add_argument(
        "--admission-timeout",
        type=float,
        default=15.0,
        help="seconds before an admission counts as timed out",
    )
    p.add_argument("--change-rate", type=float, default=10.0, help="job changes a second (default 10)")
    p.add_argument("--before", type=float, default=30.0, help="seconds of load before the kill")
    p.add_argument("--after", type=float, default=60.0, help="seconds of load after the kill")
    p.add_argument(
        "--grace", type=float, default=120.0, help="seconds to wait for every change to show after the load"
    )
    p.add_argument(
        "--endpoint-period", type=float, default=1.0, help="seconds between the balancer's readiness checks"
    )
    p.add_argument("--concurrency", type=int, default=50, help="creates in flight at once (default 50)")
    p.add_argument("--nodes", type=int, help="kwok nodes (default: as many as the pods need, +10%%)")
    p.add_argument(
        "--scheduler-qps", type=float, default=1000.0, help="kube-scheduler's --kube-api-qps (default 1000)"
    )
    p.add_argument("--timeout", type=float, default=900.0, help="seconds for the jobs to be Running")
    p.add_argument("--json", action="store_true", help="also print the figures as JSON")
    return p


def main(argv: list[str] | None = None) -> int:
    p = parser()
    args = p.parse_args(argv)
    args.lease = args.lease or [lease_setting(DEFAULT_LEASE)]
    args.wave = args.jobs // 10 if args.wave is None else args.wave
    if min(args.jobs, args.replicas, args.concurrency) < 1 or args.wave < 0:
        p.error("--jobs, --replicas and --concurrency must be at least 1, --wave at least 0")
    if min(args.admission_rate, args.change_rate, args.endpoint_period) <= 0:
        p.error("--admission-rate, --change-rate and --endpoint-period must be more than 0")
    pods = (args.jobs + args.wave) * args.replicas
    args.nodes = args.nodes or math.ceil(1.1 * pods / int(kwok.NODE_CAPACITY["pods"]))
    results = {}
    for setting, flags in args.lease:
        log(f"== Lease {setting}")
        try:
            with replicas.setup(args, flags) as s:
                results[setting] = asyncio.run(run.measure(s, args))
        except (BenchTimeoutError, process.StartError, subprocess.CalledProcessError, RuntimeError) as e:
            detail = getattr(e, "stderr", "") or ""
            print(f"error: Lease {setting}: {e} {detail}".strip())
            return 1
        for line in report.lines(setting, results[setting]):
            print(line, flush=True)
    if args.json:
        print(json.dumps(results, indent=2))
    return 0
