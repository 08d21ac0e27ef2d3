"""The manager runs everything an operator process is made of, in the right order.

1. The probe and metrics servers start, and so does the webhook server (webhooks are
   served by every replica, leader or not).
2. Informers start and fill their caches — also on replicas that do not lead, so a new
   leader starts warm.
3. With leader election, controllers start only once the Lease is ours. Writes go
   through the client's write gate, which closes the instant leadership is lost; the
   controllers are cancelled at the same moment and :meth:`run` returns 1, so the
   process exits and comes back as a fresh candidate.
4. On stop (SIGTERM), controllers are cancelled, the Lease is released, servers close.
"""

from __future__ import annotations

import asyncio
import logging
import pathlib
import socket
import uuid
from collections.abc import Awaitable, Callable, Mapping
from typing import Protocol

import attrs

from kubetrain.operator.runtime import cache, client, informer, leaderelection, metrics, servers

__all__ = ["Manager", "Options"]

log = logging.getLogger(__name__)


@attrs.frozen(kw_only=True)
class Options:
    namespace: str | None = None
    leader_elect: bool = False
    leader_election_id: str = "kubetrain-operator-leader"
    leader_election_namespace: str = "kubetrain-system"
    identity: str = attrs.field(factory=lambda: f"{socket.gethostname()}_{uuid.uuid4().hex[:8]}")
    metrics_bind_address: str = ":8080"
    health_probe_bind_address: str = ":8081"
    webhook_port: int = 9443
    cert_dir: pathlib.Path = pathlib.Path("/tmp/k8s-webhook-server/serving-certs")
    lease: leaderelection.Config | None = None


class Manager:
    def __init__(self, api: client.Client, options: Options) -> None:
        self.api, self.options = api, options
        self._informers: dict[tuple[client.Resource, str | None], informer.Informer] = {}
        self.controllers: list[Runnable] = []
        self.elector: leaderelection.LeaderElector | None = None
        if options.leader_elect:
            config = options.lease or leaderelection.Config(
                name=options.leader_election_id,
                namespace=options.leader_election_namespace,
                identity=options.identity,
            )
            self.elector = leaderelection.LeaderElector(api.ungated(), config)
            api.write_gate = self.elector.may_write
        self.webhooks = (
            servers.WebhookServer(options.cert_dir, options.webhook_port) if options.webhook_port else None
        )
        self.started = asyncio.Event()
        self.probe_server = servers.Server(
            servers.probes_app({"ping": lambda: True}, self._readiness()), options.health_probe_bind_address
        )
        self.metrics_server = servers.Server(servers.metrics_app(), options.metrics_bind_address)

    def informer(
        self,
        resource: client.Resource,
        *,
        label_selector: str | None = None,
        indexers: Mapping[str, cache.Indexer] | None = None,
        transform: Callable[[cache.Obj], cache.Obj] = informer.strip_managed_fields,
        carry: Callable[[cache.Obj | None, cache.Obj], cache.Obj] | None = None,
    ) -> informer.Informer:
        """The shared informer for ``resource`` (one per resource and selector).

        ``transform`` is what its cache keeps of each object, ``carry`` what it keeps of the
        object it replaces (the first caller's).
        """
        key = (resource, label_selector)
        if key not in self._informers:
            self._informers[key] = informer.Informer(
                self.api,
                resource,
                namespace=self.options.namespace,
                label_selector=label_selector,
                indexers=indexers,
                transform=transform,
                carry=carry,
            )
        return self._informers[key]

    def add(self, c: Runnable) -> None:
        """A controller, or anything else that runs while this replica leads (a reader)."""
        self.controllers.append(c)

    def synced(self) -> bool:
        return all(i.synced.is_set() for i in self._informers.values())

    def _readiness(self) -> dict[str, servers.Check]:
        def webhooks_serving() -> bool:
            return self.webhooks is None or not self.webhooks.handlers or self.webhooks.serving()

        return {"informers-synced": self.synced, "webhook-serving": webhooks_serving}

    async def run(self, stop: asyncio.Event) -> int:
        """Run until ``stop`` is set (returns 0) or leadership is lost (returns 1)."""
        await self.probe_server.start()
        await self.metrics_server.start()
        if self.webhooks is not None and self.webhooks.handlers:
            await self.webhooks.start()
        tasks = [
            asyncio.create_task(i.run(), name=f"informer {i.resource.plural}")
            for i in self._informers.values()
        ]
        lost = asyncio.Event()
        try:
            if self.elector is not None:
                election = asyncio.create_task(self._lead(lost), name="leader election")
                tasks.append(election)
                await _first(stop.wait(), self.elector.became_leader.wait())
                if stop.is_set():
                    return 0
            identity = self.options.identity
            metrics.LEADER.labels(identity).set(1)
            tasks += [asyncio.create_task(c.run(), name=f"controller {c.name}") for c in self.controllers]
            self.started.set()
            await _first(stop.wait(), lost.wait(), *tasks)
            for t in tasks:
                if t.done() and not t.cancelled() and t.exception() is not None:
                    raise t.exception()  # type: ignore[misc]
            return 1 if lost.is_set() and not stop.is_set() else 0
        finally:
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            metrics.LEADER.labels(self.options.identity).set(0)
            if self.elector is not None:
                await self.elector.release()
            if self.webhooks is not None:
                await self.webhooks.stop()
            await self.metrics_server.stop()
            await self.probe_server.stop()

    async def _lead(self, lost: asyncio.Event) -> None:
        assert self.elector is not None
        await self.elector.run()
        log.error("leadership lost: stopping all controllers")
        lost.set()


class Runnable(Protocol):
    """What the manager runs while leading: named, and run until cancelled."""

    name: str

    async def run(self) -> None: ...


async def _first(*aws: Awaitable[object]) -> None:
    """Wait until the first of these awaitables (coroutines or tasks) finishes."""
    futures = [asyncio.ensure_future(a) for a in aws]
    try:
        await asyncio.wait(futures, return_when=asyncio.FIRST_COMPLETED)
    finally:
        # Cancel only what was made here; the caller's tasks are the caller's to manage.
        for original, f in zip(aws, futures, strict=True):
            if f is not original:
                f.cancel()
