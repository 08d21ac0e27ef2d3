"""The plain client's phases, with no operator: the floor the operator is measured against."""

from __future__ import annotations

import argparse
import collections
import datetime
import functools
import pathlib
import time
from collections.abc import Awaitable, Callable
from typing import Any

from kubetrain.devcluster import cluster as devcluster
from kubetrain.operator.runtime import client
from kubetrain_bench.console import log
from kubetrain_bench.jobs.bodies import job_body, operator_objects, pod_body, service_body, status_patches
from kubetrain_bench.jobs.common import LABEL, Obj, RowKey, run_phase
from kubetrain_bench.jobs.timings import binds, wave
from kubetrain_bench.jobs.watches import Watches, wait_all
from kubetrain_bench.procs import control_plane_cpu, cpu_delta

PLAIN_KINDS = {
    "pods": "{n} pods",
    "services": "{n} pods and their headless Services",
    "writes": "{jobs} TrainingJobs, their headless Services, {n} pods and two status patches a job",
}


def plain_phase(
    c: devcluster.Cluster,
    kubeconfig: pathlib.Path,
    args: argparse.Namespace,
    result: dict[str, Any],
    namespaces: list[str],
    *,
    kind: str = "pods",
) -> None:
    """Fills ``result`` as it goes, so that a timeout still leaves what was measured.

    ``kind`` is what the plain client makes (:data:`PLAIN_KINDS`): bare pods; the same with the
    Services the operator would make; or every write a job costs with no operator at all — the
    TrainingJobs (created first, as the operator phase's user does), then per job the Service(s)
    and pods the operator renders for it, byte for byte (env, labels, owner reference: a rendered
    pod costs the apiserver about 40 % more per write than a bare one), and, once the last pod is
    created, the two status patches the operator would write.
    Job ``j`` goes to ``namespaces[j % len(namespaces)]``, as in the operator phase.
    """
    n = args.jobs * args.replicas
    per_job = args.host_names == "PerJob"
    what = PLAIN_KINDS[kind].format(n=n, jobs=args.jobs)
    where = namespaces[0] if len(namespaces) == 1 else f"{len(namespaces)} namespaces ({namespaces[0]}, ...)"
    log(f"plain client: {what} in {where}, concurrency {args.concurrency}")
    cpu_before = control_plane_cpu(c)
    result.update({"namespaces": len(namespaces), "count": n, "kind": kind, "host_names": args.host_names})

    async def run() -> None:
        r = args.replicas
        # Bare pods; the writes phase renders the operator's own from the jobs it stores.
        bodies = [
            pod_body(
                f"job-{i // r:05d}-{i % r}",
                labels={"pod": f"job-{i // r:05d}-{i % r}", "job": f"job-{i // r:05d}"},
                namespace=namespaces[i // r % len(namespaces)],
            )
            for i in range(n if kind != "writes" else 0)
        ]
        own: collections.Counter[RowKey] = collections.Counter()
        async with Watches.open(kubeconfig, namespaces, own, jobs=kind == "writes") as w:
            started = time.perf_counter()
            after: Callable[[Obj], Awaitable[None]] | None = None
            make: Callable[[Obj], Obj | None] | None = (
                functools.partial(service_body, per_job=per_job) if kind == "services" else None
            )
            if kind == "writes":
                jobs = [
                    job_body(
                        f"job-{j:05d}",
                        r,
                        namespaces[j % len(namespaces)],
                        args.host_names,
                        args.framework,
                        args.ps,
                    )
                    for j in range(args.jobs)
                ]
                stored = await w.create(client.TRAININGJOBS, jobs, args.concurrency)
                bodies, services, last = operator_objects(stored.values())

                async def patch_when_last(pod: Obj) -> None:
                    if pod["metadata"]["name"] in last:
                        job, namespace = pod["metadata"]["labels"][LABEL], pod["metadata"]["namespace"]
                        for patch in status_patches(job, r, datetime.datetime.now(datetime.UTC)):
                            await w.patch_status(job, namespace, patch)

                def service_of(pod: Obj) -> Obj | None:
                    return services.get(pod["metadata"]["name"])

                after, make = patch_when_last, service_of
            names = [b["metadata"]["name"] for b in bodies]
            await w.create(client.PODS, bodies, args.concurrency, services=make, after=after)
            created = time.perf_counter()
            sent = {name: w.sent[name] for name in names}
            log(f"  created {n} pods in {created - started:.1f}s")
            await wait_all(w.pods, names, "Running", "pods", started, args.timeout, w.check)
            result.update(wave(sent, w.pods.done_at(names, "Running"), started, created))
            result["binds"] = binds(w.pods, names, started)
            result["writes"] = {
                "/".join(filter(None, (verb, plural, sub))): count
                for (verb, _group, plural, sub), count in own.items()
            }

    try:
        run_phase(run(), result)
    finally:
        result["control_plane_cpu"] = cpu_delta(cpu_before, control_plane_cpu(c))
