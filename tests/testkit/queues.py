"""Kueue queues on a cluster tier, for both of kubetrain's Kueue routes: a ResourceFlavor, a
ClusterQueue with cpu for a number of pods, a LocalQueue, and the jobs that wait in it.

Kueue's names are spelled out here, not taken from the operator, so that the tests check them
against Kueue's own.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator
from typing import Any

from kubetrain.devcluster import cluster as devcluster
from kubetrain.devcluster import kueue, kwok
from testkit import operator
from testkit.jobs import pods, sample
from testkit.kube import eventually

KUEUE = kueue.API_VERSION
PODS = 3  # the pytorch-ddp sample: a Master and two Workers
CPU = 1  # each pod asks for one cpu, so a job needs PODS cpus


@contextlib.contextmanager
def kueue_and_operator(c: devcluster.Cluster, *operator_flags: str) -> Iterator[None]:
    """Kueue, and the operator (with ``operator_flags``), on ``c`` until the block is left."""
    proc = kueue.start(c)
    try:
        op = operator.start(c, None, *operator_flags)
        try:
            yield
        finally:
            op.stop()
    finally:
        kueue.stop(c, proc)


def apply(c: devcluster.Cluster, obj: dict[str, Any]) -> None:
    c.kubectl("apply", "--server-side", "--force-conflicts", "-f", "-", input=json.dumps(obj))


def get(c: devcluster.Cluster, kind: str, name: str, namespace: str | None = None) -> dict[str, Any] | None:
    where = ["-n", namespace] if namespace else []
    r = c.kubectl("get", f"{kind}.kueue.x-k8s.io", name, *where, "-o", "json", check=False)
    return json.loads(r.stdout) if r.returncode == 0 else None


def true(obj: dict[str, Any] | None, ctype: str) -> bool:
    conds = (obj or {}).get("status", {}).get("conditions", [])
    return any(c["type"] == ctype and c["status"] == "True" for c in conds)


def local_queue(
    c: devcluster.Cluster,
    namespace: str,
    *,
    cpu: int = PODS * CPU,
    preemption: bool = False,
    checks: tuple[str, ...] = (),
    flavor_spec: dict[str, Any] | None = None,
) -> Iterator[str]:
    """A LocalQueue in ``namespace`` whose ClusterQueue holds ``cpu`` (one job's, by default), with
    preemption ``withinClusterQueue: LowerPriority``, the admission checks ``checks`` and a flavor
    with ``flavor_spec``; its name, until the generator is closed."""
    kueue.manage(c, namespace)
    name = f"{namespace}-q"
    flavor = f"{namespace}-flavor"
    cq_spec: dict[str, Any] = {
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}},
        "resourceGroups": [
            {
                "coveredResources": ["cpu"],
                "flavors": [{"name": flavor, "resources": [{"name": "cpu", "nominalQuota": cpu}]}],
            }
        ],
    }
    if preemption:
        cq_spec["preemption"] = {"withinClusterQueue": "LowerPriority"}
    if checks:
        cq_spec["admissionChecksStrategy"] = {"admissionChecks": [{"name": n} for n in checks]}
    objects: list[dict[str, Any]] = [
        {
            "apiVersion": KUEUE,
            "kind": "ResourceFlavor",
            "metadata": {"name": flavor},
            "spec": flavor_spec or {},
        },
        {"apiVersion": KUEUE, "kind": "ClusterQueue", "metadata": {"name": name}, "spec": cq_spec},
        {
            "apiVersion": KUEUE,
            "kind": "LocalQueue",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"clusterQueue": name},
        },
    ]
    for obj in objects:
        apply(c, obj)
    eventually(
        f"LocalQueue {name} to be active",
        lambda: true(get(c, "localqueue", name, namespace), "Active"),
        timeout=30,
    )
    yield name
    for obj in reversed(objects):
        where = ["-n", namespace] if obj["kind"] == "LocalQueue" else []
        kind = f"{obj['kind'].lower()}s.kueue.x-k8s.io"
        c.kubectl(
            "delete", kind, obj["metadata"]["name"], *where, "--wait=false", "--ignore-not-found", check=False
        )


def queued_job(name: str, queue: str, priority_class: str | None = None) -> dict[str, Any]:
    """The pytorch-ddp sample in ``queue``, each pod asking for :data:`CPU`."""
    policy: dict[str, Any] = {"queue": queue}
    if priority_class:
        policy["priorityClass"] = priority_class
    job = sample("pytorch-ddp", runPolicy__schedulingPolicy=policy)
    job["metadata"]["name"] = name
    # The quota holds exactly one job's pods; progress's agent would add its own requests to each.
    del job["spec"]["progress"]
    for replica in job["spec"]["replicaSpecs"].values():
        replica["template"]["spec"]["containers"][0]["resources"] = {"requests": {"cpu": str(CPU)}}
    return job


def priority_classes(c: devcluster.Cluster, **values: int) -> Iterator[None]:
    """PriorityClasses named as the keywords, with their values, until the generator is closed."""
    for name, value in values.items():
        apply(
            c,
            {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": name},
                "value": value,
            },
        )
    yield
    for name in values:
        c.kubectl("delete", "priorityclass", name, "--ignore-not-found", check=False)


def reserved_cpu(c: devcluster.Cluster, cluster_queue: str) -> int:
    """The cpu the ClusterQueue has reserved for admitted Workloads."""
    cq = get(c, "clusterqueue", cluster_queue) or {}
    total = 0
    for flavor in cq.get("status", {}).get("flavorsReservation", []):
        for r in flavor.get("resources", []):
            if r["name"] == "cpu":
                total += int(r.get("total", "0"))
    return total


def finish_all(c: devcluster.Cluster, namespace: str, name: str) -> None:
    """Every running pod of the job exits 0, Master first, as torchrun's ranks would end."""
    for pod_name, pod in sorted(pods(c, namespace, name).items()):
        if pod.get("status", {}).get("phase") != "Running" or pod["metadata"].get("deletionTimestamp"):
            continue
        try:
            kwok.finish_pod(c, namespace, pod_name, 0)
        except devcluster.KubectlError as e:
            if "NotFound" not in str(e):
                raise


def still(what: str, probe: Any, seconds: float = 3) -> None:
    """``probe()`` stays true for ``seconds``: nothing lets the job in meanwhile."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        assert probe(), what
        time.sleep(0.3)
