"""Benchmark of the controller runtime against a real apiserver.

    make bench            # or: python -P bench/runtime_bench.py [--pods 10000]

Starts the local apiserver tier, creates N pods carrying kubetrain's job label, then
starts a separate operator process that runs an informer over them (paged list, label
selector, owner index) and a controller with a no-op reconciler and 4 workers. Prints:
the cache sync time, the operator's RSS after sync and after reconciling, and the
no-op reconcile rate (all N keys, from caches synced to the last reconcile).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import pathlib
import resource
import subprocess
import sys
import time
import warnings

# kr8s 0.20 knows Kubernetes up to 1.35; the local control plane runs 1.36.
warnings.filterwarnings("ignore", message="Kubernetes version .* is not supported")

LABEL = "training.kubetrain.dev/job-name"


def rss_mib() -> float:
    for line in pathlib.Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


async def operator(kubeconfig: str, namespace: str, pods: int) -> dict[str, float]:
    from kubetrain.operator.runtime import cache, client, controller, informer, reconcile

    class NoOp:
        count = 0
        done = asyncio.Event()

        async def reconcile(self, request: reconcile.Request) -> reconcile.Result:
            NoOp.count += 1
            if NoOp.count == pods:
                NoOp.done.set()
            return reconcile.Result()

    api = await client.Client.connect(kubeconfig, qps=100, burst=200)
    rss_before = rss_mib()
    inf = informer.Informer(
        api, client.PODS, namespace=namespace, label_selector=LABEL, indexers={"owner": cache.by_owner()}
    )
    ctrl = controller.Controller("bench", NoOp(), inf, workers=4)
    started = time.perf_counter()
    tasks = [asyncio.create_task(inf.run()), asyncio.create_task(ctrl.run())]
    await inf.synced.wait()
    synced = time.perf_counter()
    rss_synced = rss_mib()
    await NoOp.done.wait()
    finished = time.perf_counter()
    for t in tasks:
        t.cancel()
    return {
        "objects": len(inf.store),
        "sync_seconds": synced - started,
        "reconcile_seconds": finished - synced,
        "reconciles_per_second": pods / (finished - synced),
        "rss_start_mib": rss_before,
        "rss_synced_mib": rss_synced,
        "rss_end_mib": rss_mib(),
        "max_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


async def create_pods(kubeconfig: str, namespace: str, n: int) -> float:
    from kubetrain.operator.runtime import client

    api = await client.Client.connect(kubeconfig, qps=5000, burst=5000, timeout=60)
    await api.create(
        client.Resource("", "v1", "namespaces", "Namespace", namespaced=False),
        {"metadata": {"name": namespace}},
    )
    await api.create(
        client.Resource("", "v1", "serviceaccounts", "ServiceAccount"),
        {"metadata": {"name": "default"}},
        namespace,
    )
    started = time.perf_counter()
    sem = asyncio.Semaphore(32)

    async def one(i: int) -> None:
        pod = {
            "metadata": {
                "name": f"bench-worker-{i}",
                "labels": {LABEL: f"job-{i // 8}"},
                "ownerReferences": [
                    {
                        "apiVersion": "training.kubetrain.dev/v1beta1",
                        "kind": "TrainingJob",
                        "name": f"job-{i // 8}",
                        "uid": f"00000000-0000-0000-0000-{i // 8:012d}",
                        "controller": True,
                    }
                ],
            },
            "spec": {"containers": [{"name": "main", "image": "busybox"}]},
        }
        async with sem:
            await api.create(client.PODS, pod, namespace)

    await asyncio.gather(*(one(i) for i in range(n)))
    return time.perf_counter() - started


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--pods", type=int, default=10_000)
    p.add_argument("--operator", nargs=2, metavar=("KUBECONFIG", "NAMESPACE"), help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.operator:
        print(json.dumps(asyncio.run(operator(*args.operator, args.pods))))
        return
    from kubetrain.devcluster import cluster

    with cluster.start(cluster.Tier.APISERVER) as c:
        created = asyncio.run(create_pods(str(c.kubeconfig), "bench", args.pods))
        print(f"created {args.pods} pods in {created:.1f}s ({args.pods / created:.0f}/s)")
        out = subprocess.run(
            [
                sys.executable,
                "-P",
                __file__,
                "--pods",
                str(args.pods),
                "--operator",
                str(c.kubeconfig),
                "bench",
            ],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ},
        )
        figures = json.loads(out.stdout)
    print(f"objects in cache:         {figures['objects']}")
    print(f"cache sync time:          {figures['sync_seconds']:.2f} s")
    print(
        f"no-op reconcile rate:     {figures['reconciles_per_second']:.0f} /s "
        f"({args.pods} keys in {figures['reconcile_seconds']:.2f} s, 4 workers)"
    )
    print(
        f"operator RSS:             {figures['rss_start_mib']:.0f} MiB at start, "
        f"{figures['rss_synced_mib']:.0f} MiB synced, {figures['rss_end_mib']:.0f} MiB after reconciling "
        f"(peak {figures['max_rss_mib']:.0f} MiB)"
    )


if __name__ == "__main__":
    main()
