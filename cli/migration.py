"""Storage-version migration: rewrite every stored TrainingJob as v1beta1.

Objects created as v1alpha1 before v1beta1 became the storage version stay encoded as
v1alpha1 in etcd until something writes them. ``kubetrain migrate-storage`` reads every
TrainingJob through v1beta1 and writes it back unchanged (a PUT with its
resourceVersion): the apiserver stores the v1beta1 encoding when the stored bytes
differ, and leaves objects already stored as v1beta1 untouched. A write that conflicts
with a concurrent change is retried on a fresh read. When every object is done, the
CRD's ``status.storedVersions`` is set to ``[v1beta1]``, so v1alpha1 can later stop
being served — the procedure the kube-storage-version-migrator automates.

An admin runs it from the command line, through the client's connection
(:mod:`kubetrain.client.connection`), not the operator's runtime: the command never loads
the operator's HTTP, tracing or metrics machinery. What the apiserver refuses (RBAC, say) is
a :class:`~kubetrain.client.errors.Rejected` with its message.
"""

from __future__ import annotations

from typing import Any

import attrs

from kubetrain.api import crd, v1beta1
from kubetrain.cli import errors
from kubetrain.client import connection
from kubetrain.client import errors as client_errors

__all__ = ["STORAGE_VERSION", "Report", "migrate"]

STORAGE_VERSION = v1beta1.VERSION
CRDS = connection.Kind(
    "CustomResourceDefinition", "/apis/apiextensions.k8s.io/v1", "customresourcedefinitions"
)
CONFLICT = 409


@attrs.frozen
class Report:
    objects: int
    rewritten: int  # the apiserver stored a new encoding (its resourceVersion moved)


async def migrate(c: connection.Connection, attempts: int = 5) -> Report:
    listed = await c.request("GET", connection.TRAININGJOBS, None)
    rewritten = 0
    for item in listed["items"]:
        meta = item["metadata"]
        rewritten += await _rewrite(c, meta["namespace"], meta["name"], item, attempts)
    await c.request(
        "PATCH",
        CRDS,
        None,
        crd.NAME,
        sub="status",
        body={"status": {"storedVersions": [STORAGE_VERSION]}},
        content_type="application/merge-patch+json",
    )
    return Report(objects=len(listed["items"]), rewritten=rewritten)


async def _rewrite(
    c: connection.Connection, namespace: str, name: str, obj: dict[str, Any], attempts: int
) -> int:
    for _ in range(attempts):
        before = obj["metadata"]["resourceVersion"]
        try:
            stored = await c.request("PUT", connection.TRAININGJOBS, namespace, name, body=obj)
            return int(stored["metadata"]["resourceVersion"] != before)
        except client_errors.NotFound:
            return 0  # deleted meanwhile: nothing left to rewrite
        except client_errors.Rejected as e:
            if e.status != CONFLICT:
                raise
        try:
            obj = await c.request("GET", connection.TRAININGJOBS, namespace, name)
        except client_errors.NotFound:
            return 0
    raise errors.CommandError(f"TrainingJob {namespace}/{name} kept changing; run the migration again")
