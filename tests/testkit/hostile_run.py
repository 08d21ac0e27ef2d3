"""Hostile documents through the real apiserver, with kubetrain's webhooks deployed; what happened.

:func:`deployment` starts a cluster of its own with kwok nodes and ``config/default``
applied, the manager serving the conversion and validating webhooks as a local process
(its ServiceAccount's token, ``--webhook-self-signed``), exactly as the e2e deploy test
builds it. :func:`run` sends each :class:`~testkit.hostile.Doc` with a ``create`` (POST)
to its version's endpoint and puts it in one class:

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

Accepted jobs are deleted once checked. Meanwhile a v1alpha1 LIST of the namespace runs
every second (one bad stored object once broke every such list); at the end the manager's
log is searched for Python tracebacks.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import dataclasses
import json
import pathlib
import re
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from kubetrain.api import scheme
from kubetrain.devcluster import cluster as devcluster
from kubetrain.devcluster import deploy, process
from kubetrain.operator import render
from kubetrain.operator.frameworks import registry
from kubetrain.operator.runtime import client
from testkit import operator
from testkit.hostile import Doc
from testkit.kube import eventually

ROOT = pathlib.Path(__file__).resolve().parents[2]
GROUP = "training.kubetrain.dev"
RESOURCES = {
    "v1beta1": client.Resource(GROUP, "v1beta1", "trainingjobs", "TrainingJob"),
    "v1alpha1": client.Resource(GROUP, "v1alpha1", "trainingjobs", "TrainingJob"),
}
ALPHA = "trainingjobs.v1alpha1.training.kubetrain.dev"
MANAGER = "kubetrain.dev/operator"

REJECTED_WITH_PATH = "rejected_with_path"
REJECTED_WITHOUT_PATH = "rejected_without_path"
ACCEPTED = "accepted"
ACCEPTED_UNRUNNABLE = "accepted_unrunnable"
SERVER_ERROR = "server_error"
CLASSES = (REJECTED_WITH_PATH, REJECTED_WITHOUT_PATH, ACCEPTED, ACCEPTED_UNRUNNABLE, SERVER_ERROR)
# A field path in a message: spec.…, metadata.…, or (the apiserver's own JSON decoding, before any
# validation) "Go struct field ObjectMeta.name".
FIELD_PATH = re.compile(r"\b(spec|metadata)(\.|\[|:)|Go struct field \w+\.\w+")
TRACEBACK = "Traceback (most recent call last)"


# --- a deployment of its own -------------------------------------------------------------------------


@dataclasses.dataclass
class Deployment:
    cluster: devcluster.Cluster
    manager: process.Process

    @property
    def kubeconfig(self) -> pathlib.Path:
        return self.cluster.kubeconfig

    def namespace(self, name: str) -> str:
        """A namespace where pods can be made (its default ServiceAccount exists)."""
        self.cluster.kubectl("create", "namespace", name)
        self.cluster.kubectl("wait", "--for=create", "--timeout=60s", "serviceaccount/default", "-n", name)
        return name


@contextlib.contextmanager
def deployment(nodes: int = 2, manager_flags: Iterable[str] = ()) -> Iterator[Deployment]:
    """A cluster with kwok nodes and ``config/default``, as tests/e2e/test_deploy.py deploys it.

    The overlay's optional parts (cert-manager, Prometheus Operator) are left out; the manager
    runs locally with the Deployment's ServiceAccount and serves the webhooks on 127.0.0.1.
    """
    work = pathlib.Path(tempfile.mkdtemp(prefix="kubetrain-hostile-"))
    c = devcluster.start(devcluster.Tier.CLUSTER, nodes=nodes)
    try:
        c.kubectl("create", "namespace", deploy.NAMESPACE)
        deploy.apply(c, deploy.overlay(c, ROOT / "config"))
        port = process.free_port()
        deploy.point_webhooks_at(c, f"https://127.0.0.1:{port}")
        kubeconfig = deploy.service_account_kubeconfig(c, work / "manager.kubeconfig")
        manager = operator.start(
            c, None, *deploy.manager_flags(kubeconfig, work / "certs", port), *manager_flags
        )
        try:
            eventually(
                "TrainingJobs to be served through the conversion webhook",
                lambda: c.kubectl("get", ALPHA, "-A", check=False).returncode == 0,
                timeout=60,
            )
            yield Deployment(c, manager)
        finally:
            manager.stop()
    finally:
        c.stop()
        shutil.rmtree(work, ignore_errors=True)


# --- results ------------------------------------------------------------------------------------------


@dataclasses.dataclass
class Result:
    index: int
    name: str | None
    version: str
    sample: str
    kinds: tuple[str, ...]
    label: str
    outcome: str
    status: int | None  # the create's HTTP status (201 when created; None: no answer)
    message: str  # the apiserver's message, or for accepted_unrunnable what was wrong
    latency: float  # seconds the create call took
    idle: bool = False  # accepted, and nothing to run (suspended, managed elsewhere)
    waiting: bool = False  # accepted, but objects still missing behind pods the scheduler cannot place
    detail: dict[str, Any] = dataclasses.field(default_factory=dict)


def percentile(values: list[float], q: int) -> float:
    if not values:
        return 0.0
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(sorted(values), n=100, method="inclusive")[q - 1]


@dataclasses.dataclass
class Report:
    results: list[Result]
    seconds: float
    tracebacks: int
    traceback_lines: list[str]  # the last line of each distinct traceback
    alpha_lists: int
    alpha_list_failures: list[str]
    manager_alive: bool

    def counts(self, results: Iterable[Result] | None = None) -> dict[str, int]:
        got = collections.Counter(r.outcome for r in (self.results if results is None else results))
        return {k: got.get(k, 0) for k in CLASSES}

    @property
    def alpha_list_failed(self) -> bool:
        return bool(self.alpha_list_failures)

    def failures(self) -> list[Result]:
        return [r for r in self.results if r.outcome in (ACCEPTED_UNRUNNABLE, SERVER_ERROR)]

    def ok(self) -> bool:
        c = self.counts()
        return (
            c[ACCEPTED_UNRUNNABLE] == 0
            and c[SERVER_ERROR] == 0
            and self.tracebacks == 0
            and not self.alpha_list_failed
            and self.manager_alive
        )

    def summary(self) -> dict[str, Any]:
        """The figures, as JSON-ready data."""
        latencies = [r.latency for r in self.results]
        return {
            "documents": len(self.results),
            "seconds": round(self.seconds, 1),
            "counts": self.counts(),
            "idle": sum(r.idle for r in self.results),
            "waiting_on_scheduler": sum(r.waiting for r in self.results),
            "tracebacks": self.tracebacks,
            "alpha_lists": self.alpha_lists,
            "alpha_list_failures": len(self.alpha_list_failures),
            "manager_alive": self.manager_alive,
            "latency_p50_ms": round(percentile(latencies, 50) * 1000, 1),
            "latency_p99_ms": round(percentile(latencies, 99) * 1000, 1),
        }

    def format(self, top: int = 12) -> str:
        """The report as text: classes, versions, mutation kinds, latencies, and every kind of failure."""
        s = self.summary()
        out = [
            f"{s['documents']} documents in {self.seconds:.1f}s "
            f"({s['documents'] / max(self.seconds, 1e-9):.1f}/s); "
            f"create latency p50 {s['latency_p50_ms']} ms, p99 {s['latency_p99_ms']} ms",
            "",
            "outcome                   count",
        ]
        for k, n in s["counts"].items():
            note = f"  ({s['idle']} idle, {s['waiting_on_scheduler']} waiting on the scheduler)"
            out.append(f"  {k:<23} {n:>5}" + (note if k == ACCEPTED else ""))
        out += [
            f"  {'operator tracebacks':<23} {self.tracebacks:>5}",
            f"  {'v1alpha1 LIST failed':<23} {len(self.alpha_list_failures):>5}  of {self.alpha_lists} lists",
            f"  {'manager alive':<23} {'yes' if self.manager_alive else 'NO':>5}",
            "",
            self._table("version", lambda r: [r.version]),
            "",
            self._table("sample", lambda r: [r.sample]),
            "",
            self._table("mutation kind", lambda r: list(r.kinds) or ["(unmutated)"]),
        ]
        lat = collections.defaultdict(list)
        for r in self.results:
            lat[r.outcome].append(r.latency)
        out += ["", "create latency by outcome (ms): p50 / p99"]
        out += [
            f"  {k:<23} {percentile(v, 50) * 1000:8.1f} / {percentile(v, 99) * 1000:8.1f}"
            for k, v in sorted(lat.items())
        ]
        rejections = collections.Counter(
            normalize(r.message) for r in self.results if r.outcome.startswith("rejected")
        )
        out += ["", f"top {top} rejection messages (names and numbers masked)"]
        out += [f"  {n:>5}  {m[:160]}" for m, n in rejections.most_common(top)]
        per_kind: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
        for r in self.results:
            if r.outcome.startswith("rejected"):
                for k in r.kinds:
                    per_kind[k][normalize(r.message)] += 1
        out += ["", "most common rejection per mutation kind"]
        for k, msgs in sorted(per_kind.items()):
            m, n = msgs.most_common(1)[0]
            out.append(f"  {k:<20} {n:>5}/{sum(msgs.values()):<5} {m[:150]}")
        for outcome in (ACCEPTED_UNRUNNABLE, SERVER_ERROR, REJECTED_WITHOUT_PATH):
            bad = [r for r in self.results if r.outcome == outcome]
            if not bad:
                continue
            out += ["", f"{outcome}: {len(bad)}, by mutation kind (one example each)"]
            by_kind: dict[str, list[Result]] = collections.defaultdict(list)
            for r in bad:
                for k in r.kinds or ("(unmutated)",):
                    by_kind[k].append(r)
            for k, rs in sorted(by_kind.items(), key=lambda kv: -len(kv[1])):
                e = rs[0]
                out.append(f"  {k:<20} {len(rs):>5}  e.g. #{e.index} {e.sample}: {e.label[:140]}")
                out.append(f"  {'':<27}-> {e.message[:300]}")
        waiting = [r for r in self.results if r.waiting]
        if waiting:
            reasons = collections.Counter(
                normalize(m) for r in waiting for m in set(r.detail.get("unschedulable", {}).values())
            )
            samples = collections.Counter(r.sample for r in waiting)
            out += ["", f"accepted, waiting on the scheduler: {len(waiting)} (by sample: "]
            out[-1] += ", ".join(f"{k} {n}" for k, n in samples.most_common()) + ")"
            out += [f"  {n:>5}  {m[:200]}" for m, n in reasons.most_common(5)]
        if self.traceback_lines:
            out += ["", "manager tracebacks end with:"] + [f"  {t[:200]}" for t in self.traceback_lines[:10]]
        if self.alpha_list_failures:
            out += ["", "v1alpha1 LIST failures:"] + [f"  {m[:300]}" for m in self.alpha_list_failures[:5]]
        return "\n".join(out)

    def _table(self, title: str, keys: Callable[[Result], list[str]]) -> str:
        rows: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
        for r in self.results:
            for k in keys(r):
                rows[k][r.outcome] += 1
                rows[k]["docs"] += 1
        short = {
            REJECTED_WITH_PATH: "rej+path",
            REJECTED_WITHOUT_PATH: "rej-path",
            ACCEPTED: "accepted",
            ACCEPTED_UNRUNNABLE: "unrunnable",
            SERVER_ERROR: "5xx",
        }
        head = f"{title:<24} {'docs':>6}" + "".join(f" {short[c]:>10}" for c in CLASSES)
        lines = [head]
        for k, row in sorted(rows.items(), key=lambda kv: -kv[1]["docs"]):
            lines.append(f"  {k[:22]:<22} {row['docs']:>6}" + "".join(f" {row[c]:>10}" for c in CLASSES))
        return "\n".join(lines)


def normalize(message: str) -> str:
    """A rejection message with document names, quoted values and numbers masked, to group alike ones."""
    m = re.sub(r'"h\d{5,}[^"]*"', '"NAME"', message)
    m = re.sub(r"h\d{5,}-[a-z0-9-]*", "NAME", m)
    m = re.sub(r"\d+", "N", m)
    return m[:400]


def classify(status: int, reason: str, message: str) -> str:
    if status >= 500 or reason == "InternalError" or "failed calling webhook" in message:
        return SERVER_ERROR
    if FIELD_PATH.search(message):
        return REJECTED_WITH_PATH
    return REJECTED_WITHOUT_PATH


def count_tracebacks(log: pathlib.Path | None) -> tuple[int, list[str]]:
    """How many tracebacks the log holds, and the distinct last lines of them."""
    if log is None or not log.exists():
        return 0, []
    lines = log.read_text(errors="replace").splitlines()
    count, ends = 0, []
    for i, line in enumerate(lines):
        if TRACEBACK in line:
            count += 1
            # The exception line: the first line after the traceback that is not indented.
            end = next((x for x in lines[i + 1 : i + 400] if x and not x.startswith((" ", "\t"))), "")
            if end and end not in ends:
                ends.append(end)
    return count, ends


# --- watching what the jobs make ----------------------------------------------------------------------


class Seen:
    """Every pod and Service name ever seen in the namespace, and every job's events."""

    def __init__(self) -> None:
        self.names: dict[str, set[str]] = {"Pod": set(), "Service": set()}
        self.unschedulable: dict[str, str] = {}  # pod name -> the scheduler's message, while Pending
        self.pod_state: dict[str, str] = {}  # pod name -> "Running, Ready" and the like, as last seen
        self.ready_at: dict[str, float] = {}  # pod name -> when it was first seen Ready (monotonic)
        self.events: dict[str, dict[str, dict[str, Any]]] = collections.defaultdict(dict)
        self.changed = asyncio.Event()

    def note(self, kind: str, obj: dict[str, Any]) -> None:
        meta = obj.get("metadata", {})
        if kind == "Event":
            involved = obj.get("involvedObject", {})
            if involved.get("kind") == "TrainingJob":
                self.events[involved.get("name", "")][meta.get("name", "")] = {
                    "type": obj.get("type"),
                    "reason": obj.get("reason"),
                    "message": str(obj.get("message", ""))[:500],
                    "count": obj.get("count", 1) or 1,
                }
        else:
            name = meta.get("name", "")
            self.names[kind].add(name)
            if kind == "Pod":
                refused = [
                    c
                    for c in obj.get("status", {}).get("conditions", [])
                    if c.get("type") == "PodScheduled" and c.get("reason") == "Unschedulable"
                ]
                if refused:
                    self.unschedulable[name] = str(refused[0].get("message", ""))[:300]
                else:
                    self.unschedulable.pop(name, None)
                status = obj.get("status", {})
                ready = any(
                    c.get("type") == "Ready" and c.get("status") == "True"
                    for c in status.get("conditions", [])
                )
                if ready:
                    self.ready_at.setdefault(name, time.monotonic())
                gone = " (deleting)" if meta.get("deletionTimestamp") else ""
                self.pod_state[name] = (
                    f"{status.get('phase', '?')}, {'Ready' if ready else 'not Ready'}{gone}"
                )
        self.changed.set()

    async def watch(self, api: client.Client, resource: client.Resource, namespace: str) -> None:
        """List, then watch, ``resource`` forever (relisting when the watch ends or expires)."""
        while True:
            try:
                listed = await api.list(resource, namespace)
                for obj in listed["items"]:
                    self.note(resource.kind, obj)
                rv = listed["metadata"]["resourceVersion"]
                while True:
                    params = {"watch": "1", "resourceVersion": rv, "allowWatchBookmarks": "true"}
                    params["timeoutSeconds"] = "300"
                    async for ev in api.stream(
                        resource, namespace=namespace, params=params, read_timeout=400
                    ):
                        if ev["type"] == "ERROR":
                            raise client.ApiError(int(ev["object"].get("code", 0)), "Expired", "watch error")
                        rv = ev["object"]["metadata"]["resourceVersion"]
                        if ev["type"] in ("ADDED", "MODIFIED"):
                            self.note(resource.kind, ev["object"])
            except client.ApiError:
                await asyncio.sleep(0.5)


def expected_objects(stored: dict[str, Any]) -> tuple[set[str], set[str], str | None]:
    """(pod names, Service names, why it is idle or None) the operator should make for ``stored``."""
    hub = scheme.to_hub(scheme.decode(stored))
    managed_by = hub.spec.run_policy.managed_by
    if hub.spec.run_policy.suspend:
        return set(), set(), "suspended"
    if managed_by not in (None, MANAGER):
        return set(), set(), f"managed by {managed_by}"
    objects = render.render(hub, registry.default().get(hub.spec.framework.name))
    pods = {o["metadata"]["name"] for o in objects if o["kind"] == "Pod"}
    services = {o["metadata"]["name"] for o in objects if o["kind"] == "Service"}
    want = sum(r.replicas for r in hub.spec.replica_specs.values())
    if len(pods) != want:
        raise AssertionError(f"renders {len(pods)} pods for {want} replicas")
    return pods, services, None


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

    async def create(self, doc: Doc) -> Result:
        resource = RESOURCES[doc.version]
        status, reason, message = 201, "", ""
        started = time.perf_counter()
        for attempt in range(6):
            try:
                await self.api.create(resource, doc.body, self.namespace)
                status = 201
            except client.ApiError as e:
                status, reason, message = e.status, e.reason, e.message
                if e.status == 429 and attempt < 5:  # the apiserver is busy: not an answer about the document
                    await asyncio.sleep(0.5 * 2**attempt)
                    started = time.perf_counter()
                    continue
            break
        latency = time.perf_counter() - started
        outcome = ACCEPTED if status < 300 else classify(status, reason, message)
        return Result(
            index=doc.index,
            name=doc.name,
            version=doc.version,
            sample=doc.sample,
            kinds=doc.kinds,
            label=doc.label,
            outcome=outcome,
            status=status,
            message=message[:2000],
            latency=latency,
        )

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
            self.checking.release()

    async def _check(self, result: Result) -> None:
        name = result.name
        if name is None:
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
                if not settling or now > deadline + self.timeout:
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
) -> tuple[list[Result], int, list[str]]:
    api = await client.Client.connect(str(kubeconfig), qps=1e6, burst=1_000_000, timeout=60)
    runner = Runner(
        api, namespace, concurrency=concurrency, checks=checks, timeout=timeout, progress=progress
    )
    await runner.run(docs)
    return sorted(runner.results, key=lambda r: r.index), runner.alpha_lists, runner.alpha_failures


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
    results, lists, list_failures = asyncio.run(
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
    )


def to_json(report: Report) -> str:
    return json.dumps(
        {
            "summary": report.summary(),
            "failures": [dataclasses.asdict(r) for r in report.failures()],
            "waiting_on_scheduler": [dataclasses.asdict(r) for r in report.results if r.waiting],
            "tracebacks": report.traceback_lines,
            "alpha_list_failures": report.alpha_list_failures,
        },
        indent=1,
    )
