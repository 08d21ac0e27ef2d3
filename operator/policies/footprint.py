"""What a job's objects weigh, and the bounds admission holds them to.

Replica counts alone do not bound a job: what a pod carries can grow with the job too. A
TensorFlow pod's ``TF_CONFIG`` lists every task of the job, so its pods together grow with the
square of the workers (1,000 workers render 31.7 MB, 3,000 render 281 MB). Every object is stored
in etcd, whose requests are refused above 1.5 MiB by default and which turns the whole cluster
read-only once its 2 GiB quota is full. So a job is refused when

- one of its objects would be larger than :data:`OBJECT_BYTES` (1 MiB as JSON, leaving room
  under etcd's limit for what the apiserver adds: status, managed fields), or
- its objects together would be larger than :data:`JOB_BYTES` (128 MiB: a 10,000-pod PyTorch job
  renders 18.5 MB; a TensorFlow job with 2 PS fits up to 1,897 workers).

The figures come from the job's *representatives* (:func:`.render.representatives`): the objects
shared by the job, and each replica type's last Pod and Service (the longest names), each
counted once per replica of its type — so checking a job costs one pod per type, however large
the job. The refusal names the replica type, the figure, the env variable that weighs most, and
what to do instead.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from kubetrain.api import naming, v1beta1, validation

__all__ = ["JOB_BYTES", "OBJECT_BYTES", "SMALL_JOB", "errors", "size", "weight", "worth_weighing"]

OBJECT_BYTES = 1 << 20
JOB_BYTES = 128 << 20
# Replicas up to which a job is not weighed: a pod template has at most 512 KiB and no framework
# adds more than a few KiB per replica to an object (a TF_CONFIG entry is ~40 bytes), so such a
# job stays far under both bounds (64 pods of 512 KiB: 33 MB). It spares the reconciler a render
# of each new small job.
SMALL_JOB = 64


def worth_weighing(job: v1beta1.TrainingJob) -> bool:
    """Whether ``job`` is large enough that it might not fit."""
    return sum(s.replicas for s in job.spec.replica_specs.values()) > SMALL_JOB


def size(obj: Mapping[str, Any]) -> int:
    """Bytes of ``obj`` as compact JSON, as near as it comes to what the apiserver stores."""
    return len(json.dumps(obj, separators=(",", ":")).encode())


def weight(job: v1beta1.TrainingJob, representatives: Iterable[Mapping[str, Any]]) -> int:
    """Bytes of all of ``job``'s objects, from its representatives."""
    return sum(w.total for w in _weighed(job, representatives))


def errors(
    job: v1beta1.TrainingJob, representatives: Iterable[Mapping[str, Any]]
) -> list[validation.FieldError]:
    """Why ``job``, whose representatives are given, is too large to be stored; [] if it is not."""
    weighed = _weighed(job, representatives)
    out = [
        validation.FieldError(
            path=("spec", "replicaSpecs", w.key) if w.key is not None else ("spec",),
            message=f"its {w.obj['kind']} {w.obj['metadata'].get('name')} would be {w.size:,} bytes, over the "
            f"{OBJECT_BYTES:,} one object may have (etcd refuses larger ones){_heaviest(w)}: "
            "use fewer replicas",
        )
        for w in weighed
        if w.size > OBJECT_BYTES
    ]
    total = sum(w.total for w in weighed)
    if out or total <= JOB_BYTES:
        return out
    pods = [w for w in weighed if w.obj["kind"] == "Pod"]
    detail = ""
    if pods:
        pod = max(pods, key=lambda w: w.total)
        detail = f"; its {pod.count:,} {pod.key} pods {pod.size:,} bytes each{_heaviest(pod)}"
    return [
        validation.FieldError(
            path=("spec", "replicaSpecs"),
            message=f"the job's objects would be {total:,} bytes, over the {JOB_BYTES:,} one job may "
            f"store{detail}: use fewer, larger replicas, or split the job",
        )
    ]


@attrs.frozen
class _Weighed:
    """A representative, its size, its replica type (if any) and how many objects it stands for."""

    obj: Mapping[str, Any]
    size: int
    key: str | None
    count: int

    @property
    def total(self) -> int:
        return self.size * self.count


def _weighed(job: v1beta1.TrainingJob, representatives: Iterable[Mapping[str, Any]]) -> list[_Weighed]:
    """Each representative sized once: one per replica of its type for a Pod or a Service."""
    out = []
    for obj in representatives:
        key = _replica_type(job, obj)
        count = (
            job.spec.replica_specs[key].replicas
            if key is not None and obj.get("kind") in ("Pod", "Service")
            else 1
        )
        out.append(_Weighed(obj=obj, size=size(obj), key=key, count=count))
    return out


def _replica_type(job: v1beta1.TrainingJob, obj: Mapping[str, Any]) -> str | None:
    """The replica type (as the spec spells it) ``obj`` is one of, if any."""
    label = (obj.get("metadata", {}).get("labels") or {}).get(naming.REPLICA_TYPE)
    return next((k for k in job.spec.replica_specs if k.lower() == label), None)


def _heaviest(pod: _Weighed) -> str:
    """``, of which env X is N bytes`` when one env variable is most of ``pod``."""
    env = [
        (len(str(e.get("value", ""))), e["name"])
        for c in (pod.obj.get("spec") or {}).get("containers") or ()
        for e in c.get("env") or ()
        if "name" in e
    ]
    if not env:
        return ""
    n, name = max(env)
    return f", of which env {name} is {n:,} bytes" if n * 2 > pod.size else ""
