"""``make bench-writes``: its arguments, and the run on etcd and kube-apiserver alone."""

from __future__ import annotations

import argparse
import asyncio
import json

import yaml

from kubetrain.devcluster import cluster as devcluster
from kubetrain_bench import ROOT, writes
from kubetrain_bench.console import log
from kubetrain_bench.writes.measure import crd_without_cel, measure
from kubetrain_bench.writes.report import per_job, report


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=writes.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--jobs", type=int, default=2000, help="writes of each kind (default 2000)")
    p.add_argument("--replicas", type=int, default=4, help="pods per job: 1 Master + N-1 Workers (default 4)")
    p.add_argument("--concurrency", type=int, default=16, help="writes in flight at once (default 16)")
    p.add_argument("--host-names", choices=("PerReplica", "PerJob"), default="PerJob")
    p.add_argument("--without-cel", action="store_true", help="install the CRD without its CEL rules")
    p.add_argument("--json", action="store_true", help="print the figures as JSON instead of the report")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    log("starting etcd and kube-apiserver")
    c = devcluster.start(devcluster.Tier.APISERVER, nodes=0)
    try:
        c.install_crds(ROOT / "config")
        if args.without_cel:
            path = c.workdir / "crd-without-cel.yaml"
            path.write_text(yaml.safe_dump(crd_without_cel()))
            c.kubectl("apply", "--server-side", "--force-conflicts", "-f", str(path))
        ms = asyncio.run(measure(c, args))
    finally:
        c.stop()
    services = 1 if args.host_names == "PerJob" else args.replicas
    job = per_job(ms, args.replicas, services)
    print(
        json.dumps({"ms_per_write": ms, "per_job_ms": job}, indent=2) if args.json else report(ms, job, args)
    )
    return 0
