"""The contract of one old kind, and what every old kind's document shares.

A :class:`Kind` names the apiVersions and kind it reads (every spelling its
documentation used) and holds two pure functions: ``to_job`` reads the whole old document
through a :class:`~kubetrain.convert.reader.Reader` and returns a v1beta1 TrainingJob as a
plain document; ``from_job``, where the old kind can express the job, writes it back,
raising :class:`Inexpressible` (with paths in the TrainingJob) where it cannot.
:func:`metadata` reads the object metadata every kind has, :func:`drop_status` the
status an exported object carries, and :func:`opening` both and the spec.
:func:`rename_removed_resources` writes the resource names Kubernetes has removed since
(``alpha.kubernetes.io/nvidia-gpu``) as today's, in any kind's pod templates.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import attrs

from kubetrain.api import v1beta1, validation
from kubetrain.convert import reader

__all__ = [
    "API_VERSION",
    "REMOVED_RESOURCES",
    "Inexpressible",
    "Kind",
    "drop_status",
    "metadata",
    "opening",
    "rename_removed_resources",
]

API_VERSION = v1beta1.API_VERSION

# Set by the apiserver, or by the old operator: not the user's to carry over.
_SERVER_SET = ("uid", "resourceVersion", "generation", "creationTimestamp", "managedFields", "selfLink")


class Inexpressible(validation.ValidationError):
    """The TrainingJob holds something the old kind has no field for."""


@attrs.frozen(kw_only=True)
class Kind:
    kind: str  # as its documentation spells it, e.g. "MXJob"
    api_versions: tuple[str, ...]
    to_job: Callable[[reader.Reader], dict[str, Any]]
    from_job: Callable[[v1beta1.TrainingJob], dict[str, Any]] | None = None
    spellings: tuple[str, ...] = ()  # other spellings of the kind seen in the wild, e.g. "MxJob"

    def reads(self, api_version: str, kind: str) -> bool:
        return api_version in self.api_versions and kind in (self.kind, *self.spellings)


def metadata(doc: reader.Reader) -> dict[str, Any]:
    """The TrainingJob's metadata from the old document's: name, namespace, labels, annotations."""
    meta = doc.child("metadata")
    if meta is None:
        doc.error("required", "metadata")
        return {}
    out: dict[str, Any] = {}
    for key in ("name", "generateName", "namespace", "labels", "annotations", "finalizers"):
        value = meta.take(key)
        if value is not None:
            out[key] = value
    for key in _SERVER_SET:
        meta.take(key)
    meta.drop("owner references name the old object's owners; set them again if wanted", "ownerReferences")
    meta.finish()
    return out


def drop_status(doc: reader.Reader) -> None:
    doc.drop("not carried over: kubetrain writes the TrainingJob's own status", "status")


def opening(doc: reader.Reader) -> tuple[dict[str, Any], reader.Reader | None]:
    """What every old kind's document starts with: its metadata, a status to drop, and a spec
    (required: ``None``, with the error, when it is missing)."""
    meta = metadata(doc)
    drop_status(doc)
    spec = doc.child("spec")
    if spec is None:
        doc.error("required", "spec")
    return meta, spec


# Says what a conversion changed: (input path, message).
Note = Callable[[validation.Path, str], None]

# Removed resource name -> today's name, the release that removed the old one, and what the new one is.
REMOVED_RESOURCES: Mapping[str, tuple[str, str, str]] = {
    "alpha.kubernetes.io/nvidia-gpu": (
        "nvidia.com/gpu",
        "1.11",
        "the NVIDIA device plugin's name for the GPUs",
    ),
}


def rename_removed_resources(template: Any, at: validation.Path, note: Note) -> None:
    """Write the removed resource names of ``template``'s containers (:data:`REMOVED_RESOURCES`)
    as today's, in place, in ``requests`` and ``limits``; ``note`` each at its path under ``at``
    (the template's input path), naming the container and both names.

    Kubernetes 1.11 removed ``alpha.kubernetes.io/nvidia-gpu``, the kubelet's own GPU resource,
    which the first operators' documentation asked for: no node offers it now, so a pod asking
    for it would never be scheduled (and kubetrain's frameworks, which count ``*/gpu``, would
    not see its GPUs). A container that asks for today's name too keeps that amount, and the
    removed one is dropped. A template of any shape is read: what is not a container with
    resources is left to admission."""
    spec = template.get("spec") if isinstance(template, Mapping) else None
    if not isinstance(spec, Mapping):
        return
    for field in ("initContainers", "containers"):
        listed = spec.get(field)
        for i, container in enumerate(listed if isinstance(listed, list) else []):
            if not isinstance(container, dict) or not isinstance(container.get("resources"), Mapping):
                continue
            for kind in ("requests", "limits"):
                amounts = container["resources"].get(kind)
                if isinstance(amounts, dict):
                    where = (*at, "spec", field, i, "resources", kind)
                    _rename_resources(amounts, where, container.get("name"), note)


def _rename_resources(amounts: dict[Any, Any], at: validation.Path, container: Any, note: Note) -> None:
    if not any(k in REMOVED_RESOURCES for k in amounts):
        return
    given = dict(amounts)
    amounts.clear()
    for key, amount in given.items():  # in the order written, each removed name where it stood
        if key not in REMOVED_RESOURCES:
            amounts[key] = amount
            continue
        new, release, what = REMOVED_RESOURCES[key]
        gone = (
            f"Kubernetes {release} removed {key}, which no node offers now (the pod would never be scheduled)"
        )
        if new in given:
            note(
                (*at, key),
                f"not carried over: container {container} asks for {new} too ({given[new]}); {gone}",
            )
            continue
        amounts[new] = amount
        note((*at, key), f"becomes {new} in container {container}: {gone}; {new} is {what}")
