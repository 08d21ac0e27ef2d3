"""Fluent builders for TrainingJobs, so a test states only what it is about.

job = a_job("mnist").framework("pytorch").replicas("Master", 1).replicas("Worker", 3).build()
"""

from __future__ import annotations

import copy
from typing import Any

import attrs

from kubetrain.api import meta, v1alpha1, v1beta1


def container(name: str = "main", image: str = "example.com/train:1", **extra: Any) -> dict[str, Any]:
    return {"name": name, "image": image, **extra}


def template(*containers: dict[str, Any], labels: dict[str, str] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"spec": {"containers": list(containers) or [container()]}}
    if labels:
        out["metadata"] = {"labels": labels}
    return out


class JobBuilder:
    def __init__(self, name: str) -> None:
        self._meta = meta.ObjectMeta(name=name, namespace="default")
        self._framework = v1beta1.FrameworkSpec(name="pytorch")
        self._replicas: dict[str, v1beta1.ReplicaSpec] = {}
        self._spec_extra: dict[str, Any] = {}

    def namespace(self, namespace: str) -> JobBuilder:
        self._meta = attrs.evolve(self._meta, namespace=namespace)
        return self

    def uid(self, uid: str) -> JobBuilder:
        self._meta = attrs.evolve(self._meta, uid=uid)
        return self

    def framework(self, name: str, **options: Any) -> JobBuilder:
        self._framework = v1beta1.FrameworkSpec(name=name, **options)
        return self

    def replicas(
        self, replica_type: str, count: int, *, tmpl: dict[str, Any] | None = None, **fields: Any
    ) -> JobBuilder:
        default = template(container(self._framework.name))
        self._replicas[replica_type] = v1beta1.ReplicaSpec(
            replicas=count, template=copy.deepcopy(tmpl or default), **fields
        )
        return self

    def with_spec(self, **fields: Any) -> JobBuilder:
        self._spec_extra.update(fields)
        return self

    def build(self) -> v1beta1.TrainingJob:
        spec = v1beta1.TrainingJobSpec(
            framework=self._framework, replica_specs=dict(self._replicas), **self._spec_extra
        )
        return v1beta1.TrainingJob(metadata=self._meta, spec=spec)


def a_job(name: str = "job") -> JobBuilder:
    return JobBuilder(name)


def a_ddp_job(workers: int = 2, name: str = "pt") -> JobBuilder:
    """A PyTorch job of one Master and ``workers`` Workers whose pods end on exit (``ExitCode``)."""
    return (
        a_job(name)
        .framework("pytorch")
        .replicas("Master", 1, restart_policy=v1beta1.RestartPolicy.EXIT_CODE)
        .replicas("Worker", workers, restart_policy=v1beta1.RestartPolicy.EXIT_CODE)
    )


def a_legacy_job(name: str, framework: str, *replicas: tuple[str, int], **spec: Any) -> v1alpha1.TrainingJob:
    specs = tuple(
        v1alpha1.ReplicaSpec(replica_type=t, replicas=n, template=template(container(framework)))
        for t, n in replicas
    )
    return v1alpha1.TrainingJob(
        metadata=meta.ObjectMeta(name=name, namespace="default"),
        spec=v1alpha1.TrainingJobSpec(framework=framework, replica_specs=specs, **spec),
    )
