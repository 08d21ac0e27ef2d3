"""The contract of one old kind, and what every old kind's document shares.

A :class:`Kind` names the apiVersions and kind it reads (every spelling its
documentation used) and holds two pure functions: ``to_job`` reads the whole old document
through a :class:`~kubetrain.convert.reader.Reader` and returns a v1beta1 TrainingJob as a
plain document; ``from_job``, where the old kind can express the job, writes it back,
raising :class:`Inexpressible` (with paths in the TrainingJob) where it cannot.
:func:`metadata` reads the object metadata every kind has, :func:`drop_status` the
status an exported object carries, and :func:`opening` both and the spec.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs

from kubetrain.api import v1beta1, validation
from kubetrain.convert import reader

__all__ = ["API_VERSION", "Inexpressible", "Kind", "drop_status", "metadata", "opening"]

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
