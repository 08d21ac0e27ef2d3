"""The TrainingJob reconciler against the real apiserver, with caches the test controls.

The informers are not run: each test fills their stores with snapshots it takes itself,
so it can make the cache lag exactly where it wants, and show that a lagging cache or a
restarted operator never duplicates a pod and never acts on a stale decision.
"""

from __future__ import annotations

import asyncio
from typing import Any

from testkit.builders import a_job

from kubetrain.api import scheme, v1beta1
from kubetrain.devcluster import cluster as devcluster
from kubetrain.operator import trainingjob_controller
from kubetrain.operator.runtime import cache, client, informer, reconcile

SELECTOR = "training.kubetrain.dev/job-name"
SERVICE_ACCOUNTS = client.Resource("", "v1", "serviceaccounts", "ServiceAccount")


class Caches:
    def __init__(self, api: client.Client, namespace: str) -> None:
        self.api, self.namespace = api, namespace
        self.jobs = informer.Informer(api, client.TRAININGJOBS, namespace=namespace)
        owned = {"owner": cache.by_owner()}
        self.pods = informer.Informer(
            api, client.PODS, namespace=namespace, label_selector=SELECTOR, indexers=owned
        )
        self.services = informer.Informer(api, client.SERVICES, namespace=namespace, indexers=owned)
        self.config_maps = informer.Informer(api, client.CONFIGMAPS, namespace=namespace, indexers=owned)

    async def snapshot(self, *which: informer.Informer) -> None:
        """Make the given caches (all by default) what the apiserver holds now."""
        for inf in which or (self.jobs, self.pods, self.services, self.config_maps):
            listed = await self.api.list(inf.resource, self.namespace)
            inf.store.replace(informer.strip_managed_fields(o) for o in listed["items"])

    async def submit(self, job: v1beta1.TrainingJob) -> dict[str, Any]:
        """Create ``job`` and let the caches see it (and everything else there now)."""
        created: dict[str, Any] = await self.api.create(
            client.TRAININGJOBS, scheme.encode(job), self.namespace
        )
        await self.snapshot()
        return created

    def reconciler(self) -> trainingjob_controller.TrainingJobReconciler:
        return trainingjob_controller.TrainingJobReconciler(
            self.api, jobs=self.jobs, pods=self.pods, services=self.services, config_maps=self.config_maps
        )


async def pod_names(api: client.Client, namespace: str) -> list[str]:
    listed = await api.list(client.PODS, namespace)
    return sorted(p["metadata"]["name"] for p in listed["items"])


async def scenario(c: devcluster.Cluster, namespace: str) -> None:
    api = await client.Client.connect(str(c.kubeconfig))
    # The apiserver tier runs no service-account controller; pods need the default account.
    await api.create(SERVICE_ACCOUNTS, {"metadata": {"name": "default"}}, namespace)
    caches = Caches(api, namespace)
    job = (
        a_job("tj")
        .framework("tensorflow")
        .namespace(namespace)
        .replicas("Chief", 1)
        .replicas("Worker", 2)
        .build()
    )
    await caches.submit(job)
    request = reconcile.Request(namespace, "tj")
    expected = ["tj-chief-0", "tj-worker-0", "tj-worker-1"]

    first = caches.reconciler()
    await first.reconcile(request)
    assert await pod_names(api, namespace) == expected
    stored: dict[str, Any] = await api.get(client.TRAININGJOBS, "tj", namespace)
    assert stored["status"]["state"] == "Created"

    # The caches still show no pods and the job as it was before the status write: the
    # reconciler sees its own write, tries the same pods again, and the apiserver refuses.
    await first.reconcile(request)
    assert await pod_names(api, namespace) == expected

    # A restarted operator with the same stale caches: its decision is computed from an
    # old resourceVersion, so the status write is refused and nothing else is done.
    restarted = caches.reconciler()
    result = await restarted.reconcile(request)
    assert result.requeue_after is not None
    assert await pod_names(api, namespace) == expected
    again: dict[str, Any] = await api.get(client.TRAININGJOBS, "tj", namespace)
    assert again["metadata"]["resourceVersion"] == stored["metadata"]["resourceVersion"]

    # Once the caches catch up, it carries on from the stored status.
    await caches.snapshot()
    await restarted.reconcile(request)
    assert await pod_names(api, namespace) == expected
    listed = await api.list(client.SERVICES, namespace)
    assert sorted(s["metadata"]["name"] for s in listed["items"]) == expected


def test_a_lagging_cache_or_a_restart_never_duplicates_pods(
    cluster: devcluster.Cluster, namespace: str
) -> None:
    asyncio.run(scenario(cluster, namespace))


async def invalid(c: devcluster.Cluster, namespace: str) -> None:
    api = await client.Client.connect(str(c.kubeconfig))
    caches = Caches(api, namespace)
    # Valid for the schema, but tensorflow has no Launcher replica type.
    job = a_job("bad").framework("tensorflow").namespace(namespace).replicas("Launcher", 1).build()
    await caches.submit(job)
    await caches.reconciler().reconcile(reconcile.Request(namespace, "bad"))
    stored: dict[str, Any] = await api.get(client.TRAININGJOBS, "bad", namespace)
    (failed,) = stored["status"]["conditions"]
    assert (stored["status"]["state"], failed["type"], failed["reason"]) == (
        "Failed",
        "Failed",
        "InvalidSpec",
    )
    assert "spec.replicaSpecs.Launcher: tensorflow has no replica type Launcher" in failed["message"]
    assert await pod_names(api, namespace) == []
    events = await api.list(client.EVENTS, namespace)
    assert [e["reason"] for e in events["items"]] == ["InvalidSpec"]


def test_a_job_its_framework_cannot_run_fails_with_the_reason(
    cluster: devcluster.Cluster, namespace: str
) -> None:
    asyncio.run(invalid(cluster, namespace))


async def managed_elsewhere(c: devcluster.Cluster, namespace: str) -> None:
    api = await client.Client.connect(str(c.kubeconfig))
    caches = Caches(api, namespace)
    job = (
        a_job("queued")
        .framework("tensorflow")
        .namespace(namespace)
        .replicas("Chief", 1)
        .with_spec(run_policy=v1beta1.RunPolicy(managed_by="kueue.x-k8s.io/multikueue"))
        .build()
    )
    created = await caches.submit(job)
    result = await caches.reconciler().reconcile(reconcile.Request(namespace, "queued"))
    assert result == reconcile.Result()
    stored: dict[str, Any] = await api.get(client.TRAININGJOBS, "queued", namespace)
    assert stored["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
    assert "status" not in stored
    assert await pod_names(api, namespace) == []


def test_a_job_managed_by_another_controller_is_left_alone(
    cluster: devcluster.Cluster, namespace: str
) -> None:
    asyncio.run(managed_elsewhere(cluster, namespace))
