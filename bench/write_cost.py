"""What each write of a TrainingJob costs kube-apiserver, against the writes of bare pods.

    make bench-writes                       # or: python -P bench/write_cost.py [--jobs 2000]
    make bench-writes BENCH_ARGS="--without-cel"   # the CRD's CEL rules left out, to see their share

The jobs benchmark (``bench/jobs_bench.py``) compares the time to all Running of N TrainingJobs
with that of the same number of bare pods. On a machine whose cores the apiserver saturates, that
ratio is bounded below by what the cluster spends on a job's writes beyond its bare pods, whatever
operator makes them. This script measures those writes one kind at a time, against etcd and
kube-apiserver alone (no scheduler, no kwok, no watcher but the apiserver's own cache), as
kube-apiserver's CPU seconds (from /proc) over every write of the kind that ``--jobs`` jobs make,
sent ``--concurrency`` at a time:

- the user's TrainingJob create, and the operator's two status patches (Created, then Running,
  as the operator's types write them);
- the job's headless Service (``--host-names``: PerJob, one; PerReplica, one per pod);
- per pod: the create, the scheduler's binding and the kubelet's status patch to Running — for a
  bare pod (the jobs benchmark's floor) and for the pod the operator renders for that job (its
  env, labels, ports, owner reference).

It prints the cost of each kind in milliseconds of apiserver CPU per write, and per job: the bare
pods' writes, the operator's (everything above), and their ratio — the least time to all Running,
relative to the bare pods, of any operator that makes these writes, when the apiserver is what
the machine waits for.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import pathlib
import sys
import warnings
from collections.abc import Awaitable, Callable
from typing import Any

import yaml

# bench/ holds no module that shadows the standard library (unlike the repository root).
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import jobs_bench  # the jobs benchmark's bodies: the same jobs, pods and status patches

from kubetrain.devcluster import cluster as devcluster
from kubetrain.operator.runtime import client

warnings.filterwarnings("ignore", message="Kubernetes version .* is not supported")

ROOT = pathlib.Path(__file__).resolve().parent.parent
NAMESPACE = "writes"
NODE = "node-0"  # bindings name a node; the apiserver does not check that it exists
Obj = dict[str, Any]


def crd_without_cel() -> Obj:
    """The TrainingJob CRD with every ``x-kubernetes-validations`` left out."""
    doc: Obj = yaml.safe_load(
        (ROOT / "config/crd/bases/training.kubetrain.dev_trainingjobs.yaml").read_text()
    )

    def strip(node: Any) -> None:
        if isinstance(node, dict):
            node.pop("x-kubernetes-validations", None)
            for v in node.values():
                strip(v)
        elif isinstance(node, list):
            for v in node:
                strip(v)

    strip(doc)
    return doc


def running_status(now: datetime.datetime) -> Obj:
    """What a kubelet (kwok here) writes when a pod runs."""
    stamp = now.strftime("%Y-%m-%dT%H:%M:%SZ")
    conditions = [
        {"type": t, "status": "True", "lastTransitionTime": stamp} for t in ("Ready", "ContainersReady")
    ]
    return {"status": {"phase": "Running", "startTime": stamp, "podIP": "10.1.0.1", "conditions": conditions}}


async def cost(
    c: devcluster.Cluster, what: str, count: int, concurrency: int, write: Callable[[int], Awaitable[Any]]
) -> float:
    """Milliseconds of apiserver CPU per write: ``write(0..count-1)``, ``concurrency`` at a time."""
    before = jobs_bench.control_plane_cpu(c)["kube-apiserver"]
    sem = asyncio.Semaphore(concurrency)

    async def one(i: int) -> None:
        async with sem:
            await write(i)

    await asyncio.gather(*(one(i) for i in range(count)))
    await asyncio.sleep(1.0)  # the apiserver's cache takes in the last events
    ms = 1000 * (jobs_bench.control_plane_cpu(c)["kube-apiserver"] - before) / count
    jobs_bench.log(f"  {what}: {ms:.2f} ms")
    return ms


async def measure(c: devcluster.Cluster, args: argparse.Namespace) -> dict[str, float]:
    n, k, r = args.jobs, args.concurrency, args.replicas
    ns = NAMESPACE
    api = await client.Client.connect(str(c.kubeconfig), qps=1e6, burst=1_000_000, timeout=60)
    try:
        await api.create(jobs_bench.NAMESPACES, {"metadata": {"name": ns}})
        await api.create(jobs_bench.SERVICEACCOUNTS, {"metadata": {"name": "default"}}, ns)
        names = [f"job-{j:05d}" for j in range(n)]
        stored: list[Obj] = [{}] * n

        async def create_job(j: int) -> None:
            stored[j] = await api.create(
                client.TRAININGJOBS, jobs_bench.job_body(names[j], r, ns, args.host_names), ns
            )

        ms: dict[str, float] = {}
        ms["TrainingJob create"] = await cost(c, "TrainingJob create", n, k, create_job)
        now = datetime.datetime.now(datetime.UTC)
        patches = [jobs_bench.status_patches(name, r, now) for name in names]
        for step, label in enumerate(("TrainingJob status: Created", "TrainingJob status: Running")):

            def patch(j: int, step: int = step) -> Awaitable[Any]:
                return api.merge_patch(
                    client.TRAININGJOBS, names[j], patches[j][step], ns, subresource="status"
                )

            ms[label] = await cost(c, label, n, k, patch)
        rendered, services, _ = jobs_bench.operator_objects(stored)
        bare = [jobs_bench.pod_body(f"bare-{i:06d}", namespace=ns) for i in range(len(rendered))]
        service_list = list(services.values())
        ms["Service create"] = await cost(
            c,
            "Service create",
            len(service_list),
            k,
            lambda i: api.create(client.SERVICES, service_list[i], ns),
        )
        status = running_status(now)
        for kind, pods in (("bare pod", bare), ("operator's pod", rendered)):
            pod_names = [p["metadata"]["name"] for p in pods]
            ms[f"{kind}: create"] = await cost(
                c, f"{kind}: create", len(pods), k, lambda i, pods=pods: api.create(client.PODS, pods[i], ns)
            )

            def bind(i: int, pod_names: list[str] = pod_names) -> Awaitable[Any]:
                body = {"metadata": {"name": pod_names[i]}, "target": {"kind": "Node", "name": NODE}}
                return api.request(
                    "POST", client.PODS, namespace=ns, name=pod_names[i], subresource="binding", body=body
                )

            ms[f"{kind}: binding"] = await cost(c, f"{kind}: binding", len(pods), k, bind)
            ms[f"{kind}: status Running"] = await cost(
                c,
                f"{kind}: status Running",
                len(pods),
                k,
                lambda i, pod_names=pod_names: api.merge_patch(
                    client.PODS, pod_names[i], status, ns, subresource="status"
                ),
            )
        return ms
    finally:
        await api.close()


def per_job(ms: dict[str, float], replicas: int, services: int) -> dict[str, float]:
    def pods(kind: str) -> float:
        return replicas * sum(ms[f"{kind}: {w}"] for w in ("create", "binding", "status Running"))

    bare = pods("bare pod")
    job = (
        ms["TrainingJob create"]
        + ms["TrainingJob status: Created"]
        + ms["TrainingJob status: Running"]
        + services * ms["Service create"]
        + pods("operator's pod")
    )
    return {"bare pods": bare, "operator": job, "ratio": job / bare}


def report(ms: dict[str, float], job: dict[str, float], args: argparse.Namespace) -> str:
    lines = [
        f"kube-apiserver CPU per write ({args.jobs} jobs x {args.replicas}, {args.host_names}, "
        f"{'without' if args.without_cel else 'with'} the CRD's CEL rules, {args.concurrency} at a time):",
        *(f"  {what:32s} {v:6.2f} ms" for what, v in ms.items()),
        f"per job: {args.replicas} bare pods {job['bare pods']:.2f} ms; the operator's writes "
        f"{job['operator']:.2f} ms: {job['ratio']:.2f}x the bare pods",
    ]
    return "\n".join(lines)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--jobs", type=int, default=2000, help="writes of each kind (default 2000)")
    p.add_argument("--replicas", type=int, default=4, help="pods per job: 1 Master + N-1 Workers (default 4)")
    p.add_argument("--concurrency", type=int, default=16, help="writes in flight at once (default 16)")
    p.add_argument("--host-names", choices=("PerReplica", "PerJob"), default="PerJob")
    p.add_argument("--without-cel", action="store_true", help="install the CRD without its CEL rules")
    p.add_argument("--json", action="store_true", help="print the figures as JSON instead of the report")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    jobs_bench.log("starting etcd and kube-apiserver")
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


if __name__ == "__main__":
    sys.exit(main())
