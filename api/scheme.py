"""The TrainingJob scheme: every served version, how to decode it, and how to convert.

This is the one place that knows the concrete versions. Importing it registers the
hub (v1beta1) and its spoke (v1alpha1) with a conversion registry and checks that every
served version can be converted; everything else asks the scheme.
"""

from collections.abc import Mapping
from typing import Any

from kubetrain.api import conversion, exact, validation, wire
from kubetrain.api import v1alpha1 as _v1alpha1
from kubetrain.api import v1beta1 as _v1beta1
from kubetrain.api.v1alpha1 import trainingjob_conversion as _spoke
from kubetrain.api.v1beta1 import trainingjob_conversion as _hub

__all__ = [
    "HUB_VERSION",
    "SERVED_VERSIONS",
    "TrainingJob",
    "convert",
    "convert_unstructured",
    "decode",
    "encode",
    "registry",
    "to_hub",
]

HUB_VERSION = _v1beta1.API_VERSION
SERVED_VERSIONS = (_v1beta1.API_VERSION, _v1alpha1.API_VERSION)

registry = conversion.Registry(_hub.HUB)
registry.register(_spoke.SPOKE)
registry.check(SERVED_VERSIONS)

TrainingJob = _v1beta1.TrainingJob | _v1alpha1.TrainingJob


def decode(data: Any) -> TrainingJob:
    """Decode a TrainingJob of any served version; bad input raises ValidationError."""
    if not isinstance(data, Mapping):
        raise validation.ValidationError.at((), "a TrainingJob must be an object")
    api_version = data.get("apiVersion")
    if api_version not in SERVED_VERSIONS:
        raise validation.ValidationError.at(
            "apiVersion", f"expected one of {', '.join(SERVED_VERSIONS)}, got {api_version!r}"
        )
    result: TrainingJob = wire.structure(data, registry.type_for(api_version))
    return result


def encode(job: TrainingJob) -> dict[str, Any]:
    out: dict[str, Any] = wire.unstructure(job)
    return out


def convert(job: TrainingJob, api_version: str) -> TrainingJob:
    result: TrainingJob = registry.convert(job, api_version)
    return result


def to_hub(job: TrainingJob) -> _v1beta1.TrainingJob:
    hub = registry.convert(job, HUB_VERSION)
    assert isinstance(hub, _v1beta1.TrainingJob)
    return hub


def convert_unstructured(data: Mapping[str, Any], api_version: str) -> dict[str, Any]:
    """Convert wire data exactly, changing nothing in metadata but labels and annotations.

    This is what a conversion webhook must do: the apiserver rejects a response that
    changes any other metadata, so metadata is carried over from the input verbatim.
    Converted back, the result gives ``data`` as written — list order and explicit
    defaults included — through the annotation :data:`kubetrain.api.exact.FORM_DATA`.
    Only JSON types are checked (:func:`kubetrain.api.exact.types_only`), so an object
    stored before a rule existed still converts; admission and the reconciler decode with
    every rule (:func:`decode`).
    """

    def plain(obj: Mapping[str, Any], version: str) -> dict[str, Any]:
        converted = encode(convert(decode(obj), version))
        metadata = dict(obj.get("metadata") or {})
        for key in ("labels", "annotations"):
            value = converted.get("metadata", {}).get(key)
            if value:
                metadata[key] = value
            else:
                metadata.pop(key, None)
        converted["metadata"] = metadata
        return converted

    with exact.types_only():
        return exact.convert(
            data, api_version, plain=plain, meaning=decode, derived=(_spoke.CONVERSION_DATA,)
        )
