"""A controller: informers feed a work queue, N workers feed a reconciler.

Events of the primary kind enqueue its key, unless only its status or metadata changed
(the *generation-changed* predicate: status writes must not wake the reconciler that made
them). Events of owned kinds enqueue the key of their controlling owner. What the initial
lists bring, and a new object's first pass, wait at :data:`~.workqueue.LOW` priority: a
change to what runs already — its pods, its spec — goes first. Workers start
only after every informer has synced. Each reconcile runs in its own span carrying the
key, the generation and the result, and its outcome drives the queue: a success forgets
the key's backoff and sets its one timer — ``requeue_after``, or none for ``Result()``
(earlier passes' timers go: this pass saw what they did) — an error backs it off, a
:class:`~.reconcile.TerminalError` is recorded and dropped.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Collection, Sequence

from opentelemetry import trace

from kubetrain.operator.runtime import cache, informer, metrics, reconcile, workqueue

__all__ = ["Controller", "OwnedKind"]

log = logging.getLogger(__name__)
_tracer = trace.get_tracer("kubetrain.operator.runtime.controller")


class OwnedKind:
    """An owned kind: events map to the key of the owner of ``owner_kind`` that controls the object.

    ``events``, when given, are the only events (ADDED, MODIFIED, DELETED) that do; what the
    initial list brings always does.
    """

    def __init__(
        self, source: informer.Informer, owner_kind: str, *, events: Collection[str] | None = None
    ) -> None:
        self.source, self.owner_kind = source, owner_kind
        self.events = None if events is None else frozenset(events)


class Controller:
    def __init__(
        self,
        name: str,
        reconciler: reconcile.Reconciler,
        primary: informer.Informer,
        owned: Sequence[OwnedKind] = (),
        *,
        workers: int = 1,
        queue: workqueue.WorkQueue[reconcile.Request] | None = None,
    ) -> None:
        self.name = name
        self.reconciler = reconciler
        self.primary = primary
        self.owned = tuple(owned)
        self.workers = workers
        self.queue = queue or workqueue.WorkQueue(metrics=metrics.QueueMetrics(name))
        metrics.WORKQUEUE_UNFINISHED.labels(name).set_function(self.queue.unfinished_seconds)
        metrics.WORKQUEUE_LONGEST.labels(name).set_function(self.queue.longest_running_seconds)
        metrics.remember(f"{name}-queue", self.queue.sizes)
        primary.add_handler(self._on_primary)
        for kind in self.owned:
            kind.source.add_handler(self._owner_handler(kind))
        metrics.MAX_CONCURRENT.labels(name).set(workers)

    def _on_primary(self, event: str, obj: cache.Obj, old: cache.Obj | None) -> None:
        if (
            event == "MODIFIED"
            and old is not None
            and _generation(old) == _generation(obj)
            and old["metadata"].get("deletionTimestamp") == obj["metadata"].get("deletionTimestamp")
        ):
            return  # only status or metadata changed
        self.queue.add(_request(obj), _priority(self.primary, first=event == "ADDED"))

    def _owner_handler(self, kind: OwnedKind) -> informer.Handler:
        def handler(event: str, obj: cache.Obj, old: cache.Obj | None) -> None:
            if kind.events is not None and event not in kind.events and kind.source.synced.is_set():
                return
            ref = cache.controller_of(obj)
            if ref is not None and ref.get("kind") == kind.owner_kind:
                request = reconcile.Request(obj["metadata"].get("namespace", ""), ref["name"])
                self.queue.add(request, _priority(kind.source))

        return handler

    async def run(self) -> None:
        """Wait for the caches, then reconcile until cancelled."""
        sources = [self.primary, *(k.source for k in self.owned)]
        await asyncio.gather(*(s.synced.wait() for s in sources))
        log.info("controller %s: caches synced, starting %d worker(s)", self.name, self.workers)
        try:
            await asyncio.gather(*(self._worker() for _ in range(self.workers)))
        finally:
            self.queue.shut_down()

    async def _worker(self) -> None:
        while (request := await self.queue.get()) is not None:
            try:
                await self._process(request)
            finally:
                self.queue.done(request)

    async def _process(self, request: reconcile.Request) -> None:
        obj = self.primary.store.get(str(request))
        generation = _generation(obj) if obj is not None else 0
        started = time.monotonic()
        metrics.ACTIVE_WORKERS.labels(self.name).inc()
        with _tracer.start_as_current_span(
            "reconcile",
            attributes={"controller": self.name, "k8s.key": str(request), "k8s.generation": generation},
        ) as span:
            try:
                result = await self.reconciler.reconcile(request)
            except reconcile.TerminalError as e:
                outcome = "error"
                metrics.TERMINAL_ERRORS.labels(self.name).inc()
                log.error("reconcile %s: terminal error, not retried: %s", request, e)
                self.queue.forget(request)
            except Exception as e:
                outcome = "error"
                metrics.RECONCILE_ERRORS.labels(self.name).inc()
                log.warning(
                    "reconcile %s failed (retry %d): %s", request, self.queue.num_requeues(request) + 1, e
                )
                span.record_exception(e)
                self.queue.add_rate_limited(request)
            else:
                outcome = "requeue_after" if result.requeue_after else "success"
                self.queue.forget(request)
                # This pass saw everything the earlier ones did: its time to look again is
                # the only one left.
                self.queue.schedule(request, result.requeue_after or None)
            span.set_attribute("result", outcome)
        metrics.ACTIVE_WORKERS.labels(self.name).dec()
        metrics.RECONCILE_TOTAL.labels(self.name, outcome).inc()
        metrics.RECONCILE_TIME.labels(self.name).observe(time.monotonic() - started)


def _priority(source: informer.Informer, *, first: bool = False) -> int:
    """LOW for an object's first pass and for what an initial list delivers (the informer is not
    synced while it delivers it); NORMAL for a change to something already reconciled."""
    return workqueue.LOW if first or not source.synced.is_set() else workqueue.NORMAL


def _generation(obj: cache.Obj) -> int:
    return int(obj["metadata"].get("generation", 0))


def _request(obj: cache.Obj) -> reconcile.Request:
    meta = obj["metadata"]
    return reconcile.Request(meta.get("namespace", ""), meta["name"])
