"""The objects the benchmark creates: TrainingJobs, bare pods and Services, and for the floor of any
operator, the pods, Services and status patches the operator itself makes for a job."""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Mapping

import attrs

from kubetrain.api import meta, scheme, v1beta1, wire
from kubetrain.operator import render
from kubetrain.operator.frameworks import registry as fw_registry
from kubetrain_bench.jobs.common import Obj


def pod_body(
    name: str, image: str = "bench", labels: Mapping[str, str] | None = None, namespace: str | None = None
) -> Obj:
    return {
        "metadata": {
            "name": name,
            "labels": dict(labels or {}),
            **({"namespace": namespace} if namespace else {}),
        },
        "spec": {"containers": [{"name": "pytorch", "image": image}]},
    }


def service_body(pod: Obj, per_job: bool) -> Obj | None:
    """The headless Service the operator would make with ``pod``: per replica, one named like it
    selecting it; per job, one for the first pod of each job, named after the job, selecting its pods."""
    labels = pod["metadata"]["labels"]
    if per_job:
        if not pod["metadata"]["name"].endswith("-0"):
            return None
        return {
            "metadata": {"name": labels["job"]},
            "spec": {"clusterIP": "None", "selector": {"job": labels["job"]}},
        }
    name = pod["metadata"]["name"]
    return {
        "metadata": {"name": name},
        "spec": {"clusterIP": "None", "selector": {"pod": name}, "ports": [{"name": "p", "port": 23456}]},
    }


def operator_objects(jobs: Iterable[Obj]) -> tuple[list[Obj], dict[str, Obj], set[str]]:
    """The pods and Services the operator makes for ``jobs`` (as stored, with their uids), rendered
    by the operator's own code, byte for byte: the pods; pod name -> the Service to create just
    before it (a replica's own, or the job's before its first pod); and each job's last pod."""
    pods: list[Obj] = []
    services: dict[str, Obj] = {}
    last: set[str] = set()
    for stored in jobs:
        job = scheme.to_hub(scheme.decode(stored))
        objects = render.render(job, fw_registry.default().get(job.spec.framework.name))
        own = [o for o in objects if o["kind"] == "Pod"]
        names = {p["metadata"]["name"] for p in own}
        for o in objects:
            if o["kind"] == "Service":
                name = o["metadata"]["name"]
                services[name if name in names else own[0]["metadata"]["name"]] = o
        pods += own
        last.add(own[-1]["metadata"]["name"])
    return pods, services, last


# The LocalQueue the jobs wait in with --kueue (one per namespace, each over a ClusterQueue of its own).
QUEUE = "bench"


def job_body(
    name: str,
    replicas: int,
    namespace: str,
    host_names: str = "PerReplica",
    framework: str = "pytorch",
    ps: int = 0,
    progress: bool = False,
    queue: str | None = None,
) -> Obj:
    """One Master, ``ps`` PS (TensorFlow) and the rest Workers: ``replicas`` pods in all; with
    ``progress``, ``spec.progress`` (each pod gets kubetrain's agent, whose log the operator reads);
    with ``queue``, in that Kueue LocalQueue (each pod asks for a tenth of a cpu, which it charges)."""
    container: Obj = {"name": framework, "image": "bench"}
    if queue:
        container["resources"] = {"requests": {"cpu": "100m"}}
    template = {"spec": {"containers": [container]}}
    specs: Obj = {"Master": {"replicas": 1, "template": template}}
    if ps:
        specs["PS"] = {"replicas": ps, "template": template}
    if replicas > 1 + ps:
        specs["Worker"] = {"replicas": replicas - 1 - ps, "template": template}
    return {
        "apiVersion": "training.kubetrain.dev/v1beta1",
        "kind": "TrainingJob",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "framework": {"name": framework},
            "replicaSpecs": specs,
            "network": {"hostNames": host_names},
            **({"progress": {}} if progress else {}),
            **({"runPolicy": {"schedulingPolicy": {"queue": queue}}} if queue else {}),
        },
    }


def status_patches(job: str, replicas: int, now: datetime.datetime) -> tuple[Obj, Obj]:
    """The operator's two status writes for a healthy job: its pods made, then all running."""

    def condition(kind: v1beta1.ConditionType, reason: str, message: str) -> meta.Condition:
        return meta.Condition(
            type=kind,
            status=meta.ConditionStatus.TRUE,
            reason=reason,
            message=message,
            last_transition_time=now,
        )

    counts = {"Master": 1, "Worker": replicas - 1} if replicas > 1 else {"Master": 1}
    created = v1beta1.TrainingJobStatus(
        state=v1beta1.JobState.CREATED,
        conditions=(
            condition(v1beta1.ConditionType.CREATED, "TrainingJobCreated", f"TrainingJob {job} was created"),
        ),
        replica_statuses={
            t: v1beta1.ReplicaStatus(
                selector=f"training.kubetrain.dev/job-name={job},training.kubetrain.dev/replica-type={t.lower()}"
            )
            for t in counts
        },
        start_time=now,
        observed_generation=1,
    )
    running = attrs.evolve(
        created,
        state=v1beta1.JobState.RUNNING,
        conditions=(
            *created.conditions,
            condition(v1beta1.ConditionType.RUNNING, "Running", "every replica is running"),
        ),
        replica_statuses={
            t: attrs.evolve(st, active=counts[t], ready=counts[t])
            for t, st in created.replica_statuses.items()
        },
    )
    return {"status": wire.unstructure(created)}, {"status": wire.unstructure(running)}
