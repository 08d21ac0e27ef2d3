"""The benchmark's side of a phase: its connection, its watches of pods and TrainingJobs, its creates
and patches, and waiting until everything it made reached a state."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import pathlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable

from kubetrain.devcluster import kwok
from kubetrain.operator.runtime import client
from kubetrain_bench.console import log
from kubetrain_bench.jobs.common import (
    BOUND,
    LABEL,
    NAMESPACES,
    SERVICEACCOUNTS,
    BenchTimeoutError,
    Obj,
    RowKey,
)
from kubetrain_bench.watch import list_and_watch


class Waiter:
    """List, then watch, one kind in every namespace; note when each object is first seen in each state.

    ``first[name][state]`` is the benchmark's clock when its watch first showed ``name`` in
    ``state``, ``job[name]`` the job label of a pod (what the status lag is computed from),
    and ``namespace[name]`` where it is. Names are unique across the benchmark's namespaces.
    """

    def __init__(
        self,
        api: client.Client,
        resource: client.Resource,
        state: Callable[[Obj], str],
        own: collections.Counter[RowKey],
    ) -> None:
        self.api, self.resource = api, resource
        self.state = state
        self.own = own
        self.states: dict[str, str] = {}
        self.first: dict[str, dict[str, float]] = collections.defaultdict(dict)
        self.job: dict[str, str] = {}
        self.namespace: dict[str, str] = {}
        self.listed = asyncio.Event()
        self.changes = 0  # objects seen added, changed or deleted by the watch
        self.changed_at = time.perf_counter()

    def _key(self, verb: str) -> RowKey:
        return (verb, self.resource.group, self.resource.plural, "")

    def _see(self, obj: Obj, now: float) -> None:
        meta = obj["metadata"]
        name = meta["name"]
        state = self.state(obj)
        self.states[name] = state
        self.first[name].setdefault(state, now)
        self.namespace[name] = meta.get("namespace", "")
        job = (meta.get("labels") or {}).get(LABEL)
        if job:
            self.job[name] = job

    def done_at(self, names: Iterable[str], state: str) -> dict[str, float]:
        return {n: self.first[n][state] for n in names if state in self.first.get(n, {})}

    async def run(self) -> None:
        def listed(items: list[Obj]) -> None:
            now = time.perf_counter()
            for obj in items:
                self._see(obj, now)
            self.listed.set()

        def changed(kind: str, obj: Obj) -> None:
            self.changes += 1
            self.changed_at = time.perf_counter()
            if kind in ("ADDED", "MODIFIED"):
                self._see(obj, self.changed_at)

        def requested(verb: str) -> None:
            self.own[self._key(verb)] += 1

        await list_and_watch(
            self.api, self.resource, listed=listed, changed=changed, requested=requested, retry=0.2
        )

    def summary(self, names: Iterable[str]) -> str:
        counts = collections.Counter(self.states.get(n) or "(no state)" for n in names)
        return ", ".join(f"{state} {n}" for state, n in counts.most_common())


async def ensure_namespace(api: client.Client, namespace: str, own: collections.Counter[RowKey]) -> None:
    """The namespace, and its default ServiceAccount (pods are refused until it exists)."""
    for resource, body, ns in (
        (NAMESPACES, {"metadata": {"name": namespace}}, None),
        (SERVICEACCOUNTS, {"metadata": {"name": "default"}}, namespace),
    ):
        own["POST", resource.group, resource.plural, ""] += 1
        try:
            await api.create(resource, body, ns)
        except client.ApiError as e:
            if e.conflict:  # the service-account controller was first
                continue
            raise


async def wait_all(
    waiter: Waiter,
    names: list[str],
    state: str,
    what: str,
    started: float,
    timeout: float,
    alive: Callable[[], None] = lambda: None,
) -> float:
    """Wait until every one of ``names`` was seen in ``state``; when the last was, or BenchTimeoutError."""
    last_report = time.perf_counter()
    while len(done := waiter.done_at(names, state)) < len(names):
        alive()
        now = time.perf_counter()
        if now - started > timeout:
            e = BenchTimeoutError(
                f"timed out after {timeout:.0f}s: only {len(done)} of {len(names)} "
                f"{what} reached {state} (states: {waiter.summary(names)})"
            )
            e.partial = {"count": len(names), "done": len(done), "states": waiter.summary(names)}
            raise e
        if now - last_report >= 10:
            last_report = now
            log(f"  {len(done)}/{len(names)} {what} {state} after {now - started:.0f}s")
        await asyncio.sleep(0.25)
    return max(done.values())


class Watches:
    """The benchmark's connection and its watches, open for a whole phase in its namespaces."""

    def __init__(self, api: client.Client, namespaces: list[str], own: collections.Counter[RowKey]) -> None:
        self.api, self.namespaces, self.own = api, namespaces, own
        self.pods = Waiter(api, client.PODS, _phase, own)
        self.jobs = Waiter(api, client.TRAININGJOBS, _job_state, own)
        self.sent: dict[str, float] = {}  # name -> when its create was sent
        self._tasks: list[asyncio.Task[None]] = []

    @classmethod
    @contextlib.asynccontextmanager
    async def open(
        cls, kubeconfig: pathlib.Path, namespaces: list[str], own: collections.Counter[RowKey], *, jobs: bool
    ) -> AsyncIterator[Watches]:
        api = await client.Client.connect(str(kubeconfig), qps=1e6, burst=1_000_000, timeout=60)
        for namespace in namespaces:
            await ensure_namespace(api, namespace, own)
        w = cls(api, namespaces, own)
        waiters = [w.pods, w.jobs] if jobs else [w.pods]
        w._tasks = [asyncio.create_task(x.run()) for x in waiters]
        try:
            await asyncio.gather(*(x.listed.wait() for x in waiters))
            yield w
        finally:
            for t in w._tasks:
                t.cancel()
            await asyncio.gather(*w._tasks, return_exceptions=True)
            await api.close()

    def check(self) -> None:
        for t in self._tasks:
            if t.done():
                t.result()  # raises what ended the watch
                raise RuntimeError("the benchmark's watch ended")

    async def create(
        self,
        resource: client.Resource,
        bodies: list[Obj],
        concurrency: int,
        *,
        services: Callable[[Obj], Obj | None] | None = None,
        after: Callable[[Obj], Awaitable[None]] | None = None,
    ) -> dict[str, Obj]:
        """Create every object, ``concurrency`` at a time; name -> the object as stored.

        With ``services``, the Service it gives for a pod is created first, as the operator does;
        ``after`` is awaited once the object is created, in the same slot. ``self.sent`` has when
        each create was sent.
        """
        sem = asyncio.Semaphore(concurrency)
        stored: dict[str, Obj] = {}

        async def one(body: Obj) -> None:
            async with sem:
                name = body["metadata"]["name"]
                namespace = body["metadata"].get("namespace") or self.namespaces[0]
                self.sent[name] = time.perf_counter()
                service = services(body) if services is not None else None
                if service is not None:
                    self.own["POST", "", "services", ""] += 1
                    await self.api.create(client.SERVICES, service, namespace)
                self.own["POST", resource.group, resource.plural, ""] += 1
                stored[name] = await self.api.create(resource, body, namespace)
                if after is not None:
                    await after(body)

        await asyncio.gather(*(one(b) for b in bodies))
        return stored

    async def patch_status(self, job: str, namespace: str, patch: Obj) -> None:
        self.own["PATCH", client.TRAININGJOBS.group, client.TRAININGJOBS.plural, "status"] += 1
        await self.api.merge_patch(client.TRAININGJOBS, job, patch, namespace, subresource="status")

    async def finish(self, pods: Iterable[str], rate: float) -> None:
        """Make ``pods`` exit 0, ``rate`` a second, through the annotation kwok acts on."""
        patch = {"metadata": {"annotations": {kwok.EXIT_CODE: "0"}}}

        async def one(pod: str) -> None:
            self.own["PATCH", "", "pods", ""] += 1
            await self.api.merge_patch(client.PODS, pod, patch, self.pods.namespace[pod])

        sent = []
        for pod in pods:  # at the rate asked, however long each answer takes
            sent.append(asyncio.create_task(one(pod)))
            await asyncio.sleep(1 / rate)
        await asyncio.gather(*sent)


def _phase(obj: Obj) -> str:
    """A pod's phase, and ``Bound`` for a Pending pod that kube-scheduler has given a node: the
    watch shows the binding and kwok's Running as two changes, so each has its own time."""
    phase = str(obj.get("status", {}).get("phase", ""))
    if phase == "Pending" and obj.get("spec", {}).get("nodeName"):
        return BOUND
    return phase


def _job_state(obj: Obj) -> str:
    return str(obj.get("status", {}).get("state", ""))
