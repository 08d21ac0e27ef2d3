"""What the operator would find in a namespace at scale: TrainingJobs as ``kubectl apply`` leaves
them, with a Running status, and their Services and running pods, bound to Nodes as kubelets
register them; and creating them all."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from typing import Any

from kubetrain.api import naming
from kubetrain_bench import samples

NAMESPACE = "bench"
LABEL = naming.JOB_NAME
# Placeholders in the rendered template of one job, replaced per job.
JOB, UID = "tjzzzzzz", "99999999-9999-9999-9999-999999999999"
NOW = "2026-11-24T12:00:00Z"

Obj = dict[str, Any]


def sample_job(name: str) -> Obj:
    """The pytorch-ddp sample with three Workers, as ``kubectl apply`` would create it."""
    job = samples.load("v1beta1", "pytorch-ddp")
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
