"""``make bench``: its arguments, the objects made once, then each variant of the caches measured."""

from __future__ import annotations

import argparse
import asyncio
import json
from collections.abc import Iterator
from typing import Any

from kubetrain_bench import ROOT, runtime
from kubetrain_bench.runtime.caches import VARIANTS, operator, run_operator
from kubetrain_bench.runtime.objects import create

Obj = dict[str, Any]


def table(runs: list[Obj]) -> Iterator[str]:
    """Per variant, RSS and live size by cache; then the processes' totals."""

    def per(mib: float, n: int) -> str:
        return f"{mib * 2**20 / n:>9.0f}" if n else f"{'-':>9}"

    for r in runs:
        yield f"{r['variant']}:"
        yield f"  {'cache':<12} {'objects':>8} {'RSS MiB':>8} {'B/object':>9} {'live MiB':>9} {'B/object':>9}"
        for c in r["caches"]:
            n = c["objects"]
            yield (
                f"  {c['kind']:<12} {n:>8} {c['rss_mib']:>8.1f} {per(c['rss_mib'], n)} "
                f"{c['live_mib']:>9.1f} {per(c['live_mib'], n)}"
            )
        n = sum(c["objects"] for c in r["caches"])
        rss, live = sum(c["rss_mib"] for c in r["caches"]), sum(c["live_mib"] for c in r["caches"])
        yield f"  {'all caches':<12} {n:>8} {rss:>8.1f} {per(rss, n)} {live:>9.1f} {per(live, n)}"
    for r in runs:
        syncs = ", ".join(f"{c['kind']} {c['sync_seconds']:.1f} s" for c in r["caches"] if c["objects"])
        yield (
            f"{r['variant']}: RSS {r['rss_start_mib']:.0f} MiB at start, {r['rss_synced_mib']:.0f} MiB synced, "
            f"peak {r['max_rss_mib']:.0f} MiB; sync {syncs}; no-op reconciles {r['reconciles_per_second']:.0f} /s"
        )


def main() -> None:
    p = argparse.ArgumentParser(description=runtime.__doc__.split("\n\n")[0] if runtime.__doc__ else None)
    p.add_argument(
        "--objects", type=int, default=10_000, help="pods, and as many Services; jobs are a quarter"
    )
    p.add_argument("--nodes", type=int, default=100)
    p.add_argument("--concurrency", type=int, default=64, help="requests in flight while creating")
    p.add_argument(
        "--variants", default=",".join(VARIANTS), help=f"comma-separated, of {', '.join(VARIANTS)}"
    )
    p.add_argument("--json", action="store_true", help="print the figures as JSON too")
    p.add_argument("--operator", nargs=2, metavar=("KUBECONFIG", "VARIANT"), help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.operator:
        print(json.dumps(asyncio.run(operator(*args.operator))))
        return
    variants = [v for v in args.variants.split(",") if v]
    if unknown := set(variants) - set(VARIANTS):
        p.error(f"--variants: unknown {', '.join(sorted(unknown))}; choose from {', '.join(VARIANTS)}")
    from kubetrain.devcluster import cluster

    with cluster.start(cluster.Tier.APISERVER, timeout=180) as c:
        c.install_crds(ROOT / "config")
        made = asyncio.run(create(str(c.kubeconfig), args.objects, args.nodes, args.concurrency))
        n = made["jobs"] * 4
        print(
            f"created {made['jobs']} TrainingJobs, {n} Services, {n} pods (with status) and {args.nodes} Nodes "
            f"in {made['create_seconds']:.0f} s ({(2 * made['jobs'] + 3 * n) / made['create_seconds']:.0f} requests/s)",
            flush=True,
        )
        runs = [run_operator(str(c.kubeconfig), v) for v in variants]
    print("\n".join(table(runs)))
    if args.json:
        print(json.dumps({"created": made, "runs": runs}))
