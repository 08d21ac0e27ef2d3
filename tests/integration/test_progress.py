"""Hangs and progress against the real apiserver: what the pods carry, a hang charged once, and a
log that cannot be read (the progress reader's part; tests/e2e/test_progress.py reads one).

This tier runs no kubelet: the test writes the pods' statuses as a kubelet would — running, then
the agent's exit for a hang. The reconciler's status writes go through the CRD's schema, so the
new fields (``countedFailures[].hungTime``, ``progress``) are checked by the apiserver itself.
"""

from __future__ import annotations

import asyncio
import datetime
from typing import Any

from testkit.builders import a_job
from testkit.reconciling import Caches, for_pods, pod_names

from kubetrain.api import naming, v1beta1, wire
from kubetrain.devcluster import cluster as devcluster
from kubetrain.operator import progress_reader
from kubetrain.operator.runtime import client, reconcile

HUNG = v1beta1.progress_types.HUNG


def _at(t: datetime.datetime) -> str:
    return wire.format_time(t)


def running(started: datetime.datetime, agent: dict[str, Any] | None = None) -> dict[str, Any]:
    """A pod's status as a kubelet writes it: its agent (as given, else running) and main container
    running since ``started``."""
    main = {
        "name": "pytorch",
        "image": "x",
        "imageID": "",
        "ready": True,
        "restartCount": 0,
        "state": {"running": {"startedAt": _at(started)}},
    }
    sidecar = agent or {"state": {"running": {"startedAt": _at(started)}}}
    sidecar = {"name": naming.AGENT, "image": "x", "imageID": "", "ready": True, "restartCount": 0, **sidecar}
    return {
        "status": {
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": "True"}],
            "initContainerStatuses": [sidecar],
            "containerStatuses": [main],
        }
    }


async def scenario(c: devcluster.Cluster, namespace: str) -> None:
    api = await for_pods(c, namespace)
    caches = Caches(api, namespace)
    job = (
        a_job("tj")
        .namespace(namespace)
        .replicas("Master", 1)
        .replicas("Worker", 1)
        .with_spec(progress=v1beta1.ProgressSpec(deadline_seconds=30, startup_grace_seconds=60))
        .build()
    )
    await caches.submit(job)
    request = reconcile.Request(namespace, "tj")
    reader = progress_reader.Reader(api, interval=60)
    r = caches.reconciler(reader=reader)
    await r.reconcile(request)
    assert await pod_names(api, namespace) == ["tj-master-0", "tj-worker-0"]
    pod = await api.get(client.PODS, "tj-worker-0", namespace)
    assert pod["spec"]["initContainers"][0]["name"] == naming.AGENT
    env = {e["name"]: e.get("value") for e in pod["spec"]["containers"][0]["env"]}
    assert env[naming.PROGRESS_FILE_ENV] == naming.PROGRESS_FILE

    # Both run, since two minutes: past the startup grace.
    now = datetime.datetime.now(datetime.UTC).replace(microsecond=0)
    for name in ("tj-master-0", "tj-worker-0"):
        await api.merge_patch(
            client.PODS, name, running(now - datetime.timedelta(minutes=2)), namespace, subresource="status"
        )
    await caches.snapshot()
    await r.reconcile(request)
    stored = await api.get(client.TRAININGJOBS, "tj", namespace)
    assert stored["status"]["state"] == "Running"
    # The first rank's log cannot be read here (no kubelet): one read, nothing to take, and the
    # next one an interval later, not at once.
    assert await reader.read_due() == 1
    assert reader.take(namespace, "tj") is None
    assert await reader.read_due() == 0
    await r.reconcile(request)
    assert "progress" not in (await api.get(client.TRAININGJOBS, "tj", namespace))["status"]

    # The Worker's agent exited for a hang, and runs again.
    hung = {
        "state": {"running": {"startedAt": _at(now)}},
        "restartCount": 1,
        "lastState": {
            "terminated": {"exitCode": naming.HUNG_EXIT_CODE, "startedAt": _at(now), "finishedAt": _at(now)}
        },
    }
    started = now - datetime.timedelta(minutes=2)
    await api.merge_patch(client.PODS, "tj-worker-0", running(started, hung), namespace, subresource="status")
    await caches.snapshot()
    await r.reconcile(request)
    stored = await api.get(client.TRAININGJOBS, "tj", namespace)
    s = stored["status"]
    [record] = s["failures"]
    assert (record["reason"], record["class"], record["action"], record["pod"]) == (
        HUNG,
        "UserCode",
        "Restart",
        "tj-worker-0",
    )
    assert "exitCode" not in record
    assert s["restarts"]["userCode"] == 1
    assert {c["type"]: c["status"] for c in s["conditions"]}["Restarting"] == "True"
    counted = {c["pod"]: c for c in s["countedFailures"]}
    assert counted["tj-worker-0"]["hungTime"] == _at(now)

    # Seen again (the pods are going, as the restart deletes them), it is not charged again.
    await caches.snapshot()
    await r.reconcile(request)
    again = await api.get(client.TRAININGJOBS, "tj", namespace)
    assert again["status"]["restarts"]["userCode"] == 1
    assert len(again["status"]["failures"]) == 1
    events = await api.list(client.EVENTS, namespace)
    said = [e["message"] for e in events["items"] if e["reason"] == "PodFailed"]
    assert said == [f"Worker 0 (tj-worker-0) hung: UserCode {HUNG}; Restart"], said


def test_a_hang_is_charged_once_and_a_log_that_cannot_be_read_waits_an_interval(
    cluster: devcluster.Cluster, namespace: str
) -> None:
    asyncio.run(scenario(cluster, namespace))


async def last_read(c: devcluster.Cluster, namespace: str) -> None:
    api = await for_pods(c, namespace)
    caches = Caches(api, namespace)
    job = (
        a_job("done")
        .namespace(namespace)
        .replicas("Master", 1)
        .replicas("Worker", 1)
        .with_spec(
            progress=v1beta1.ProgressSpec(),
            run_policy=v1beta1.RunPolicy(backoff_limit=0, clean_pod_policy=v1beta1.CleanPodPolicy.NONE),
        )
        .build()
    )
    await caches.submit(job)
    request = reconcile.Request(namespace, "done")
    clock = [0.0]
    reader = progress_reader.Reader(api, interval=60, clock=lambda: clock[0])
    r = caches.reconciler(reader=reader)
    await r.reconcile(request)
    now = datetime.datetime.now(datetime.UTC).replace(microsecond=0)
    started = now - datetime.timedelta(minutes=2)
    for name in ("done-master-0", "done-worker-0"):
        await api.merge_patch(client.PODS, name, running(started), namespace, subresource="status")
    await caches.snapshot()
    await r.reconcile(request)
    assert await reader.read_due() == 1, "the first rank read while it runs"

    # The Worker fails, with no restart left: the job has failed while its first rank still runs
    # (kept: on a kubelet, a deleted one also ends before it goes).
    end = {
        "terminated": {"exitCode": 1, "reason": "Error", "startedAt": _at(started), "finishedAt": _at(now)}
    }
    failed = running(started, {"state": end})
    failed["status"] |= {"phase": "Failed", "conditions": [{"type": "Ready", "status": "False"}]}
    failed["status"]["containerStatuses"][0]["state"] = end
    await api.merge_patch(client.PODS, "done-worker-0", failed, namespace, subresource="status")
    await caches.snapshot()
    await r.reconcile(request)
    assert (await api.get(client.TRAININGJOBS, "done", namespace))["status"]["state"] == "Failed"
    clock[0] = 20
    assert await reader.read_due() == 0, "no last read while the first rank's agent may still print"

    # The first rank stopped too (every container: the kubelet says Failed only then), and the
    # pass that sees it reads it a last time, before the fallback.
    await api.merge_patch(client.PODS, "done-master-0", failed, namespace, subresource="status")
    await caches.snapshot()
    await r.reconcile(request)
    assert await reader.read_due() == 1, "the last read, as soon as its pod ended"
    clock[0] = 1000
    await caches.snapshot()
    await r.reconcile(request)
    assert await reader.read_due() == 0, "and no other"


def test_a_finished_job_is_read_a_last_time_once_its_first_ranks_pod_has_ended(
    cluster: devcluster.Cluster, namespace: str
) -> None:
    asyncio.run(last_read(cluster, namespace))
