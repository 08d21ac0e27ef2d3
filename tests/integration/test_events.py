"""Events about a TrainingJob: repeats are aggregated into one Event with a count."""

from __future__ import annotations

import asyncio
import json

from testkit.builders import a_job

from kubetrain.api import scheme
from kubetrain.devcluster import cluster as devcluster
from kubetrain.operator.runtime import client, events


async def scenario(c: devcluster.Cluster, namespace: str) -> None:
    api = await client.Client.connect(str(c.kubeconfig))
    job = await api.create(
        client.TRAININGJOBS,
        scheme.encode(a_job("ev").namespace(namespace).replicas("Worker", 1).build()),
        namespace,
    )
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
