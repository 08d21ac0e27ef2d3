"""Ask the apiserver whether it would create the objects a TrainingJob renders.

The CRD does not carry the whole PodTemplateSpec schema (hundreds of kilobytes), and
even that schema misses what only the apiserver's pod validation knows: an image is
required, a container name is a DNS label, a port name is at most 15 characters. So the
admission webhook renders the job exactly as the reconciler will and sends the objects
to the apiserver with ``dryRun=All``: validation and every admission plugin and webhook
run, nothing is stored. One Pod and one Service per replica type suffice — the
replicas of a type differ only in their index and env — and the last index is used
because it makes the longest names. Each of those pods is also sent as a core/v1
``PodTemplate``: the ServiceAccount admission plugin runs *before* validation and refuses
a pod whose ServiceAccount does not exist yet, which would hide everything validation
has to say; a PodTemplate's spec is validated by the same code without that plugin,
except that ``image`` is optional there, so this module requires it itself.
The TensorBoard's Deployment and Service, when the job has one, are dry-run too.

An answer about the object (:data:`refusal.Kind.INVALID`) refuses the job, with every
field the apiserver names translated into the job's own terms:
``spec.containers[0].image`` of a Worker pod becomes
``spec.replicaSpecs.Worker.template.spec.containers[0].image``. An answer about the
namespace (quota, a missing ServiceAccount, PodSecurity, another webhook) admits the job
with a warning — that may change before the pods are made, and the job will show it in a
``ReplicaFailure`` condition if it does not. A dry run that cannot be done at all (the
apiserver is busy) admits the job: the reconciler reports what the create says.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator, Mapping
from typing import Any

import attrs

from kubetrain.api import naming, v1beta1, validation
from kubetrain.operator import accelerators, render, tensorboard
from kubetrain.operator.frameworks import framework as fw_contract
from kubetrain.operator.policies import refusal
from kubetrain.operator.runtime import client

__all__ = ["Verdict", "check", "job_path", "samples"]

Obj = dict[str, Any]
# A field of a refused object, as the apiserver spells it: spec.containers[0].ports[1].name
_STEP = re.compile(r"([^.\[\]]+)|\[([^\]]*)\]")


@attrs.frozen(kw_only=True)
class Verdict:
    errors: tuple[validation.FieldError, ...] = ()
    warnings: tuple[str, ...] = ()


async def check(
    api: client.Client,
    job: v1beta1.TrainingJob,
    fw: fw_contract.Framework,
    accelerator_config: accelerators.Config | None = None,
) -> Verdict:
    """Dry-run the objects ``job`` renders; what the apiserver says about them."""
    objects = samples(job, fw)
    for obj in objects:
        if obj["kind"] == "Pod":
            accelerators.apply(obj, accelerator_config or {})
    answers = await asyncio.gather(*(_dry_run(api, obj) for obj in objects))
    errors = list(_missing_images(job))
    warnings: list[str] = []
    for obj, e in zip(objects, answers, strict=True):
        if e is None or e.conflict:  # AlreadyExists comes after validation: it passed
            continue
        name = f"{obj['kind']} {obj['metadata']['name']}"
        if refusal.classify(e.status, e.message).kind is refusal.Kind.INVALID:
            # A Pod and its PodTemplate often say the same: each error once.
            errors += [f for f in _field_errors(job, obj, e) if f not in errors]
        else:
            warnings.append(f"{name} would not be created now: {e.message}")
    return Verdict(errors=tuple(errors), warnings=tuple(warnings))


def samples(job: v1beta1.TrainingJob, fw: fw_contract.Framework) -> list[Obj]:
    """What stands for all of ``job``'s objects (:func:`.render.representatives`), and each of
    its Pods as a PodTemplate."""
    out = render.representatives(job, fw)
    return out + [_as_template(o) for o in out if o["kind"] == "Pod"]


def _as_template(pod: Obj) -> Obj:
    meta = pod["metadata"]
    return {
        "apiVersion": "v1",
        "kind": "PodTemplate",
        "metadata": {
            "name": meta["name"],
            "namespace": meta.get("namespace"),
            "labels": meta.get("labels", {}),
        },
        "template": {
            "metadata": {k: v for k, v in meta.items() if k in ("labels", "annotations")},
            "spec": pod["spec"],
        },
    }


def _missing_images(job: v1beta1.TrainingJob) -> Iterator[validation.FieldError]:
    for key, spec in job.spec.replica_specs.items():
        for list_name in ("initContainers", "containers"):
            for i, c in enumerate(spec.template["spec"].get(list_name) or ()):
                if not c.get("image"):
                    path = ("spec", "replicaSpecs", key, "template", "spec", list_name, i, "image")
                    yield validation.FieldError(path=path, message="Required value")


async def _dry_run(api: client.Client, obj: Obj) -> client.ApiError | None:
    try:
        await api.create(client.CHILDREN[obj["kind"]], obj, obj["metadata"].get("namespace"), dry_run=True)
    except client.ApiError as e:
        return e
    return None


def _field_errors(job: v1beta1.TrainingJob, obj: Obj, e: client.ApiError) -> Iterator[validation.FieldError]:
    fields = [(str(c.get("field", "")), str(c.get("message", ""))) for c in e.causes if c.get("field")]
    if not fields:  # a body the apiserver could not even decode: no field, only its message
        yield validation.FieldError(path=job_path(job, obj, ""), message=e.message)
        return
    for field, message in fields:
        path = job_path(job, obj, field)
        own = _parse(field)[1:] if obj["kind"] == "PodTemplate" else _parse(field)
        if path[-len(own) :] != own:  # a field kubetrain generated: say which object's
            message = f"{obj['kind']} {obj['metadata']['name']}: {field}: {message}"
        yield validation.FieldError(path=path, message=message)


def job_path(job: v1beta1.TrainingJob, obj: Mapping[str, Any], field: str) -> validation.Path:
    """Where in ``job`` the ``field`` of one of its rendered objects comes from.

    A pod's ``spec`` and template metadata come from its replica type's template; every
    generated name comes from the job's name; a Service's other fields from the replica
    type (its port), a shared object's from the replica specs as a whole; the TensorBoard's
    from ``spec.tensorboard``, its container's image and resources from those fields.
    """
    path = _parse(field)
    if tensorboard.is_tensorboard(obj) and path[:2] != ("metadata", "name"):
        return _tensorboard_path(path)
    if obj["kind"] == "PodTemplate":  # its template is the pod's metadata and spec
        obj, path = {**obj, "kind": "Pod"}, path[1:] if path[:1] == ("template",) else path
    if path[:2] == ("metadata", "name"):
        return ("metadata", "name")
    labels = obj["metadata"].get("labels") or {}
    key = next((k for k in job.spec.replica_specs if k.lower() == labels.get(naming.REPLICA_TYPE)), None)
    if key is None:
        return ("spec", "replicaSpecs")
    replica: validation.Path = ("spec", "replicaSpecs", key)
    if obj["kind"] == "Pod" and path[:1] in (("spec",), ("metadata",)):
        return (*replica, "template", *path)
    return replica if obj["kind"] != "Pod" else (*replica, "template")


def _tensorboard_path(path: validation.Path) -> validation.Path:
    for key in ("image", "resources"):
        if key in path and "containers" in path:
            return ("spec", "tensorboard", *path[path.index(key) :])
    return ("spec", "tensorboard")


def _parse(field: str) -> validation.Path:
    out: list[str | int] = []
    for name, index in _STEP.findall(field):
        out.append(name if name else int(index) if index.isdigit() else index)
    return tuple(out)
