"""Storage-version migration: rewrite every stored TrainingJob as v1beta1.

Objects created as v1alpha1 before v1beta1 became the storage version stay encoded as
v1alpha1 in etcd until something writes them. ``kubetrain migrate-storage`` reads every
TrainingJob through v1beta1 and writes it back unchanged (a PUT with its
resourceVersion): the apiserver stores the v1beta1 encoding when the stored bytes
differ, and leaves objects already stored as v1beta1 untouched. A write that conflicts
with a concurrent change is retried on a fresh read. When every object is done, the
CRD's ``status.storedVersions`` is set to ``[v1beta1]``, so v1alpha1 can later stop
being served — the procedure the kube-storage-version-migrator automates.
"""

from __future__ import annotations

from typing import Any

import attrs

from kubetrain.api import crd
from kubetrain.operator.runtime import client

__all__ = ["Report", "migrate"]

STORAGE_VERSION = client.TRAININGJOBS.version


@attrs.frozen
class Report:
    objects: int
    rewritten: int  # the apiserver stored a new encoding (its resourceVersion moved)


async def migrate(api: client.Client, attempts: int = 5) -> Report:
    listed = await api.list(client.TRAININGJOBS)
    rewritten = 0
    for item in listed["items"]:
        meta = item["metadata"]
        rewritten += await _rewrite(api, meta["namespace"], meta["name"], item, attempts)
    await api.merge_patch(
        client.CRDS,
        crd.NAME,
        {"status": {"storedVersions": [STORAGE_VERSION]}},
        subresource="status",
    )
    return Report(objects=len(listed["items"]), rewritten=rewritten)


async def _rewrite(api: client.Client, namespace: str, name: str, obj: dict[str, Any], attempts: int) -> int:
    for _ in range(attempts):
        before = obj["metadata"]["resourceVersion"]
        try:
            stored = await api.request("PUT", client.TRAININGJOBS, namespace=namespace, name=name, body=obj)
        except client.ApiError as e:
            if e.not_found:
                return 0
            if not e.conflict:
                raise
            obj = await api.get(client.TRAININGJOBS, name, namespace)
            continue
        return int(stored["metadata"]["resourceVersion"] != before)
    raise RuntimeError(f"TrainingJob {namespace}/{name} kept changing; run the migration again")
