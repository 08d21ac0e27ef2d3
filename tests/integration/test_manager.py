"""A manager with one controller, against the real apiserver: what wakes the reconciler, and what it reports."""

from __future__ import annotations

import asyncio
import collections
import re
from typing import Any

import httpx
from testkit.builders import a_job

from kubetrain.api import naming, scheme
from kubetrain.devcluster import cluster as devcluster
from kubetrain.operator.runtime import client, controller, manager, reconcile


class Recording:
    """Records every call; patches status (which must not wake it) and fails on request."""

    def __init__(self, api: client.Client) -> None:
        self.api = api
        self.calls: collections.Counter[str] = collections.Counter()
        self.fail: dict[str, type[Exception]] = {}

    async def reconcile(self, request: reconcile.Request) -> reconcile.Result:
        self.calls[request.name] += 1
        if request.name in self.fail:
            raise self.fail[request.name](f"{request.name} is set to fail")
        await self.api.merge_patch(
            client.TRAININGJOBS,
            request.name,
            {"status": {"state": "Created"}},
            request.namespace,
            subresource="status",
        )
        return reconcile.Result()


async def until(check: Any, timeout: float = 20) -> None:
    async with asyncio.timeout(timeout):
        while not check():
            await asyncio.sleep(0.05)


async def steady(rec: Recording, name: str, seconds: float = 1.0) -> int:
    """The call count once it has stopped changing for ``seconds``."""
    while True:
        before = rec.calls[name]
        await asyncio.sleep(seconds)
        if rec.calls[name] == before:
            return before


async def scenario(c: devcluster.Cluster, namespace: str) -> None:
    api = await client.Client.connect(str(c.kubeconfig))
    mgr = manager.Manager(
        api,
        manager.Options(
            namespace=namespace,
            metrics_bind_address="127.0.0.1:0",
            health_probe_bind_address="127.0.0.1:0",
            webhook_port=0,
        ),
    )
    rec = Recording(api)
    jobs = mgr.informer(client.TRAININGJOBS)
    configmaps = mgr.informer(client.CONFIGMAPS, label_selector=naming.JOB_NAME)
    mgr.add(
        controller.Controller(
            "trainingjob", rec, jobs, [controller.OwnedKind(configmaps, "TrainingJob")], workers=2
        )
    )
    stop = asyncio.Event()
    run = asyncio.create_task(mgr.run(stop))
    try:
        await until(mgr.started.is_set)
        job = scheme.encode(a_job("one").namespace(namespace).replicas("Worker", 1).build())
        created = await api.create(client.TRAININGJOBS, job, namespace)

        # One reconcile for the creation; its own status write wakes nothing.
        await until(lambda: rec.calls["one"] >= 1)
        assert await steady(rec, "one") == 1

        # A spec change does.
        await api.merge_patch(
            client.TRAININGJOBS, "one", {"spec": {"runPolicy": {"suspend": True}}}, namespace
        )
        await until(lambda: rec.calls["one"] >= 2)

        # So does a change to an object the job controls.
        owner = {
            "apiVersion": created["apiVersion"],
            "kind": "TrainingJob",
            "name": "one",
            "uid": created["metadata"]["uid"],
            "controller": True,
        }
        await api.create(
            client.CONFIGMAPS,
            {
                "metadata": {
                    "name": "one-config",
                    "labels": {naming.JOB_NAME: "one"},
                    "ownerReferences": [owner],
                }
            },
            namespace,
        )
        await until(lambda: rec.calls["one"] >= 3)
        assert await steady(rec, "one") == 3

        # Errors are retried with backoff; terminal errors are not.
        rec.fail = {"flaky": RuntimeError, "hopeless": reconcile.TerminalError}
        for name in rec.fail:
            await api.create(
                client.TRAININGJOBS,
                scheme.encode(a_job(name).namespace(namespace).replicas("Worker", 1).build()),
                namespace,
            )
        await until(lambda: rec.calls["flaky"] >= 4)
        assert await steady(rec, "hopeless") == 1

        # Probes and metrics.
        probes, metrics_port = _ports(mgr)
        async with httpx.AsyncClient() as http:
            assert (await http.get(f"http://127.0.0.1:{probes}/readyz")).text == "ok\n"
            assert (await http.get(f"http://127.0.0.1:{probes}/healthz")).status_code == 200
            text = (await http.get(f"http://127.0.0.1:{metrics_port}/metrics")).text
        assert 'controller_runtime_reconcile_total{controller="trainingjob",result="success"} 3.0' in text
        assert 'controller_runtime_terminal_reconcile_errors_total{controller="trainingjob"} 1.0' in text
        assert 'workqueue_depth{name="trainingjob"}' in text
        # A first pass waits at low priority, a change at normal: their waits are told apart.
        assert 'workqueue_queue_duration_seconds_count{name="trainingjob",priority="-100"}' in text
        assert 'workqueue_queue_duration_seconds_count{name="trainingjob",priority="0"}' in text
        assert 'controller_runtime_reconcile_time_seconds_count{controller="trainingjob"}' in text
        assert 'leader_election_master_status{name="' in text
        # Every request is counted by its answer and timed (this process's clients share the registry).
        assert re.search(r'^rest_client_requests_total\{code="201",method="POST"\} [1-9]', text, re.M)
        assert re.search(r'^rest_client_request_duration_seconds_count\{verb="GET"\} [1-9]', text, re.M)
    finally:
        stop.set()
        try:
            assert await run == 0
        finally:
            await api.close()


def _ports(mgr: manager.Manager) -> tuple[int, int]:
    return mgr.probe_server.port, mgr.metrics_server.port


def test_what_wakes_the_reconciler(cluster: devcluster.Cluster, namespace: str) -> None:
    asyncio.run(scenario(cluster, namespace))
