"""Benchmark of the operator's caches and controller runtime against a real apiserver.

    make bench                                  # or: python -P bench/runtime_bench.py
    make bench BENCH_ARGS="--objects 40000"     # see --help for the rest

Starts the local apiserver tier, installs the TrainingJob CRD and fills one namespace with
what the operator would find there at ``--objects`` pods: ``objects / 4`` TrainingJobs of
the pytorch-ddp sample (one Master, three Workers) as ``kubectl apply`` leaves them (the
``last-applied-configuration`` annotation) with a Running status, and for each the four
Services and four pods :func:`kubetrain.operator.render.render` makes, owned by the job,
bound to one of ``--nodes`` Nodes and given the status a kubelet writes for a running
container (conditions, container IDs, image digests, IPs, volume mounts). The apiserver adds
its defaults, the ServiceAccount token volume and ``managedFields``, as for real objects.
No scheduler or kubelet runs: the pods are bound at creation and their status is patched.

Then, for each ``--variants`` of the caches' transforms — ``none``, ``strip`` (only
``managedFields`` stripped: the informer's default) and ``project`` (the per-kind
projections of :mod:`kubetrain.operator.projection`, what the operator runs) — a fresh
process starts the operator's informers one at a time, as ``kubetrain.operator.main``
configures them (label selector, owner index), and measures its RSS (after
``gc.collect()``) before and after each cache syncs. Then a controller with a no-op
reconciler and 4 workers reconciles every pod's key, and, last, each store's live size is
taken (a walk of its objects, every object counted once). Printed: per variant, RSS and
live size by cache (MiB and bytes per object), each process's peak RSS, the sync times and
the no-op reconcile rate.

RSS grows by more than the live size: a page of the list (500 whole objects) is decoded
before it is transformed, and what is freed of it stays with the process, partly reused by
the next cache. So the sum of a process's RSS steps is its true cost; one cache's step is
approximate, and its live size is exact.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import pathlib
import subprocess
import sys
import time
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import yaml

# kr8s 0.20 knows Kubernetes up to 1.35; the local control plane runs 1.36.
warnings.filterwarnings("ignore", message="Kubernetes version .* is not supported")

ROOT = pathlib.Path(__file__).resolve().parent.parent
NAMESPACE = "bench"
LABEL = "training.kubetrain.dev/job-name"
VARIANTS = ("none", "strip", "project")
# Placeholders in the rendered template of one job, replaced per job.
JOB, UID = "tjzzzzzz", "99999999-9999-9999-9999-999999999999"
NOW = "2026-11-24T12:00:00Z"

Obj = dict[str, Any]


def rss_mib(field: str = "VmRSS") -> float:
    """The process's resident set (``VmHWM``: its peak so far), in MiB."""
    for line in pathlib.Path("/proc/self/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) / 1024
    return float("nan")


# --- the objects -----------------------------------------------------------------------------


def sample_job(name: str) -> Obj:
    """The pytorch-ddp sample with three Workers, as ``kubectl apply`` would create it."""
    job: Obj = yaml.safe_load((ROOT / "samples" / "v1beta1" / "pytorch-ddp.yaml").read_text())
    job["metadata"] = {"name": name, "namespace": NAMESPACE}
    job["spec"]["replicaSpecs"]["Worker"]["replicas"] = 3
    applied = json.dumps(job, separators=(",", ":"), sort_keys=True)
    job["metadata"]["annotations"] = {"kubectl.kubernetes.io/last-applied-configuration": applied + "\n"}
    return job


def rendered_template() -> str:
    """The Services and pods of one job named :data:`JOB` (uid :data:`UID`), as JSON text."""
    import attrs

    from kubetrain.api import scheme
    from kubetrain.operator import render
    from kubetrain.operator.frameworks import registry

    job = scheme.to_hub(scheme.decode(sample_job(JOB)))
    job = attrs.evolve(job, metadata=attrs.evolve(job.metadata, uid=UID))
    objects = render.render(job, registry.default().get("pytorch"))
    return json.dumps([o for o in objects if o["kind"] in ("Service", "Pod")])


def job_status(name: str) -> Obj:
    def replica(rtype: str, n: int) -> Obj:
        return {
            "active": n,
            "ready": n,
            "selector": f"{LABEL}={name},training.kubetrain.dev/replica-type={rtype}",
        }

    return {
        "state": "Running",
        "conditions": [
            {
                "type": "Created",
                "status": "True",
                "reason": "TrainingJobCreated",
                "message": f"TrainingJob {name} was created",
                "lastTransitionTime": NOW,
            },
            {
                "type": "Running",
                "status": "True",
                "reason": "Running",
                "message": "every replica is running",
                "lastTransitionTime": NOW,
            },
        ],
        "replicaStatuses": {"Master": replica("master", 1), "Worker": replica("worker", 3)},
        "startTime": NOW,
    }


def kubelet_status(pod: Obj, number: int) -> Obj:
    """What a kubelet (1.36, containerd) writes for a pod whose containers all run."""
    node = int(pod["spec"]["nodeName"].rsplit("-", 1)[1])
    host_ip, pod_ip = f"10.0.{node}.1", f"10.{64 + number // 65536}.{number // 256 % 256}.{number % 256}"
    condition = {"lastProbeTime": None, "lastTransitionTime": NOW, "observedGeneration": 1, "status": "True"}
    containers = [
        {
            "containerID": f"containerd://{number:064x}",
            "image": c["image"],
            "imageID": f"{c['image'].split(':')[0]}@sha256:{'ab' * 32}",
            "lastState": {},
            "name": c["name"],
            "ready": True,
            "restartCount": 0,
            "started": True,
            "state": {"running": {"startedAt": NOW}},
            "user": {"linux": {"gid": 0, "supplementalGroups": [0], "uid": 0}},
            "volumeMounts": [
                {
                    "mountPath": m["mountPath"],
                    "name": m["name"],
                    "readOnly": bool(m.get("readOnly")),
                    "recursiveReadOnly": "Disabled",
                }
                for m in c.get("volumeMounts", [])
            ],
        }
        for c in pod["spec"]["containers"]
    ]
    return {
        "conditions": [
            {**condition, "type": t}
            for t in ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled")
        ],
        "containerStatuses": containers,
        "hostIP": host_ip,
        "hostIPs": [{"ip": host_ip}],
        "observedGeneration": 1,
        "phase": "Running",
        "podIP": pod_ip,
        "podIPs": [{"ip": pod_ip}],
        "qosClass": pod.get("status", {}).get("qosClass", "BestEffort"),
        "startTime": NOW,
    }


def node_object(i: int) -> Obj:
    """A Node as a kubelet registers it, with the 30 images it reports."""
    name = f"node-{i:03d}"
    capacity = {"cpu": "32", "ephemeral-storage": "507904Mi", "memory": "263921664Ki", "pods": "110"}
    return {
        "metadata": {
            "name": name,
            "labels": {
                "kubernetes.io/arch": "amd64",
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "node.kubernetes.io/instance-type": "n2-standard-32",
                "topology.kubernetes.io/zone": f"zone-{i % 3}",
            },
            "annotations": {
                "node.alpha.kubernetes.io/ttl": "0",
                "volumes.kubernetes.io/controller-managed-attach-detach": "true",
            },
        },
        "spec": {
            "podCIDR": f"10.{64 + i // 256}.{i % 256}.0/24",
            "podCIDRs": [f"10.{64 + i // 256}.{i % 256}.0/24"],
        },
        "status": {
            "addresses": [
                {"type": "InternalIP", "address": f"10.0.{i}.1"},
                {"type": "Hostname", "address": name},
            ],
            "allocatable": capacity,
            "capacity": capacity,
            "conditions": [
                {
                    "type": t,
                    "status": "True" if t == "Ready" else "False",
                    "reason": reason,
                    "message": message,
                    "lastHeartbeatTime": NOW,
                    "lastTransitionTime": NOW,
                }
                for t, reason, message in (
                    (
                        "MemoryPressure",
                        "KubeletHasSufficientMemory",
                        "kubelet has sufficient memory available",
                    ),
                    ("DiskPressure", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
                    ("PIDPressure", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
                    ("Ready", "KubeletReady", "kubelet is posting ready status"),
                )
            ],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "images": [
                {
                    "names": [
                        f"registry.example.com/team/image-{k}@sha256:{k:064x}",
                        f"registry.example.com/team/image-{k}:v{k}",
                    ],
                    "sizeBytes": 100_000_000 + k,
                }
                for k in range(30)
            ],
            "nodeInfo": {
                "architecture": "amd64",
                "bootID": f"{i:08x}-0000-0000-0000-000000000000",
                "containerRuntimeVersion": "containerd://2.1.4",
                "kernelVersion": "6.8.0-1015-gcp",
                "kubeProxyVersion": "",
                "kubeletVersion": "v1.36.3",
                "machineID": f"{i:032x}",
                "operatingSystem": "linux",
                "osImage": "Debian GNU/Linux 13 (trixie)",
                "systemUUID": f"{i:08x}-1111-1111-1111-111111111111",
            },
        },
    }


async def create(kubeconfig: str, objects: int, nodes: int, concurrency: int) -> dict[str, float]:
    """Create the namespace's jobs, Services, pods and the Nodes; time each kind."""
    from kubetrain.operator.runtime import client

    api = await client.Client.connect(kubeconfig, qps=5000, burst=5000, timeout=120)
    await api.create(
        client.Resource("", "v1", "namespaces", "Namespace", namespaced=False),
        {"metadata": {"name": NAMESPACE}},
    )
    await api.create(
        client.Resource("", "v1", "serviceaccounts", "ServiceAccount"),
        {"metadata": {"name": "default"}},
        NAMESPACE,
    )
    sem = asyncio.Semaphore(concurrency)

    async def call(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        async with sem:
            return await fn(*args, **kwargs)

    started = time.perf_counter()
    await asyncio.gather(*(call(api.create, client.NODES, node_object(i)) for i in range(nodes)))
    template = rendered_template()

    async def one(i: int) -> None:
        name = f"job-{i:06d}"
        made = await call(api.create, client.TRAININGJOBS, sample_job(name), NAMESPACE)
        await call(
            api.merge_patch,
            client.TRAININGJOBS,
            name,
            {"status": job_status(name)},
            NAMESPACE,
            subresource="status",
        )
        children = json.loads(template.replace(JOB, name).replace(UID, made["metadata"]["uid"]))
        pods = [o for o in children if o["kind"] == "Pod"]
        for k, pod in enumerate(pods):
            pod["spec"]["nodeName"] = f"node-{(4 * i + k) % nodes:03d}"
        await asyncio.gather(
            *(call(api.create, client.SERVICES, o, NAMESPACE) for o in children if o["kind"] == "Service")
        )
        created = await asyncio.gather(*(call(api.create, client.PODS, p, NAMESPACE) for p in pods))
        await asyncio.gather(
            *(
                call(
                    api.merge_patch,
                    client.PODS,
                    p["metadata"]["name"],
                    {"status": kubelet_status(p, 4 * i + k)},
                    NAMESPACE,
                    subresource="status",
                )
                for k, p in enumerate(created)
            )
        )

    # Jobs in waves, so that the semaphore's queue stays short.
    jobs = objects // 4
    for first in range(0, jobs, 1000):
        await asyncio.gather(*(one(i) for i in range(first, min(first + 1000, jobs))))
    await api.close()
    return {"create_seconds": time.perf_counter() - started, "jobs": jobs}


# --- the operator's side -----------------------------------------------------------------------


def transforms(variant: str) -> dict[str, Callable[[Obj], Obj]]:
    from kubetrain.operator import projection
    from kubetrain.operator.runtime import informer

    if variant == "none":
        return dict.fromkeys(("TrainingJob", "Pod", "Service", "ConfigMap", "Node"), lambda o: o)
    if variant == "strip":
        return dict.fromkeys(
            ("TrainingJob", "Pod", "Service", "ConfigMap", "Node"), informer.strip_managed_fields
        )
    return {
        "TrainingJob": projection.training_job,
        "Pod": projection.pod,
        "Service": projection.service,
        "ConfigMap": projection.config_map,
        "Node": projection.node,
    }


def deep_size(objs: list[Obj]) -> int:
    """Bytes of ``objs`` and everything they hold, each Python object counted once."""
    seen: set[int] = set()
    total = 0
    stack: list[Any] = list(objs)
    while stack:
        o = stack.pop()
        if id(o) in seen:
            continue
        seen.add(id(o))
        total += sys.getsizeof(o)
        if isinstance(o, dict):
            stack.extend(o.keys())
            stack.extend(o.values())
        elif isinstance(o, list | tuple):
            stack.extend(o)
    return total


async def operator(kubeconfig: str, variant: str) -> Obj:
    from kubetrain.operator import main
    from kubetrain.operator.runtime import cache, client, controller, informer, reconcile

    api = await client.Client.connect(kubeconfig, qps=100, burst=200)
    chosen = transforms(variant)
    caches: list[Obj] = []
    informers: dict[str, informer.Informer] = {}
    tasks = []
    gc.collect()
    rss_start = rss_mib()
    for resource_, selected in (
        (client.TRAININGJOBS, False),
        (client.PODS, True),
        (client.SERVICES, True),
        (client.CONFIGMAPS, True),
        (client.NODES, False),
    ):
        gc.collect()
        before = rss_mib()
        inf = informer.Informer(
            api,
            resource_,
            namespace=NAMESPACE if resource_.namespaced else None,
            label_selector=main.CHILD_SELECTOR if selected else None,
            indexers={"owner": cache.by_owner()} if selected else None,
            transform=chosen[resource_.kind],
        )
        started = time.perf_counter()
        tasks.append(asyncio.create_task(inf.run()))
        await inf.synced.wait()
        synced = time.perf_counter() - started
        gc.collect()
        after = rss_mib()
        informers[resource_.kind] = inf
        caches.append(
            {
                "kind": resource_.kind,
                "objects": len(inf.store),
                "sync_seconds": synced,
                "rss_mib": after - before,
            }
        )
    rss_synced = rss_mib()
    # Not getrusage's ru_maxrss: Linux carries it over from the parent through fork and exec.
    max_rss = rss_mib("VmHWM")
    # Last: the walk's own bookkeeping would blur every RSS figure after it.
    for c in caches:
        c["live_mib"] = deep_size(informers[c["kind"]].store.objects()) / 2**20
    pods = informers["Pod"]
    total = len(pods.store)

    class NoOp:
        count = 0
        done = asyncio.Event()

        async def reconcile(self, request: reconcile.Request) -> reconcile.Result:
            NoOp.count += 1
            if NoOp.count == total:
                NoOp.done.set()
            return reconcile.Result()

    ctrl = controller.Controller("bench", NoOp(), pods, workers=4)
    keys = pods.store.keys()
    for key in keys:
        namespace, name = key.split("/")
        ctrl.queue.add(reconcile.Request(namespace, name))
    started = time.perf_counter()
    tasks.append(asyncio.create_task(ctrl.run()))
    await NoOp.done.wait()
    reconciled = time.perf_counter() - started
    for t in tasks:
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    await api.close()
    return {
        "variant": variant,
        "caches": caches,
        "rss_start_mib": rss_start,
        "rss_synced_mib": rss_synced,
        "max_rss_mib": max_rss,
        "reconcile_seconds": reconciled,
        "reconciles_per_second": total / reconciled,
    }


def run_operator(kubeconfig: str, variant: str) -> Obj:
    out = subprocess.run(
        [sys.executable, "-P", __file__, "--operator", kubeconfig, variant],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ},
    )
    figures: Obj = json.loads(out.stdout)
    return figures


# --- the report --------------------------------------------------------------------------------


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
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
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


if __name__ == "__main__":
    main()
