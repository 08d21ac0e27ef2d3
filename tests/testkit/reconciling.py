"""The reconciler against the real apiserver with caches a test controls: its informers are not run,
the test fills their stores with snapshots it takes itself (so it can make a cache lag exactly
where it wants)."""

from __future__ import annotations

from typing import Any

from kubetrain.api import naming, scheme, v1beta1
from kubetrain.devcluster import cluster as devcluster
from kubetrain.operator import trainingjob_controller
from kubetrain.operator.runtime import cache, client, informer

SELECTOR = naming.JOB_NAME
SERVICE_ACCOUNTS = client.Resource("", "v1", "serviceaccounts", "ServiceAccount")


class Caches:
    def __init__(self, api: client.Client, namespace: str) -> None:
        self.api, self.namespace = api, namespace
        self.jobs = informer.Informer(api, client.TRAININGJOBS, namespace=namespace)
        owned = {"owner": cache.by_owner()}
        self.pods = informer.Informer(
            api, client.PODS, namespace=namespace, label_selector=SELECTOR, indexers=owned
        )
        self.services = informer.Informer(
            api, client.SERVICES, namespace=namespace, label_selector=SELECTOR, indexers=owned
        )
        self.config_maps = informer.Informer(
            api, client.CONFIGMAPS, namespace=namespace, label_selector=SELECTOR, indexers=owned
        )

    async def snapshot(self, *which: informer.Informer) -> None:
        """Make the given caches (all by default) what the apiserver holds now, as a relist does:
        their handlers hear of each change (the reconciler's expectations among them)."""
        for inf in which or (self.jobs, self.pods, self.services, self.config_maps):
            await inf._list()

    async def submit(self, job: v1beta1.TrainingJob) -> dict[str, Any]:
        """Create ``job`` and let the caches see it (and everything else there now)."""
        created: dict[str, Any] = await self.api.create(
            client.TRAININGJOBS, scheme.encode(job), self.namespace
        )
        await self.snapshot()
        return created

    def reconciler(self, **options: Any) -> trainingjob_controller.TrainingJobReconciler:
        return trainingjob_controller.TrainingJobReconciler(
            self.api,
            jobs=self.jobs,
            pods=self.pods,
            services=self.services,
            config_maps=self.config_maps,
            **options,
        )


async def pod_names(api: client.Client, namespace: str) -> list[str]:
    listed = await api.list(client.PODS, namespace)
    return sorted(p["metadata"]["name"] for p in listed["items"])


async def for_pods(c: devcluster.Cluster, namespace: str) -> client.Client:
    """A client, and the namespace's default ServiceAccount that pods need: the apiserver tier
    runs no service-account controller."""
    api = await client.Client.connect(str(c.kubeconfig))
    await api.create(SERVICE_ACCOUNTS, {"metadata": {"name": "default"}}, namespace)
    return api
