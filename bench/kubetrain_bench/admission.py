"""Admission latency: what kubetrain's validating webhook adds to a TrainingJob create.

    make bench-admission       # or: PYTHONPATH=bench python -P bench/admission_bench.py [--count 300]

Deploys ``config/default`` on a cluster of its own (as the hostile-input benchmark does) and
sends, one at a time so that nothing queues, server-side dry-run creates (``dryRun=All``:
the apiserver runs validation and every webhook, and stores nothing) of:

- ``valid``: the pytorch-ddp sample (2 replica types, 3 pods): the webhook's own checks,
  then its dry run of 2 Pods, 2 PodTemplates and 2 Services against the apiserver;
- ``refused``: the same with a mistyped container resource: refused by the webhook's own
  checks, no dry run;
- ``no webhook``: the valid job again with the ValidatingWebhookConfiguration removed (the
  conversion webhook stays): the apiserver's own cost, the floor.

Timed with kubetrain's own client from this process. Prints p50/p99/max per case, and the
CRD's size as applied and as the apiserver stores it.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import time
from typing import Any

from kubetrain.api import crd
from kubetrain.operator import webhook_endpoints
from kubetrain.operator.runtime import client
from kubetrain_bench import ROOT, deployment, samples
from kubetrain_bench.console import log

NAMESPACE = "admission"


async def timed(api: client.Client, job: dict[str, Any], count: int, *, allowed: bool) -> list[float]:
    times = []
    for _ in range(count):
        start = time.perf_counter()
        try:
            await api.create(client.TRAININGJOBS, job, NAMESPACE, dry_run=True)
            answer = True
        except client.ApiError as e:
            if e.status != 422:
                raise
            answer = False
        times.append(time.perf_counter() - start)
        if answer != allowed:
            raise SystemExit(f"unexpected answer for {job['metadata']['name']}: allowed={answer}")
    return sorted(times)


def line(what: str, times: list[float]) -> str:
    # p99 as the nearest rank below, as this benchmark has always printed it (not stats.percentile's).
    p50, p99 = statistics.median(times), times[max(0, int(len(times) * 0.99) - 1)]
    return f"  {what:<11} p50 {1000 * p50:6.1f} ms   p99 {1000 * p99:6.1f} ms   max {1000 * times[-1]:6.1f} ms   (n={len(times)})"


async def measure(d: deployment.Deployment, count: int) -> dict[str, list[float]]:
    valid = samples.load("v1beta1", "pytorch-ddp")
    refused = samples.load("v1beta1", "pytorch-ddp")
    refused["spec"]["replicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["resources"] = {
        "limits": 3
    }
    async with await client.Client.connect(str(d.kubeconfig), qps=1e6, burst=1_000_000) as api:
        await timed(api, valid, 10, allowed=True)  # warm caches and connections
        results = {"valid": await timed(api, valid, count, allowed=True)}
        results["refused"] = await timed(api, refused, count, allowed=False)
        d.cluster.kubectl("delete", "validatingwebhookconfiguration", webhook_endpoints.CONFIGURATION_NAME)
        await asyncio.sleep(2)  # the apiserver drops the configuration from its webhook cache
        results["no webhook"] = await timed(api, valid, count, allowed=True)
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--count", type=int, default=300, help="creates per case")
    args = parser.parse_args(argv)
    try:
        with deployment.deployment(nodes=2) as d:
            d.namespace(NAMESPACE)
            results = asyncio.run(measure(d, args.count))
            stored = d.cluster.kubectl("get", "crd", crd.NAME, "-o", "json").stdout
    except subprocess.CalledProcessError as e:
        log(f"error: {e}: {e.stderr}")
        return 1
    applied = (ROOT / crd.CRD_PATH).read_bytes()
    print("admission latency of a TrainingJob create (dryRun=All), one at a time:")
    for what, times in results.items():
        print(line(what, times))
    print(f"CRD size: {len(applied):,} bytes of YAML as applied; {len(stored):,} bytes of JSON as stored")
    return 0
