"""Hostile documents through the real apiserver, with kubetrain's webhooks deployed; what happened.

:func:`run` sends each :class:`~kubetrain_bench.hostile.generator.Doc` with a ``create`` (POST) to
its version's endpoint, in a namespace of a :class:`~kubetrain_bench.deployment.Deployment` (a
cluster of its own with ``config/default`` and the manager serving the conversion, validating and
expanding webhooks), and puts it in one class (:mod:`kubetrain_bench.hostile.report` counts them):

- ``rejected_with_path``: a 4xx whose message names a field (``spec.…`` or ``metadata.…``);
- ``rejected_without_path``: any other 4xx;
- ``server_error``: a 5xx, an ``InternalError``, a webhook the apiserver failed to call, or no answer;
- ``accepted``: created, and within ``timeout`` every pod and Service the job renders existed
  (seen on a watch, so pods that come and go count) — or the job is suspended or managed by
  another controller, so nothing is due (counted as ``idle`` too), or what is missing waits
  behind pods of the job the scheduler cannot place (an MPI launcher waits for its workers;
  counted as ``waiting`` too, with the scheduler's message);
- ``accepted_unrunnable``: created, but the stored job cannot be read back as v1beta1, does
  not render, or its pods and Services did not all appear (the job's conditions, events and
  what was missing are kept for the report). A repeated ``FailedCreate`` event, or a Failed
  job with objects missing, ends the wait early.

A document's ``before`` runtimes are written first, in order (a create, or a replace of one that
exists): one refused is noted in the result's detail, one answered 5xx makes the document a
``server_error``. A runtime document is written the same way and classed by the same rules
(accepted: stored); then, if it was stored, the short job made from it (``then``) is created,
and that decides: refused with a field named, the runtime stays ``accepted`` (counted as
``job_refused`` too: a clear error at the job's admission); refused without one, or 5xx, the
document is classed so; created, it is checked as any accepted job is.

Accepted jobs are deleted once checked, with their pods (not left to the garbage collector, which
falls behind), and a document's runtimes once it is done. Meanwhile a
v1alpha1 LIST of the namespace runs every second (one bad stored object once broke every such
list); at the end the manager's log is searched for Python tracebacks.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import functools
import pathlib
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator
from typing import Any

from kubetrain.api import naming
from kubetrain.operator.runtime import client
from kubetrain_bench.deployment import Deployment
from kubetrain_bench.hostile.generator import Doc
from kubetrain_bench.hostile.report import (
    ACCEPTED,
    ACCEPTED_UNRUNNABLE,
    REJECTED_WITH_PATH,
    SERVER_ERROR,
    Report,
    Result,
    classify,
    count_tracebacks,
)
from kubetrain_bench.hostile.seen import RESOURCES, Seen, expected_objects

# --- the run ----------------------------------------------------------------------------------------


class Runner:
    def __init__(
        self,
        api: client.Client,
        namespace: str,
        *,
        concurrency: int,
        checks: int,
        timeout: float,
        progress: Callable[[str], None] | None,
    ) -> None:
        self.api, self.namespace = api, namespace
        self.concurrency, self.timeout = concurrency, timeout
        self.grace = min(15.0, timeout / 2)
        self.checking = asyncio.Semaphore(checks)
        self.seen = Seen()
        self.results: list[Result] = []
        self.tasks: set[asyncio.Task[None]] = set()
        self.alpha_lists = 0
        self.alpha_failures: list[str] = []
        self.progress = progress

    async def _answer(self, write: Callable[[], Awaitable[Any]]) -> tuple[int, str, str, float]:
        """(status, reason, message, seconds) of ``write``; 429s waited out, not answers."""
        status, reason, message = 201, "", ""
        started = time.perf_counter()
        for attempt in range(6):
            try:
                await write()
                status = 201
            except client.ApiError as e:
                status, reason, message = e.status, e.reason, e.message
                if e.status == 429 and attempt < 5:  # the apiserver is busy: not an answer about the document
                    await asyncio.sleep(0.5 * 2**attempt)
                    started = time.perf_counter()
                    continue
            break
        return status, reason, message, time.perf_counter() - started

    async def _write_runtime(self, body: dict[str, Any]) -> None:
        """Create ``body`` (a TrainingRuntime), or replace it if one of its name exists."""
        try:
            await self.api.create(client.TRAINING_RUNTIMES, body, self.namespace)
        except client.ApiError as e:
            name = (body.get("metadata") or {}).get("name")
            if e.status != 409 or e.reason != "AlreadyExists" or not isinstance(name, str):
                raise
            current = await self.api.get(client.TRAINING_RUNTIMES, name, self.namespace)
            meta = {**body["metadata"], "resourceVersion": current["metadata"]["resourceVersion"]}
            await self.api.request(
                "PUT",
                client.TRAINING_RUNTIMES,
                namespace=self.namespace,
                name=name,
                body={**body, "metadata": meta},
            )

    async def create(self, doc: Doc) -> Result:
        result = Result(
            index=doc.index,
            name=doc.name,
            version=doc.version,
            sample=doc.sample,
            kinds=doc.kinds,
            label=doc.label,
            outcome=ACCEPTED,
            status=201,
            message="",
            latency=0.0,
            family=doc.family,
            runtimes=doc.runtime_names,
        )
        refused = []
        for before in doc.before:
            status, reason, message, _s = await self._answer(functools.partial(self._write_runtime, before))
            if status >= 300 and classify(status, reason, message) == SERVER_ERROR:
                result.outcome, result.status = SERVER_ERROR, status
                result.message = f"writing the runtime {before['metadata']['name']} first: {message}"[:2000]
                return result
            if status >= 300:
                refused.append(f"{before['metadata']['name']}: {message}"[:500])
        if refused:
            result.detail["before_refused"] = refused
        if doc.family == "runtime":
            status, reason, message, latency = await self._answer(lambda: self._write_runtime(doc.body))
        else:
            resource = RESOURCES[doc.version]
            status, reason, message, latency = await self._answer(
                lambda: self.api.create(resource, doc.body, self.namespace)
            )
        result.status, result.message, result.latency = status, message[:2000], latency
        result.outcome = ACCEPTED if status < 300 else classify(status, reason, message)
        if doc.family == "runtime" and result.outcome == ACCEPTED:
            result.name = None  # nothing to check unless its job is created
            if doc.then is not None:
                await self._then(doc.then, result)
        return result

    async def _then(self, job: dict[str, Any], result: Result) -> None:
        """The short job made from the runtime ``result`` stored: created, it is what is checked."""
        status, reason, message, _s = await self._answer(
            lambda: self.api.create(RESOURCES["v1beta1"], job, self.namespace)
        )
        if status < 300:
            result.name = job["metadata"]["name"]
            return
        outcome = classify(status, reason, message)
        result.detail["job_refused"] = message[:1000]
        if outcome != REJECTED_WITH_PATH:  # the job's answer is the document's
            result.outcome, result.status = outcome, status
            result.message = f"the runtime was stored; its short job: {message}"[:2000]

    async def check(self, result: Result) -> None:
        """Does the accepted job get every pod and Service it should? Then delete it."""
        try:
            await self._check(result)
        except Exception as e:  # the instrument must report, not crash
            result.outcome = ACCEPTED_UNRUNNABLE
            result.message = f"checking it failed: {type(e).__name__}: {e}"[:2000]
        finally:
            if result.name is not None:
                with contextlib.suppress(client.ApiError):
                    await self.api.delete(RESOURCES["v1beta1"], result.name, self.namespace)
                # Its pods too, at once: the garbage collector (20 requests a second) falls behind
                # thousands of jobs, and their pods would fill the nodes for the jobs after them.
                with contextlib.suppress(client.ApiError):
                    await self.api.request(
                        "DELETE",
                        client.PODS,
                        namespace=self.namespace,
                        params={"labelSelector": f"{naming.JOB_NAME}={result.name}"},
                    )
            await self.forget_runtimes(result)
            self.checking.release()

    async def forget_runtimes(self, result: Result) -> None:
        """Delete the runtimes the document wrote (jobs made from them keep what they took)."""
        for name in result.runtimes:
            with contextlib.suppress(client.ApiError):
                await self.api.delete(client.TRAINING_RUNTIMES, name, self.namespace)

    async def _check(self, result: Result) -> None:
        name = result.name
        if name is None:
            if result.family == "runtime":
                return  # a runtime stored, whose job was refused (or it has none): nothing runs
            raise ValueError("created without a name")
        beta = RESOURCES["v1beta1"]
        try:
            stored = await self.api.get(beta, name, self.namespace)
        except client.ApiError as e:
            result.outcome = ACCEPTED_UNRUNNABLE
            result.message = f"cannot be read back as v1beta1: {e}"[:2000]
            return
        try:
            pods, services, idle = expected_objects(stored)
        except Exception as e:
            result.outcome = ACCEPTED_UNRUNNABLE
            result.message = f"the stored job does not render: {type(e).__name__}: {e}"[:2000]
            return
        if idle is not None:
            result.idle = True
            result.detail["idle"] = idle
            return
        deadline = time.monotonic() + self.timeout
        why, looked = "", time.monotonic()
        while True:
            missing = (pods - self.seen.names["Pod"]) | (services - self.seen.names["Service"])
            if not missing:
                return
            failed = [
                e
                for e in self.seen.events.get(name, {}).values()
                if e["reason"] == "FailedCreate" and e["count"] >= 2
            ]
            if failed:
                why = "FailedCreate, repeated"
                break
            now = time.monotonic()
            if now > deadline:
                # What is missing may wait for the job's other pods to be Ready (an MPI launcher),
                # and those may have waited for room on the nodes: while some are not Ready yet,
                # or became Ready less than `grace` ago, wait on, up to a second timeout.
                present = pods & self.seen.names["Pod"]
                ready = [self.seen.ready_at.get(p) for p in present]
                all_ready = [t for t in ready if t is not None]
                settling = bool(present) and (
                    len(all_ready) < len(ready) or now < max(all_ready) + self.grace
                )
                # Pods all Ready only lately (the nodes were full): what waits for them gets `grace`.
                lately = (
                    bool(all_ready) and len(all_ready) == len(ready) and now < max(all_ready) + self.grace
                )
                if not settling or (now > deadline + self.timeout and not lately):
                    late = (
                        f", {now - max(all_ready):.0f}s after its pods were all Ready"
                        if present and len(all_ready) == len(ready)
                        else ""
                    )
                    why = f"not all there after {now - deadline + self.timeout:.0f}s{late}"
                    break
            if time.monotonic() - looked > 3:  # a job that Failed will not make the rest
                looked = time.monotonic()
                job = await self._get_or_none(name)
                if job is not None and any(
                    c.get("type") == "Failed" and c.get("status") == "True"
                    for c in job.get("status", {}).get("conditions", [])
                ):
                    why = "the job Failed"
                    break
            self.seen.changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.seen.changed.wait(), 1.0)
        waiting = {p: m for p, m in self.seen.unschedulable.items() if p in pods}
        # A pod the scheduler could not place for a while, placed but not Ready yet: still waiting.
        waiting |= {
            p: self.seen.waited[p] for p in pods & self.seen.waited.keys() if p not in self.seen.ready_at
        }
        states = {p: self.seen.pod_state[p] for p in sorted(pods) if p in self.seen.pod_state}
        if waiting and why.startswith("not all there"):
            # Pods the scheduler cannot place yet (no node has what they ask for, or the nodes are
            # busy): a gated replica (an MPI launcher) then waits for them. Admitted and runnable
            # as far as admission can know; counted as accepted, with the reason kept.
            result.detail = {"missing": sorted(missing), "unschedulable": waiting, "pods": states}
            result.waiting = True
            return
        job = await self._get_or_none(name)
        conditions = [
            f"{c.get('type')}={c.get('status')} {c.get('reason', '')}: {c.get('message', '')}"[:300]
            for c in (job or {}).get("status", {}).get("conditions", [])
        ]
        events = [
            f"{e['type']} {e['reason']} x{e['count']}: {e['message']}"
            for e in self.seen.events.get(name, {}).values()
        ]
        result.outcome = ACCEPTED_UNRUNNABLE
        result.detail = {
            "missing": sorted(missing),
            "conditions": conditions,
            "events": events,
            "pods": states,
        }
        shown = (
            [e for e in events if e.startswith("Warning")][:1]
            or events[-1:]
            or conditions[:1]
            or ["no events"]
        )
        pods_now = "; ".join(f"{p}: {st}" for p, st in list(states.items())[:4]) or "none"
        result.message = f"{why}: missing {', '.join(sorted(missing)[:4])}; pods: {pods_now}; {shown[0]}"[
            :2000
        ]

    async def _get_or_none(self, name: str) -> dict[str, Any] | None:
        try:
            return dict(await self.api.get(RESOURCES["v1beta1"], name, self.namespace))
        except client.ApiError:
            return None

    async def list_alpha(self, stop: asyncio.Event) -> None:
        """A v1alpha1 LIST of the namespace every second, while documents exist."""
        while not stop.is_set():
            self.alpha_lists += 1
            try:
                await self.api.list(RESOURCES["v1alpha1"], self.namespace)
            except client.ApiError as e:
                if len(self.alpha_failures) < 50:
                    self.alpha_failures.append(str(e)[:1000])
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), 1.0)

    async def worker(self, docs: Iterator[Doc]) -> None:
        for doc in docs:  # one shared iterator: each document goes to one worker
            result = await self.create(doc)
            self.results.append(result)
            if result.outcome == ACCEPTED:
                await self.checking.acquire()
                task = asyncio.create_task(self.check(result))
                self.tasks.add(task)
                task.add_done_callback(self.tasks.discard)
            else:
                await self.forget_runtimes(result)
            if self.progress and len(self.results) % 500 == 0:
                c = collections.Counter(r.outcome for r in self.results)
                self.progress(
                    f"  {len(self.results)} documents: " + ", ".join(f"{k} {n}" for k, n in c.items())
                )

    async def run(self, docs: Iterable[Doc]) -> None:
        watches = [
            asyncio.create_task(self.seen.watch(self.api, r, self.namespace))
            for r in (client.PODS, client.SERVICES, client.EVENTS)
        ]
        stop = asyncio.Event()
        lister = asyncio.create_task(self.list_alpha(stop))
        try:
            shared = iter(docs)
            await asyncio.gather(*(self.worker(shared) for _ in range(self.concurrency)))
            while self.tasks:
                await asyncio.gather(*list(self.tasks))
        finally:
            stop.set()
            await lister
            for w in watches:
                w.cancel()
            for w in watches:
                with contextlib.suppress(asyncio.CancelledError):
                    await w


async def run_async(
    kubeconfig: pathlib.Path,
    namespace: str,
    docs: Iterable[Doc],
    *,
    concurrency: int = 8,
    checks: int = 16,
    timeout: float = 30.0,
    progress: Callable[[str], None] | None = None,
) -> tuple[list[Result], int, list[str], int]:
    api = await client.Client.connect(str(kubeconfig), qps=1e6, burst=1_000_000, timeout=60)
    try:
        runner = Runner(
            api, namespace, concurrency=concurrency, checks=checks, timeout=timeout, progress=progress
        )
        await runner.run(docs)
    finally:
        await api.close()  # else aiohttp warns of an unclosed connector at exit
    results = sorted(runner.results, key=lambda r: r.index)
    return results, runner.alpha_lists, runner.alpha_failures, runner.seen.peak


def run(
    d: Deployment,
    namespace: str,
    docs: Iterable[Doc],
    *,
    concurrency: int = 8,
    checks: int = 16,
    timeout: float = 30.0,
    progress: Callable[[str], None] | None = None,
) -> Report:
    """Send ``docs`` into ``namespace`` of the deployment ``d``; the report."""
    started = time.perf_counter()
    results, lists, list_failures, peak = asyncio.run(
        run_async(
            d.kubeconfig,
            namespace,
            docs,
            concurrency=concurrency,
            checks=checks,
            timeout=timeout,
            progress=progress,
        )
    )
    seconds = time.perf_counter() - started
    tracebacks, ends = count_tracebacks(d.manager.log)
    return Report(
        results=results,
        seconds=seconds,
        tracebacks=tracebacks,
        traceback_lines=ends,
        alpha_lists=lists,
        alpha_list_failures=list_failures,
        manager_alive=d.manager.alive(),
        peak_pods=peak,
    )
