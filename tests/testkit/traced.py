"""Reconcile one TrainingJob with tracing and JSON logs configured from the environment.

    python -P -m testkit.traced KUBECONFIG NAMESPACE

Runs in its own process because an OpenTelemetry TracerProvider is process-wide.
"""

from __future__ import annotations

import asyncio
import logging
import sys

from kubetrain.operator.runtime import client, controller, informer, logs, reconcile, tracing

log = logging.getLogger("testkit.traced")


class Reconciler:
    def __init__(self, api: client.Client) -> None:
        self.api = api
        self.done = asyncio.Event()

    async def reconcile(self, request: reconcile.Request) -> reconcile.Result:
        log.info("reconciling %s", request)
        await self.api.merge_patch(
            client.TRAININGJOBS,
            request.name,
            {"status": {"state": "Created"}},
            request.namespace,
            subresource="status",
        )
        self.done.set()
        return reconcile.Result()


async def main(kubeconfig: str, namespace: str) -> None:
    provider = tracing.configure()
    assert provider is not None, "the test sets an OTLP endpoint"
    logs.configure("info", "json")
    api = await client.Client.connect(kubeconfig)
    reconciler = Reconciler(api)
    jobs = informer.Informer(api, client.TRAININGJOBS, namespace=namespace)
    tasks = [
        asyncio.create_task(jobs.run()),
        asyncio.create_task(controller.Controller("traced", reconciler, jobs).run()),
    ]
    await asyncio.wait_for(reconciler.done.wait(), 30)
    for t in tasks:
        t.cancel()
    provider.shutdown()  # flushes the batch processor


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:3]))
