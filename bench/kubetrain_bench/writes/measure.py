"""The writes a TrainingJob costs, one kind at a time: kube-apiserver's CPU per write."""

from __future__ import annotations

import argparse
import asyncio
import datetime
from collections.abc import Awaitable, Callable
from typing import Any

import yaml

from kubetrain.devcluster import cluster as devcluster
from kubetrain.operator.runtime import client
from kubetrain_bench import ROOT
from kubetrain_bench.console import log
from kubetrain_bench.jobs.bodies import job_body, operator_objects, pod_body, status_patches
from kubetrain_bench.jobs.common import NAMESPACES, SERVICEACCOUNTS, Obj
from kubetrain_bench.procs import control_plane_cpu

NAMESPACE = "writes"
NODE = "node-0"  # bindings name a node; the apiserver does not check that it exists


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
    before = control_plane_cpu(c)["kube-apiserver"]
    sem = asyncio.Semaphore(concurrency)

    async def one(i: int) -> None:
        async with sem:
            await write(i)

    await asyncio.gather(*(one(i) for i in range(count)))
    await asyncio.sleep(1.0)  # the apiserver's cache takes in the last events
    ms = 1000 * (control_plane_cpu(c)["kube-apiserver"] - before) / count
    log(f"  {what}: {ms:.2f} ms")
    return ms


async def measure(c: devcluster.Cluster, args: argparse.Namespace) -> dict[str, float]:
    n, k, r = args.jobs, args.concurrency, args.replicas
    ns = NAMESPACE
    api = await client.Client.connect(str(c.kubeconfig), qps=1e6, burst=1_000_000, timeout=60)
    try:
        await api.create(NAMESPACES, {"metadata": {"name": ns}})
        await api.create(SERVICEACCOUNTS, {"metadata": {"name": "default"}}, ns)
        names = [f"job-{j:05d}" for j in range(n)]
        stored: list[Obj] = [{}] * n

        async def create_job(j: int) -> None:
            stored[j] = await api.create(client.TRAININGJOBS, job_body(names[j], r, ns, args.host_names), ns)

        ms: dict[str, float] = {}
        ms["TrainingJob create"] = await cost(c, "TrainingJob create", n, k, create_job)
        now = datetime.datetime.now(datetime.UTC)
        patches = [status_patches(name, r, now) for name in names]
        for step, label in enumerate(("TrainingJob status: Created", "TrainingJob status: Running")):

            def patch(j: int, step: int = step) -> Awaitable[Any]:
                return api.merge_patch(
                    client.TRAININGJOBS, names[j], patches[j][step], ns, subresource="status"
                )

            ms[label] = await cost(c, label, n, k, patch)
        rendered, services, _ = operator_objects(stored)
        bare = [pod_body(f"bare-{i:06d}", namespace=ns) for i in range(len(rendered))]
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

            def create(i: int, pods: list[Obj] = pods) -> Awaitable[Any]:
                return api.create(client.PODS, pods[i], ns)

            ms[f"{kind}: create"] = await cost(c, f"{kind}: create", len(pods), k, create)

            def bind(i: int, pod_names: list[str] = pod_names) -> Awaitable[Any]:
                body = {"metadata": {"name": pod_names[i]}, "target": {"kind": "Node", "name": NODE}}
                return api.request(
                    "POST", client.PODS, namespace=ns, name=pod_names[i], subresource="binding", body=body
                )

            ms[f"{kind}: binding"] = await cost(c, f"{kind}: binding", len(pods), k, bind)

            def to_running(i: int, pod_names: list[str] = pod_names) -> Awaitable[Any]:
                return api.merge_patch(client.PODS, pod_names[i], status, ns, subresource="status")

            ms[f"{kind}: status Running"] = await cost(c, f"{kind}: status Running", len(pods), k, to_running)
        return ms
    finally:
        await api.close()
