"""Events about a TrainingJob: repeats are aggregated into one Event with a count, and one for a
namespace being deleted is dropped without a warning."""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import pytest
from testkit.builders import a_job

from kubetrain.api import scheme
from kubetrain.devcluster import cluster as devcluster
from kubetrain.operator.runtime import client, events


async def stored_job(api: client.Client, name: str, namespace: str) -> dict[str, Any]:
    job: dict[str, Any] = await api.create(
        client.TRAININGJOBS,
        scheme.encode(a_job(name).namespace(namespace).replicas("Worker", 1).build()),
        namespace,
    )
    return job


async def scenario(c: devcluster.Cluster, namespace: str) -> None:
    async with await client.Client.connect(str(c.kubeconfig)) as api:
        job = await stored_job(api, "ev", namespace)
        recorder = events.Recorder(api)
        for _ in range(3):
            await recorder.event(job, "Warning", "BackoffLimitExceeded", "user code failed 4 times")
        await recorder.event(job, "Normal", "Created", "created 1 pod")


def test_repeats_are_aggregated(cluster: devcluster.Cluster, namespace: str) -> None:
    asyncio.run(scenario(cluster, namespace))
    items = json.loads(cluster.kubectl("get", "events", "-n", namespace, "-o", "json").stdout)["items"]
    mine = {
        (e["reason"], e["count"], e["involvedObject"]["name"], e["source"]["component"])
        for e in items
        if e["involvedObject"].get("kind") == "TrainingJob"
    }
    assert mine == {
        ("BackoffLimitExceeded", 3, "ev", "kubetrain-operator"),
        ("Created", 1, "ev", "kubetrain-operator"),
    }
    described = cluster.kubectl("describe", "tj", "ev", "-n", namespace).stdout
    assert "user code failed 4 times" in described


async def record_in_terminating(c: devcluster.Cluster, namespace: str) -> None:
    async with await client.Client.connect(str(c.kubeconfig)) as api:
        job = await stored_job(api, "gone", namespace)
        # A finalizer keeps the namespace Terminating for as long as the test needs it.
        held = {"metadata": {"name": "held", "finalizers": ["kubetrain.dev/test"]}}
        await api.create(client.CONFIGMAPS, held, namespace)
        c.kubectl("delete", "namespace", namespace, "--wait=false")
        try:
            await events.Recorder(api).event(job, "Warning", "PodFailed", "worker-0 exited 1")
            await events.Recorder(api).event(job, "Warning", "PodFailed", "worker-0 exited 1")
        finally:
            await api.merge_patch(client.CONFIGMAPS, "held", {"metadata": {"finalizers": None}}, namespace)


def test_an_event_in_a_namespace_being_deleted_is_dropped_without_a_warning(
    cluster: devcluster.Cluster, namespace: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger=events.__name__)
    asyncio.run(record_in_terminating(cluster, namespace))
    dropped = [r for r in caplog.records if "not recorded" in r.getMessage()]
    assert dropped, "the apiserver took an Event in a namespace being deleted"
    assert {r.levelno for r in dropped} == {logging.DEBUG}
    assert "being terminated" in dropped[0].getMessage()
