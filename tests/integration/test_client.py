"""The client's discipline against a real apiserver: server-side apply, QPS, errors, fencing."""

from __future__ import annotations

import asyncio
import time

import pytest

from kubetrain.devcluster import cluster as devcluster
from kubetrain.operator.runtime import client


async def apply_twice(c: devcluster.Cluster, namespace: str) -> dict[str, object]:
    api = await client.Client.connect(str(c.kubeconfig))
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "applied"}, "data": {"a": "1"}}
    await api.apply(client.CONFIGMAPS, body, namespace)
    result: dict[str, object] = await api.apply(client.CONFIGMAPS, {**body, "data": {"a": "2"}}, namespace)
    return result


def test_server_side_apply_uses_one_field_manager(cluster: devcluster.Cluster, namespace: str) -> None:
    applied = asyncio.run(apply_twice(cluster, namespace))
    assert applied["data"] == {"a": "2"}
    managers = {(m["manager"], m["operation"]) for m in applied["metadata"]["managedFields"]}  # type: ignore[index]
    assert managers == {("kubetrain-operator", "Apply")}


async def timed_reads(c: devcluster.Cluster, namespace: str, n: int) -> float:
    api = await client.Client.connect(str(c.kubeconfig), qps=10, burst=5)
    started = time.monotonic()
    await asyncio.gather(*(api.list(client.CONFIGMAPS, namespace) for _ in range(n)))
    return time.monotonic() - started


def test_client_side_qps_and_burst(cluster: devcluster.Cluster, namespace: str) -> None:
    # 5 requests ride the burst; the other 15 wait for tokens at 10 per second.
    assert asyncio.run(timed_reads(cluster, namespace, 20)) >= 1.4


async def refused(c: devcluster.Cluster, namespace: str) -> None:
    api = await client.Client.connect(str(c.kubeconfig))
    with pytest.raises(client.ApiError) as e:
        await api.get(client.CONFIGMAPS, "missing", namespace)
    assert e.value.not_found
    api.write_gate = lambda: False
    with pytest.raises(client.NotLeaderError):
        await api.merge_patch(client.CONFIGMAPS, "applied", {"data": {"a": "3"}}, namespace)
    assert (await api.list(client.CONFIGMAPS, namespace))["kind"] == "ConfigMapList"  # reads still pass


def test_errors_and_the_write_gate(cluster: devcluster.Cluster, namespace: str) -> None:
    asyncio.run(refused(cluster, namespace))
