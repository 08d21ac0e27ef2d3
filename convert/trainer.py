"""Kubeflow Trainer v2 (``trainer.kubeflow.org/v1alpha1``, Trainer v2.0 to v2.3): what its two
converters share.

Trainer v2 splits a job in two, as kubetrain's runtimes do (issue 47): a platform team's
``ClusterTrainingRuntime`` or ``TrainingRuntime`` says how training runs — an ML policy and a
JobSet template — and a short ``TrainJob`` names one and gives its trainer. Each becomes its
kubetrain counterpart:

- :mod:`.trainjob`: a ``TrainJob`` is a short TrainingJob, ``spec.runtimeRef`` and
  ``spec.trainer``; its pod-template overrides (v2.0 ``podSpecOverrides``, v2.1
  ``podTemplateOverrides``, v2.2 and later ``runtimePatches``) become field overrides in the
  job's own ``spec.replicaSpecs.<Type>.template``.
- :mod:`.trainingruntime`: a runtime's ``mlPolicy`` is the framework and its options, the JobSet
  template's replicated Jobs are replica types, ``podGroupPolicy`` is the gang's timeout.

The one mapping both sides must agree on, so that a converted job's overrides land on the
replica types of a converted runtime, is :func:`types_of`: which replica types a replicated
Job of the JobSet is. Trainer's own names are fixed by its plugins (``node``, ``launcher``,
``dataset-initializer``, ``model-initializer``)::

    replicated Job        kubetrain replica types
    node                  Worker        (xgboost: Master, the rabit tracker's rank 0, and Worker)
    launcher              Launcher      (MPI)
    dataset-initializer   -             (not carried over: a warning)
    model-initializer     -             (not carried over: a warning)

Trainer's containers keep their names (``node``) in any other runtime: a TrainJob's overrides name
them, and kubetrain's frameworks take a pod's only container as its main one.

The runtimes Trainer ships, named by ``runtimeRef``, become kubetrain's (:data:`SHIPPED`):
``torch-distributed``, ``jax-distributed`` and ``xgboost-distributed`` keep their names,
``deepspeed-distributed`` and ``mlx-distributed`` (MPI runtimes, the launcher one of the nodes)
become ``mpi-distributed``. kubetrain's runtimes hold no image, and name the trainer's container
after the framework (``pytorch``, ``mpi``, ``jax``, ``xgboost``): a job made from one gets the
image Trainer's runtime ran unless it gives its own, and its overrides of the container ``node``
name kubetrain's; a runtime converted under one of these names names its container so too.

:func:`merge` combines overrides as kubetrain merges a job over its runtime
(``kubetrain.operator.expansion``): objects key by key, lists of named objects by name, other
lists whole — what Trainer's strategic merge patches did, but that a volume mount is matched by
its name, not its mount path.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import attrs

from kubetrain.api import podtemplate, v1beta1, validation, wire
from kubetrain.convert import reader
from kubetrain.operator.frameworks import framework as fw_contract
from kubetrain.operator.frameworks import registry

__all__ = [
    "ANCESTOR",
    "API_VERSION",
    "CONFIG_MOUNT",
    "FRAMEWORK_ALIASES",
    "FRAMEWORK_LABEL",
    "GROUP",
    "INITIALIZERS",
    "LAUNCHER",
    "NODE",
    "OLD_MOUNT",
    "SHIPPED",
    "TRAINER_STEP",
    "Shipped",
    "checked",
    "merge",
    "node_types",
    "procs_per_node",
    "types_of",
    "whole",
]

GROUP = "trainer.kubeflow.org"
API_VERSION = f"{GROUP}/v1alpha1"
FRAMEWORK_LABEL = f"{GROUP}/framework"
# The label of a replicated Job that says which step of a TrainJob fills it: the trainer's
# (image, command, numNodes...), or an initializer's.
ANCESTOR = f"{GROUP}/trainjob-ancestor-step"
NODE, LAUNCHER = "node", "launcher"
INITIALIZERS = ("dataset-initializer", "model-initializer")
TRAINER_STEP = "trainer"
# Where Trainer's MPI plugin mounted the hostfile, and where kubetrain's does.
OLD_MOUNT = "/etc/mpi"
CONFIG_MOUNT = fw_contract.CONFIG_MOUNT


@attrs.frozen(kw_only=True)
class Shipped:
    """One of the runtimes Trainer ships, as kubetrain has it."""

    name: str  # kubetrain's runtime
    framework: str  # its framework
    image: str  # the image Trainer's runtime ran (kubetrain's runtimes have none: the job gives it)
    note: str | None = None  # why a job that names it gets another runtime

    @property
    def container(self) -> str:
        """The name of the trainer's container in kubetrain's runtime (Trainer's: ``node``)."""
        return registry.default().get(self.framework).container


SHIPPED: Mapping[str, Shipped] = {
    "torch-distributed": Shipped(
        name="torch-distributed", framework="pytorch", image="pytorch/pytorch:2.7.1-cuda12.8-cudnn9-runtime"
    ),
    "deepspeed-distributed": Shipped(
        name="mpi-distributed",
        framework="mpi",
        image="ghcr.io/kubeflow/trainer/deepspeed-runtime",
        note="becomes kubetrain's mpi-distributed: Trainer's deepspeed-distributed is an MPI runtime (mpirun "
        "over ssh from a launcher), and so is mpi-distributed",
    ),
    "mlx-distributed": Shipped(
        name="mpi-distributed",
        framework="mpi",
        image="ghcr.io/kubeflow/trainer/mlx-runtime",
        note="becomes kubetrain's mpi-distributed, which is not an MLX runtime: kubetrain has none. MLX runs "
        "there as Trainer ran it, mpirun over ssh from a launcher, in an image that has MLX",
    ),
    "jax-distributed": Shipped(name="jax-distributed", framework="jax", image="nvcr.io/nvidia/jax:25.10-py3"),
    "xgboost-distributed": Shipped(
        name="xgboost-distributed", framework="xgboost", image="ghcr.io/kubeflow/trainer/xgboost-runtime"
    ),
}
# Trainer's framework label, as the framework kubetrain's label names (the runtimes it ships name
# their framework there).
FRAMEWORK_ALIASES: Mapping[str, str] = {"torch": "pytorch"}


def node_types(framework: str | None) -> tuple[str, ...]:
    """The replica types Trainer's ``node`` Job is for ``framework``: XGBoost's node 0 runs the
    tracker, which is kubetrain's Master."""
    return ("Master", "Worker") if framework == "xgboost" else ("Worker",)


def types_of(job: str, framework: str | None) -> tuple[str, ...] | None:
    """The replica types of the replicated Job named ``job``: ``()`` for an initializer, which is
    not carried over; ``None`` for a Job kubetrain has no replica type for."""
    if job == NODE:
        return node_types(framework)
    if job == LAUNCHER:
        return ("Launcher",)
    if job in INITIALIZERS:
        return ()
    return None


def merge(base: Any, over: Any) -> Any:
    """``over`` merged over ``base``: objects key by key, lists of objects with distinct names by
    name (a new name is appended), any other value replaced."""
    if isinstance(base, Mapping) and isinstance(over, Mapping):
        out = {k: copy.deepcopy(v) for k, v in base.items()}
        for k, v in over.items():
            out[k] = merge(base[k], v) if k in base else copy.deepcopy(v)
        return out
    if _named(base) and _named(over):
        merged = [copy.deepcopy(item) for item in base]
        names = [item["name"] for item in base]
        for item in over:
            if item["name"] in names:
                i = names.index(item["name"])
                merged[i] = merge(merged[i], item)
            else:
                merged.append(copy.deepcopy(item))
                names.append(item["name"])
        return merged
    return copy.deepcopy(over)


def _named(value: Any) -> bool:
    if not isinstance(value, list) or not value:
        return False
    names = [item.get("name") if isinstance(item, Mapping) else None for item in value]
    return all(isinstance(n, str) for n in names) and len(set(names)) == len(names)


def procs_per_node(
    r: reader.Reader, name: str, *, numbers_only: bool = False, trainer: str = "Trainer"
) -> str | None:
    """``numProcPerNode`` (an int, or Trainer v2.0's ``auto``, ``cpu``, ``gpu``) as kubetrain's
    processes per node, noting where the two differ; ``None`` for kubetrain's default.

    Trainer's ``auto`` (its default) started one process per GPU of the node, else one per CPU of
    ``resourcesPerNode``; kubetrain's default starts one per GPU the container requests, else
    one. ``cpu`` is torchrun's, which counts the node's CPUs, not the container's."""
    value = r.take(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | str):
        r.error(f"expected an integer or auto, cpu, gpu, got {value!r}", name)
        return None
    text = str(value)
    if text.isdigit() and 1 <= int(text) <= 9999:
        return str(int(text))
    if numbers_only or text not in ("auto", "cpu", "gpu"):
        wanted = "a number of processes (1 to 9999)" + ("" if numbers_only else ", auto, cpu or gpu")
        r.error(f"must be {wanted}, got {value!r}", name)
        return None
    if text == "auto":
        r.note(
            f"not carried over: {trainer} started one process per GPU, else one per CPU of "
            "resourcesPerNode; kubetrain's default starts one per GPU the container requests, else one "
            "(give a number for more)",
            name,
        )
        return None
    if text == "cpu":
        r.note(
            f"carried over: torchrun starts one process per CPU of the node ({trainer} counted the CPUs "
            "of resourcesPerNode); give a number to start fewer",
            name,
        )
    return text


def whole(r: reader.Reader, name: str) -> bool:
    """Whether the field ``name`` of ``r`` is an object (its reader said so if not): what is
    required inside one that is not is not said again."""
    return isinstance(r.take(name), Mapping)


def checked(doc: reader.Reader, value: Any, cls: type[Any], at: validation.Path, what: str) -> None:
    """Every error of ``value`` (a part of the converted document at ``at``) decoded as ``cls``,
    added to the document's findings in the converted document's terms."""
    try:
        wire.structure(value, cls)
    except validation.ValidationError as e:
        for f in e.errors:
            doc.findings.error((*at, *f.path), f"{f.message} (in the converted {what})")


def check_short_job(doc: reader.Reader, spec: Mapping[str, Any]) -> None:
    """The parts of a TrainingJob made from a runtime that can be judged before it is expanded,
    as admission would: its runtimeRef, trainer and runPolicy, and its templates' own fields."""
    what = "TrainingJob"
    checked(doc, spec.get("runtimeRef"), v1beta1.RuntimeRef, ("spec", "runtimeRef"), what)
    for field, cls in (("trainer", v1beta1.Trainer), ("runPolicy", v1beta1.RunPolicy)):
        if field in spec:
            checked(doc, spec[field], cls, ("spec", field), what)
    replicas = spec.get("replicaSpecs", {})
    if not isinstance(replicas, Mapping):
        doc.findings.error(("spec", "replicaSpecs"), f"expected an object (in the converted {what})")
        return
    for t, replica in replicas.items():
        at: validation.Path = ("spec", "replicaSpecs", str(t))
        template = replica.get("template", {}) if isinstance(replica, Mapping) else None
        if template is not None:
            at = (*at, "template")
        if isinstance(template, Mapping) and not isinstance(template.get("spec", {}), Mapping):
            at, template = (*at, "spec"), None
        if not isinstance(template, Mapping):
            doc.findings.error(at, f"expected an object (in the converted {what})")
            continue
        # An override is part of a template: what the runtime gives (a spec, its containers) is filled
        # in so that only the override's own fields are judged.
        pod_spec = {**template.get("spec", {})}
        pod_spec.setdefault("containers", [{"name": "runtime"}])
        for f in podtemplate.errors({**template, "spec": pod_spec}, at):
            doc.findings.error(f.path, f"{f.message} (in the converted {what})")
