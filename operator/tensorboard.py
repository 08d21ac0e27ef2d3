"""A TrainingJob's TensorBoard: one Deployment and one Service, computed from the job alone.

:func:`objects` is pure, like :func:`kubetrain.operator.render.render`, whose output includes
them: the Deployment runs ``tensorboard --logdir {logDir}`` on port 6006, in the image of
``spec.tensorboard.image`` (default :data:`DEFAULT_IMAGE`), with the volume under which the
replicas write ``logDir`` mounted read-only at the same path
(:func:`~kubetrain.api.v1beta1.tensorboard_types.shared_volume`). The Service,
``{job}-tensorboard``, is the address the job's status shows (:func:`status`).

Lifetime: both are owned by the job (a controller owner reference) and created while it runs,
never written again. Nothing deletes them when the job finishes or is suspended —
``cleanPodPolicy`` and suspension reach replicas only — so results stay on view; the garbage
collector deletes them with the job, which ``ttlSecondsAfterFinished`` bounds.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from kubetrain.api import naming, v1beta1, validation
from kubetrain.api.v1beta1 import tensorboard_types

__all__ = [
    "CONTAINER",
    "DEFAULT_IMAGE",
    "DEFAULT_RESOURCES",
    "PORT",
    "PORT_NAME",
    "is_tensorboard",
    "missing",
    "objects",
    "status",
]

# What kubetrain builds (devcluster/images.py): TensorBoard, pinned, from PyPI on Debian's Python.
DEFAULT_IMAGE = "kubetrain.local/tensorboard:2.21.0"
# TensorBoard idles between reloads and grows with the event files it holds.
DEFAULT_RESOURCES: Mapping[str, Any] = {"requests": {"cpu": "100m", "memory": "256Mi"}}
PORT = tensorboard_types.PORT
PORT_NAME = "tensorboard"
CONTAINER = "tensorboard"

Object = dict[str, Any]


def address(name: str, namespace: str) -> str:
    return f"http://{naming.tensorboard_name(name)}.{namespace}.svc:{PORT}"


def status(name: str, namespace: str, spec: v1beta1.TrainingJobSpec) -> v1beta1.TensorBoardStatus | None:
    """``status.tensorboard`` of a job that asks for one, else None."""
    if spec.tensorboard is None:
        return None
    return v1beta1.TensorBoardStatus(name=naming.tensorboard_name(name), address=address(name, namespace))


def missing(spec: v1beta1.TrainingJobSpec, *, present: bool, ended: bool) -> bool:
    """Whether a job's TensorBoard is to be made now: it asks for one, has none (``present``), and
    runs. A job that ``ended`` keeps the one it had and gets none later; a suspended one gets it
    on resume."""
    return spec.tensorboard is not None and not present and not ended and not spec.run_policy.suspend


def is_tensorboard(obj: Mapping[str, Any]) -> bool:
    labels = obj.get("metadata", {}).get("labels") or {}
    return labels.get(naming.JOB_ROLE) == naming.TENSORBOARD_ROLE


def objects(job: v1beta1.TrainingJob, owners: list[Object]) -> list[Object]:
    """The Deployment and the Service of ``job``'s TensorBoard (none without spec.tensorboard).

    ``owners`` are the objects' owner references (the job's, once it has a UID).
    """
    spec = job.spec.tensorboard
    if spec is None:
        return []
    templates = [(t, r.template) for t, r in job.spec.replica_specs.items()]
    found = tensorboard_types.shared_volume(spec.log_dir, templates)
    if found is None:  # validated with the spec; only a job decoded without its rules gets here
        raise validation.ValidationError(
            validation.FieldError(path=("spec", *e.path), message=e.message)
            for e in tensorboard_types.log_dir_errors(spec.log_dir, templates)
        )
    name = naming.tensorboard_name(job.metadata.name or "")
    labels = naming.tensorboard_labels(job.metadata.name or "")
    meta: Object = {"name": name, "namespace": job.metadata.namespace or "default", "labels": labels}
    if owners:
        meta["ownerReferences"] = owners
    return [_deployment(copy.deepcopy(meta), spec, found), _service(copy.deepcopy(meta))]


def _deployment(meta: Object, spec: v1beta1.TensorBoardSpec, found: tensorboard_types.SharedVolume) -> Object:
    mount = {k: found.mount[k] for k in ("name", "mountPath", "subPath") if k in found.mount}
    container: Object = {
        "name": CONTAINER,
        "image": spec.image or DEFAULT_IMAGE,
        "command": ["tensorboard"],
        "args": [f"--logdir={spec.log_dir}", "--bind_all", f"--port={PORT}"],
        "ports": [{"name": PORT_NAME, "containerPort": PORT}],
        # Ready once it answers: what a user's port-forward needs.
        "readinessProbe": {"httpGet": {"path": "/", "port": PORT_NAME}, "periodSeconds": 2},
        "resources": copy.deepcopy(dict(DEFAULT_RESOURCES if spec.resources is None else spec.resources)),
        "volumeMounts": [{**mount, "readOnly": True}],
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": meta,
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": dict(meta["labels"])},
            "template": {
                "metadata": {"labels": dict(meta["labels"])},
                "spec": {
                    # It reads files and serves HTTP: no business with the apiserver.
                    "automountServiceAccountToken": False,
                    "containers": [container],
                    "volumes": [copy.deepcopy(dict(found.volume))],
                },
            },
        },
    }


def _service(meta: Object) -> Object:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": meta,
        "spec": {
            "selector": dict(meta["labels"]),
            "ports": [{"name": PORT_NAME, "port": PORT, "targetPort": PORT_NAME}],
        },
    }
