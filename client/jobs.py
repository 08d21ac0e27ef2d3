"""Creating, reading and deleting TrainingJobs, as typed v1beta1 objects.

A job may be given in either API version, as a typed object, a dict or a YAML file; it is
checked here first (the same decoding the operator's webhook does), so a mistake is
reported with its field path — and for a file with its line — before anything is sent.
It is converted here to v1beta1 — exactly as the operator's conversion webhook would,
keeping a v1alpha1 job's form for those who read it back as v1alpha1 — and sent as that, so
creating a job never depends on the webhook being reachable; what the cluster stored comes
back as v1beta1, the one version a user's code reads.

A short job — made from a runtime, ``spec.runtimeRef`` — is not whole until the operator's
admission webhook expands it from the runtime, in the cluster: here only what it says itself
is checked (its name, ``runtimeRef`` and ``trainer``; :func:`short_body`), and it is sent as
written, as v1beta1, for admission to judge the rest.
"""

from __future__ import annotations

import asyncio
import copy
import time
from collections.abc import Callable, Mapping
from typing import Any

from kubetrain.api import documents, exact, meta, naming, scheme, v1beta1, validation, wire
from kubetrain.api.v1beta1 import trainingjob_types
from kubetrain.client import connection, errors

__all__ = [
    "create",
    "create_from_file",
    "decode",
    "delete",
    "get",
    "hub_body",
    "is_short",
    "list_jobs",
    "short_body",
]

Job = v1beta1.TrainingJob


def hub_body(data: Any) -> dict[str, Any]:
    """``data`` checked and converted to the v1beta1 wire form; ValidationError naming fields.
    A short job is checked as far as it can be without its runtime (:func:`short_body`)."""
    if is_short(data):
        return short_body(data)
    scheme.decode(data)
    return scheme.convert_unstructured(data, scheme.HUB_VERSION)


def is_short(data: Any) -> bool:
    """A v1beta1 job made from a runtime (``spec.runtimeRef``), which admission expands."""
    spec = data.get("spec") if isinstance(data, Mapping) else None
    return (
        isinstance(spec, Mapping) and "runtimeRef" in spec and data.get("apiVersion") == v1beta1.API_VERSION
    )


_SHORT_PARTS = (("runtimeRef", v1beta1.RuntimeRef), ("trainer", v1beta1.Trainer))


def short_body(data: Mapping[str, Any]) -> dict[str, Any]:
    """A short job's own fields checked — its kind, metadata and name, ``runtimeRef``, ``trainer``
    — and the job as written; ValidationError naming fields. The rest is the runtime's with the
    job's over it, which only admission, having the runtime, can judge."""
    found: list[validation.FieldError] = []
    if data.get("kind") != v1beta1.KIND:
        found.append(validation.FieldError(path=("kind",), message=f"expected {v1beta1.KIND}"))
    try:
        metadata = wire.structure(data.get("metadata", {}), meta.ObjectMeta)
    except validation.ValidationError as e:
        found += e.under(("metadata",)).errors
    else:
        if not metadata.name and not metadata.generate_name:
            found.append(
                validation.FieldError(
                    path=("metadata", "name"), message="Required value: the job's name (or generateName)"
                )
            )
        found += trainingjob_types.name_errors(metadata.name, {})
    spec = data.get("spec") or {}
    for field, cls in _SHORT_PARTS:
        if field in spec:
            try:
                wire.structure(spec[field], cls)
            except validation.ValidationError as e:
                found += e.under(("spec", field)).errors
    if found:
        raise validation.ValidationError(found)
    body = copy.deepcopy(dict(data))
    body.setdefault("metadata", {})
    return body


def decode(stored: Any) -> Job:
    """A stored object as v1beta1.

    A job that today's rules refuse — stored before a rule existed, or past the webhook — is
    decoded by its types alone, as the conversion webhook decodes it: it is shown, not hidden,
    and the operator's status on it says what is wrong. Only a job that does not even have the
    API's shape cannot be read.
    """
    try:
        return scheme.to_hub(scheme.decode(stored))
    except validation.ValidationError:
        pass  # the rare case: the process-wide switch below is thrown only for it
    try:
        with exact.types_only():
            return scheme.to_hub(scheme.decode(stored))
    except validation.ValidationError as e:
        found = (stored.get("metadata") or {}) if isinstance(stored, Mapping) else {}
        where = f"{found.get('namespace') or ''}/{found.get('name') or ''}"
        raise errors.InvalidInput(f"TrainingJob {where} as stored cannot be read: {e}") from None


async def create(c: connection.Connection, job: Job | Mapping[str, Any], namespace: str | None) -> Job:
    try:
        body = scheme.encode(job) if isinstance(job, Job) else hub_body(job)
    except validation.ValidationError as e:
        raise errors.InvalidInput("\n".join(str(f) for f in e.errors)) from None
    return await _post(c, body, namespace)


async def create_from_file(c: connection.Connection, path: str, namespace: str | None) -> list[Job]:
    """Every TrainingJob of the file, all checked before the first is sent."""
    return [await _post(c, body, namespace) for body in read_file(path)]


def read_file(path: str, check: Callable[[Any], object] | None = None) -> list[dict[str, Any]]:
    """Every TrainingJob of a YAML file (``-``: standard input), checked and as v1beta1 — no
    cluster needed, so a bad file is told as such before any connection is tried.

    ``check``, given, is asked of each document as written too, after the API's own rules: a
    ValidationError it raises is told with the file's lines. (``kubetrain submit`` passes the
    operator's framework rules, which the client itself does not import.)
    """
    try:
        docs = documents.load(path)
    except documents.DocumentError as e:
        raise errors.InvalidInput(str(e)) from None
    bodies = []
    for doc in docs:
        try:
            bodies.append(hub_body(doc.data))
            if check is not None:
                check(doc.data)
        except validation.ValidationError as e:
            raise errors.InvalidInput(str(doc.explain(e))) from None
    return bodies  # not empty: a file without a document is the reader's error


async def _post(c: connection.Connection, body: dict[str, Any], namespace: str | None) -> Job:
    ns = namespace or body.get("metadata", {}).get("namespace") or c.namespace
    body["metadata"].pop("namespace", None)
    return decode(await c.request("POST", connection.TRAININGJOBS, ns, body=body))


async def get(c: connection.Connection, name: str, namespace: str | None) -> Job:
    return decode(await c.request("GET", connection.TRAININGJOBS, namespace or c.namespace, name))


async def list_jobs(
    c: connection.Connection, namespace: str | None, selector: str | None, all_namespaces: bool
) -> list[Job]:
    ns = None if all_namespaces else namespace or c.namespace
    params = {"labelSelector": selector} if selector else None
    items = (await c.request("GET", connection.TRAININGJOBS, ns, params=params))["items"]
    jobs = [decode(i) for i in items]
    return sorted(jobs, key=lambda j: (j.metadata.namespace or "", j.metadata.name or ""))


async def delete(
    c: connection.Connection, name: str, namespace: str | None, wait: bool, timeout: float
) -> None:
    """Delete the job; with ``wait``, return once it and its pods are gone."""
    ns = namespace or c.namespace
    last = await get(c, name, ns)
    # Background: the job goes at once and the garbage collector takes its pods; the wait
    # below watches the pods themselves, which is what a person waits for.
    await c.request("DELETE", connection.TRAININGJOBS, ns, name, params={"propagationPolicy": "Background"})
    if not wait:
        return
    deadline = time.monotonic() + timeout
    selector = f"{naming.JOB_NAME}={name}"
    while True:
        try:
            last = await get(c, name, ns)
            left = True
        except errors.NotFound:
            pods = await c.request("GET", connection.PODS, ns, params={"labelSelector": selector})
            left = any(_owned_by(p, last) for p in pods["items"])
        if not left:
            return
        if time.monotonic() > deadline:
            raise errors.WaitTimeout(last, "deleted", timeout)
        await asyncio.sleep(0.5)


def _owned_by(pod: Mapping[str, Any], job: Job) -> bool:
    """A replica of ``job``, or its TensorBoard (owned through a Deployment's ReplicaSet)."""
    if (pod["metadata"].get("labels") or {}).get(naming.JOB_ROLE) == "tensorboard":
        return True
    return meta.controlled_by(pod, job.metadata.uid)
