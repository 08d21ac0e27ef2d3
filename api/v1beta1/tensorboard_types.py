"""TensorBoard for a TrainingJob: where the replicas write event files, and what serves them.

``spec.tensorboard`` asks kubetrain for one TensorBoard that reads what the replicas write.
The volume is found, not repeated: ``logDir`` is a path in the replicas' containers, and it
must lie under a ``volumeMount`` of one of them whose volume every pod sees alike — a
persistentVolumeClaim (ReadWriteMany), nfs, a CSI volume, or hostPath where all pods share a
disk. :func:`shared_volume` finds it, and kubetrain mounts it read-only at the same path in
TensorBoard's pod. :func:`log_dir_errors` says why none fits: a volume each pod gets its own
of (``emptyDir``, ``ephemeral``) or that the replicas cannot write to (``configMap``,
``secret``, ...) would leave TensorBoard with nothing to show.

Both read the pod templates, which the CRD keeps as free-form JSON, so this rule has no CEL
twin: the admission webhook and the operator check it where they decode a job.
"""

import posixpath
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Annotated, Any

import attrs

from kubetrain.api import schema, validation, wire

__all__ = [
    "PORT",
    "QUANTITY",
    "SharedVolume",
    "TensorBoardSpec",
    "TensorBoardStatus",
    "log_dir_errors",
    "shared_volume",
]

PORT = 6006
# A Kubernetes resource quantity (resource.Quantity's grammar, as controller-gen writes it).
QUANTITY = r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
_QUANTITY_SCHEMA = {"x-kubernetes-int-or-string": True, "anyOf": [{"type": "integer"}, {"type": "string"}]}
_AMOUNTS = ("limits", "requests")
RESOURCES_SCHEMA = {
    "properties": {
        key: {
            "type": "object",
            "description": f"Resource name (cpu, memory, ...) to its {key[:-1]}: an integer or a quantity.",
            "additionalProperties": {**_QUANTITY_SCHEMA, "pattern": QUANTITY},
        }
        for key in _AMOUNTS
    }
}

# Volume sources whose content is not shared between pods, and why TensorBoard would see nothing.
_PER_POD = {
    "emptyDir": "each pod gets its own emptyDir",
    "ephemeral": "each pod gets its own ephemeral volume",
    "gitRepo": "each pod gets its own clone",
}
_READ_ONLY = ("configMap", "secret", "downwardAPI", "projected", "image")
_SHARE = "a ReadWriteMany persistentVolumeClaim, nfs, or hostPath where all pods share a disk"


def check_resources(_instance: Any, _attribute: Any, value: Mapping[str, Any] | None) -> None:
    found = list(_resource_errors(value))
    if found:
        raise validation.ValidationError(found)


def _resource_errors(value: Mapping[str, Any] | None) -> Iterator[validation.FieldError]:
    if value is None:
        return
    for key, amounts in value.items():
        path: validation.Path = ("resources", str(key))
        if key not in _AMOUNTS:
            yield validation.FieldError(path=path, message="unknown field")
        elif not isinstance(amounts, Mapping):
            yield validation.FieldError(
                path=path, message=f"expected a map of resource quantities, got {wire.json_name(amounts)}"
            )
        else:
            for name, amount in amounts.items():
                if not _is_quantity(amount):
                    yield validation.FieldError(
                        path=(*path, str(name)),
                        message=f"expected a quantity such as 2, '500m' or '1Gi', got {amount!r}",
                    )


def _is_quantity(amount: Any) -> bool:
    if isinstance(amount, bool):
        return False
    return isinstance(amount, int) or (isinstance(amount, str) and re.search(QUANTITY, amount) is not None)


@attrs.frozen(kw_only=True, field_transformer=schema.validated)
class TensorBoardSpec:
    """One TensorBoard (a Deployment and a Service) serving the event files the replicas write.

    It starts with the job and is deleted with it, so it outlives training until the job's
    ttlSecondsAfterFinished (docs/tensorboard.md).
    """

    log_dir: Annotated[
        str,
        schema.Field(
            max_length=4096,
            pattern=r"^/",
            doc="Absolute path, in the replicas' containers, of the directory TensorBoard reads "
            "(--logdir); it must lie under a volumeMount of a replica whose volume the pods share "
            "(persistentVolumeClaim, nfs, hostPath, ...), which TensorBoard mounts read-only.",
        ),
    ]
    image: Annotated[
        str | None,
        schema.Field(
            min_length=1,
            max_length=4096,
            doc="Image with `tensorboard` on its PATH; default: the image kubetrain builds "
            "(kubetrain.local/tensorboard, TensorBoard from PyPI).",
        ),
    ] = None
    resources: Annotated[
        schema.JSONObject | None,
        schema.Field(
            doc="Compute resources of the TensorBoard container (limits, requests); "
            "default: requests of 100m CPU and 256Mi memory.",
            extra_schema=RESOURCES_SCHEMA,
        ),
    ] = attrs.field(default=None, validator=check_resources)


@attrs.frozen(kw_only=True, field_transformer=schema.validated)
class TensorBoardStatus:
    """Where the job's TensorBoard serves."""

    name: Annotated[str, schema.Field(max_length=253, doc="Name of its Deployment and Service.")]
    address: Annotated[
        str, schema.Field(max_length=4096, doc="Its URL inside the cluster (the Service, port 6006).")
    ]


@attrs.frozen(kw_only=True)
class SharedVolume:
    """The volume of a replica's template under which ``logDir`` lies, and its mount."""

    replica_type: str
    volume: Mapping[str, Any]
    mount: Mapping[str, Any]


@attrs.frozen(kw_only=True)
class _Candidate:
    found: SharedVolume
    problem: str | None  # why TensorBoard could not read it, if it could not


def shared_volume(log_dir: str, templates: Iterable[tuple[str, Mapping[str, Any]]]) -> SharedVolume | None:
    """The first shareable volume, over ``(replica type, pod template)`` pairs, holding ``log_dir``."""
    return next((c.found for c in _candidates(log_dir, templates) if c.problem is None), None)


def log_dir_errors(
    log_dir: str, templates: Iterable[tuple[str, Mapping[str, Any]]]
) -> list[validation.FieldError]:
    """Why no replica's volume could give TensorBoard ``log_dir``; empty if one can."""
    candidates = list(_candidates(log_dir, templates))
    if any(c.problem is None for c in candidates):
        return []
    path = ("tensorboard", "logDir")
    if candidates:
        return [validation.FieldError(path=path, message=c.problem or "") for c in candidates]
    return [
        validation.FieldError(
            path=path,
            message=f"{log_dir} is on no volume of the replicas: mount one the pods share ({_SHARE}) "
            f"at {log_dir} or above it in a replica's container",
        )
    ]


def _candidates(log_dir: str, templates: Iterable[tuple[str, Mapping[str, Any]]]) -> Iterator[_Candidate]:
    """Per replica type, the deepest mount holding ``log_dir`` (the one the kernel resolves)."""
    wanted = posixpath.normpath(log_dir)
    for replica_type, template in templates:
        spec = template.get("spec")
        if not isinstance(spec, Mapping):
            continue
        mounts = [
            m
            for c in _objects(spec.get("containers"))
            for m in _objects(c.get("volumeMounts"))
            if isinstance(m.get("mountPath"), str) and _under(wanted, m["mountPath"])
        ]
        if not mounts:
            continue
        mount = max(mounts, key=lambda m: len(posixpath.normpath(m["mountPath"])))
        volume = next((v for v in _objects(spec.get("volumes")) if v.get("name") == mount.get("name")), None)
        where = f"{log_dir} is on volume {mount.get('name')!r} of replica type {replica_type}"
        if volume is None:
            found = SharedVolume(replica_type=replica_type, volume={}, mount=mount)
            yield _Candidate(found=found, problem=f"{where}, which its template does not define")
            continue
        found = SharedVolume(replica_type=replica_type, volume=volume, mount=mount)
        yield _Candidate(found=found, problem=_problem(where, volume, mount))


def _problem(where: str, volume: Mapping[str, Any], mount: Mapping[str, Any]) -> str | None:
    for source, why in _PER_POD.items():
        if source in volume:
            return (
                f"{where}: {why}, so TensorBoard would see none of it; use a volume the pods share ({_SHARE})"
            )
    for source in _READ_ONLY:
        if source in volume:
            return (
                f"{where}, a {source} volume the replicas cannot write to; use one the pods share ({_SHARE})"
            )
    if "subPathExpr" in mount:
        return f"{where} with a subPathExpr, which differs per pod; mount it with subPath or none"
    return None


def _under(path: str, mount_path: str) -> bool:
    root = posixpath.normpath(mount_path)
    return path == root or path.startswith(root.rstrip("/") + "/")


def _objects(value: Any) -> list[Mapping[str, Any]]:
    return [v for v in value if isinstance(v, Mapping)] if isinstance(value, list) else []
