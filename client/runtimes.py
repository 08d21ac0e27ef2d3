"""Runtimes as the people who train see them: what is installed, and a short job made from one.

A platform team installs how training runs as ClusterTrainingRuntimes (every namespace's) and
TrainingRuntimes (one namespace's); a person names one and gives only an image, a command and a
number of nodes. :func:`list_objects` reads both kinds — the ClusterTrainingRuntimes and the
namespace's TrainingRuntimes — over the client's one connection, as the apiserver stores them
(wire data: what :mod:`kubetrain.operator.expansion` reads; :func:`decode` gives the typed
object). :func:`find` reads one, or says it is not there. A cluster that does not serve the
kinds (kubetrain's runtime CRDs are not installed) or does not let the user list them is one
:class:`~kubetrain.client.errors.Rejected` line that says so.

:func:`short_job` writes the short TrainingJob itself — ``spec.runtimeRef`` and ``spec.trainer``
— as wire data, to be created as it is: the operator's admission webhook expands it from the
runtime when it is created, and refuses it there, in the job's terms, if the runtime is missing
or the trainer does not fit it. Without a name, the job is given one here,
``{runtime}-{five characters}``: a name the apiserver generated (``metadata.generateName``)
would not be known yet when the job is expanded.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from kubetrain.api import exact, v1beta1, validation, wire
from kubetrain.api.v1beta1 import runtime_types
from kubetrain.client import connection, errors

__all__ = [
    "CLUSTER_TRAINING_RUNTIMES",
    "GPU",
    "KINDS",
    "TRAINING_RUNTIMES",
    "Runtime",
    "decode",
    "find",
    "generated_name",
    "list_objects",
    "short_job",
]

Runtime = v1beta1.ClusterTrainingRuntime | v1beta1.TrainingRuntime
Kind = v1beta1.RuntimeKind

_PREFIX = f"/apis/{v1beta1.API_VERSION}"
CLUSTER_TRAINING_RUNTIMES = connection.Kind(Kind.CLUSTER.value, _PREFIX, runtime_types.CLUSTER_PLURAL)
TRAINING_RUNTIMES = connection.Kind(Kind.NAMESPACED.value, _PREFIX, runtime_types.PLURAL)
KINDS = {Kind.CLUSTER: CLUSTER_TRAINING_RUNTIMES, Kind.NAMESPACED: TRAINING_RUNTIMES}
_CLASSES: dict[str, type[Runtime]] = {
    Kind.CLUSTER.value: v1beta1.ClusterTrainingRuntime,
    Kind.NAMESPACED.value: v1beta1.TrainingRuntime,
}

# The extended resource a number of GPUs per node is asked as.
GPU = "nvidia.com/gpu"
# A generated name: the runtime's (cut to leave room for {name}-{type}-{index} in 63 characters),
# then what the apiserver's generateName appends: five of its characters.
_NAME_BASE = 30
_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


async def list_objects(c: connection.Connection, namespace: str | None) -> list[dict[str, Any]]:
    """Every ClusterTrainingRuntime, then the TrainingRuntimes of ``namespace`` (default: the
    client's), each kind by name, as stored."""
    cluster = await _list(c, Kind.CLUSTER, None)
    own = await _list(c, Kind.NAMESPACED, namespace or c.namespace)
    return [*cluster, *own]


async def find(
    c: connection.Connection, kind: Kind, name: str, namespace: str | None
) -> dict[str, Any] | None:
    """The runtime, as stored, or None when there is none of that name. A TrainingRuntime is the
    one of ``namespace`` (default: the client's); a ClusterTrainingRuntime has no namespace."""
    ns = None if kind is Kind.CLUSTER else namespace or c.namespace
    try:
        found: dict[str, Any] = await c.request("GET", KINDS[kind], ns, name)
    except errors.NotFound:
        # A kind the cluster does not serve is a 404 too: said as such, not as a missing runtime.
        try:
            await _list(c, kind, ns, limit=1)
        except errors.Rejected as e:
            if e.status == 404:
                raise
        return None
    except errors.Rejected as e:
        raise _refused(c, kind, ns, e, "read") from None
    return _typed_as(found, kind)


def decode(obj: Mapping[str, Any]) -> Runtime:
    """A stored runtime as its typed object; one that today's rules refuse is read by its types
    alone (as a stored job is), and only one without the API's shape cannot be read."""
    kind = str(obj.get("kind"))
    cls = _CLASSES.get(kind, v1beta1.ClusterTrainingRuntime)
    try:
        return wire.structure(obj, cls)
    except validation.ValidationError:
        pass
    try:
        with exact.types_only():
            return wire.structure(obj, cls)
    except validation.ValidationError as e:
        name = (obj.get("metadata") or {}).get("name")
        raise errors.InvalidInput(f"{kind} {name} as stored cannot be read: {e}") from None


def short_job(
    runtime: str,
    *,
    kind: Kind | str = Kind.CLUSTER,
    image: str | None = None,
    command: Sequence[str] | None = None,
    args: Sequence[str] | None = None,
    nodes: int | None = None,
    env: Mapping[str, str] | Iterable[tuple[str, str]] | None = None,
    procs_per_node: int | str | None = None,
    gpus_per_node: int | None = None,
    resources_per_node: Mapping[str, Mapping[str, Any]] | None = None,
    name: str | None = None,
    namespace: str | None = None,
    labels: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The short TrainingJob made from ``runtime``, as wire data; nothing is checked here
    (:func:`kubetrain.client.jobs.short_body` does, as :meth:`Client.create` does).

    ``nodes`` is ``trainer.numNodes``; ``gpus_per_node`` sets ``nvidia.com/gpu`` in the node
    type's limits (beside ``resources_per_node``); without ``name`` one is generated from the
    runtime's (:func:`generated_name`).
    """
    ref: dict[str, Any] = {"name": runtime}
    if Kind(kind) is not Kind.CLUSTER:
        ref = {"kind": Kind(kind).value, **ref}
    trainer: dict[str, Any] = {}
    if image is not None:
        trainer["image"] = image
    if command is not None:
        trainer["command"] = list(command)
    if args is not None:
        trainer["args"] = list(args)
    variables = dict(env.items() if isinstance(env, Mapping) else env or ())
    if variables:
        trainer["env"] = [{"name": k, "value": v} for k, v in variables.items()]
    if nodes is not None:
        trainer["numNodes"] = nodes
    resources = {k: dict(v) for k, v in (resources_per_node or {}).items()}
    if gpus_per_node is not None:
        resources.setdefault("limits", {})[GPU] = gpus_per_node
    if resources:
        trainer["resourcesPerNode"] = resources
    if procs_per_node is not None:
        trainer["procsPerNode"] = str(procs_per_node)
    metadata: dict[str, Any] = {"name": name if name is not None else generated_name(runtime)}
    if namespace:
        metadata["namespace"] = namespace
    if labels:
        metadata["labels"] = dict(labels)
    return {
        "apiVersion": v1beta1.API_VERSION,
        "kind": v1beta1.KIND,
        "metadata": metadata,
        "spec": {"runtimeRef": ref, "trainer": trainer},
    }


def generated_name(runtime: str) -> str:
    """``{runtime}-{five random characters}``, a job's name (a DNS-1035 label) whatever the
    runtime's: dots become dashes, a name that does not start with a letter is put after ``job-``."""
    base = re.sub(r"[^a-z0-9-]+", "-", runtime.lower())[:_NAME_BASE].strip("-")
    if not base[:1].isalpha():
        base = f"job-{base}".strip("-")
    suffix = "".join(secrets.choice(_SUFFIX_ALPHABET) for _ in range(5))
    return f"{base}-{suffix}"


async def _list(
    c: connection.Connection, kind: Kind, namespace: str | None, *, limit: int | None = None
) -> list[dict[str, Any]]:
    params = {"limit": str(limit)} if limit is not None else None
    try:
        found = await c.request("GET", KINDS[kind], namespace, params=params)
    except errors.Rejected as e:
        raise _refused(c, kind, namespace, e, "list") from None
    items = [_typed_as(dict(i), kind) for i in found.get("items") or ()]
    return sorted(items, key=lambda i: str((i.get("metadata") or {}).get("name") or ""))


def _typed_as(obj: dict[str, Any], kind: Kind) -> dict[str, Any]:
    """Items of a list may come without their apiVersion and kind: given back."""
    obj.setdefault("apiVersion", v1beta1.API_VERSION)
    obj.setdefault("kind", kind.value)
    return obj


def _refused(
    c: connection.Connection, kind: Kind, namespace: str | None, e: errors.Rejected, verb: str
) -> errors.Rejected:
    if e.status == 404:
        return errors.Rejected(
            f"the cluster at {c.server} has no {kind.value} kind ({v1beta1.API_VERSION}): "
            "kubetrain's runtime CRDs are not installed there",
            404,
        )
    where = f" in namespace {namespace!r}" if namespace else ""
    return errors.Rejected(f"cannot {verb} {kind.value}s{where}: {e}", e.status)
