"""End-to-end benchmark: N TrainingJobs from create to Running, against a plain-client lower bound.

    make bench-jobs       # or: python -P bench/jobs_bench.py [--jobs 500 --replicas 4 --nodes 24]
    make bench-jobs BENCH_ARGS="--audit --json"     # see --help for the rest

Starts the local control plane with kwok fake nodes (kube-scheduler binds pods, kwok makes
them Running), installs the TrainingJob CRD, and runs two phases, each in its own
namespace, which is deleted (and drained of pods) before the next phase starts:

1. **Plain client (the lower bound).** No operator. The benchmark itself creates
   jobs x replicas bare pods with the same concurrency it uses for jobs, and times them
   from the first create until every pod's phase is Running. No operator can beat this:
   it has to make at least these pods, through the same apiserver, scheduler and kwok.
2. **Operator.** ``kubetrain-operator`` runs as a separate process (``--kube-api-qps``
   and ``--kube-api-burst`` from ``--qps``/``--burst``), and the benchmark creates the
   TrainingJobs (one Master, replicas - 1 Workers each) and times them from the first
   create until every job's ``.status.state`` is Running. ``--also-default-limits``
   repeats this phase with the operator's own defaults (20 QPS, burst 30).

Per-object latencies (create sent → Running seen on the benchmark's watch) give p50/p95.
The ratio of the two wall times says how far the operator is from the floor.

**API requests per job.** ``apiserver_request_total`` is scraped before the first create
and again once every job is Running plus ``--settle`` seconds (trailing status patches and
Events), and the delta is split by (verb, group, resource, subresource). The metric has no
user or client label, so requests are attributed by what they touch:

- kube-scheduler: ``pods/binding`` creates and ``events.k8s.io`` Events;
- kwok (the fake kubelet): ``pods/status`` and ``nodes/status``;
- the benchmark: its TrainingJob creates and its own list/watch, which it counts itself
  and subtracts exactly;
- the operator: every other *write* to pods, services, configmaps, core/v1 Events and
  TrainingJobs (creates, status patches, ...): nothing else here writes those while jobs
  start.
- reads (GET/LIST/WATCH) of those resources, and of nodes, are shown as "operator?": they
  may be the operator's, or a controller's — the garbage collector GETs owners and
  dependents, for one — so the operator's figure is its writes, plus at most these reads.
  WATCH requests are counted by the apiserver when they *end*: a watch still open is not
  in the delta.
- anything else (leases, non-resource URLs such as /metrics, ...) is "other".

``--audit`` makes the attribution exact: the apiserver writes an audit log (metadata
level), the operator and the benchmark connect as users of their own, and the
control-plane components are told apart by user agent. Both tables are then printed.
Between phases the benchmark waits until the previous namespace is gone and the
apiserver is quiet, so that its garbage collection does not spill into the next window.

At the end of each operator phase the benchmark reads the operator's peak RSS (VmHWM) and
CPU time (utime + stime) from /proc, and its reconcile count from its /metrics; it also
reports the CPU time each control-plane process spent in the phase, since they all share
this machine's cores.

If the jobs are not all Running within ``--timeout`` seconds, the benchmark prints what it
measured so far, says how many jobs got there, and exits with status 1.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import collections
import contextlib
import json
import math
import os
import pathlib
import shutil
import signal
import statistics
import sys
import tempfile
import time
import urllib.request
import warnings
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import yaml
from prometheus_client.parser import text_string_to_metric_families

from kubetrain.devcluster import cluster as devcluster
from kubetrain.devcluster import kwok, process
from kubetrain.operator import pki
from kubetrain.operator.runtime import client

# kr8s 0.20 knows Kubernetes up to 1.35; the local control plane runs 1.36.
warnings.filterwarnings("ignore", message="Kubernetes version .* is not supported")

LABEL = "training.kubetrain.dev/job-name"
PLAIN_NAMESPACE = "bench-plain"
JOBS_NAMESPACE = "bench"
OPERATOR_USER = "kubetrain-bench-operator"
BENCH_USER = "kubetrain-bench"
OPERATOR_DEFAULT_LIMITS = (20.0, 30)  # kubetrain-operator's --kube-api-qps and --kube-api-burst defaults
NAMESPACES = client.Resource("", "v1", "namespaces", "Namespace", namespaced=False)
SERVICEACCOUNTS = client.Resource("", "v1", "serviceaccounts", "ServiceAccount")
AUDIT_POLICY = """\
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Metadata
"""

Obj = dict[str, Any]
RowKey = tuple[str, str, str, str]  # verb, group, resource, subresource (as apiserver_request_total has them)


class BenchTimeoutError(RuntimeError):
    """Not everything reached its state in time; ``partial`` holds how far it got."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.partial: dict[str, Any] = {}


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# --- measuring -------------------------------------------------------------------------------------


def proc_figures(pid: int) -> dict[str, float]:
    """CPU seconds (utime + stime), peak and current RSS of a live process."""
    status = pathlib.Path(f"/proc/{pid}/status").read_text()
    kib = {line.split(":")[0]: int(line.split()[1]) for line in status.splitlines() if line.startswith("Vm")}
    # Fields after the parenthesised command name: state is the first, utime the 12th, stime the 13th.
    fields = pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return {
        "cpu_seconds": (int(fields[11]) + int(fields[12])) / ticks,
        "peak_rss_mib": kib.get("VmHWM", 0) / 1024,
        "rss_mib": kib.get("VmRSS", 0) / 1024,
    }


def control_plane_cpu(c: devcluster.Cluster) -> dict[str, float]:
    """CPU seconds so far of every control-plane process, and of this benchmark (it shares the cores)."""
    out = {}
    for p in c.processes:
        if p.pid is not None and p.alive():
            out[p.name] = proc_figures(p.pid)["cpu_seconds"]
    me = os.times()
    out["benchmark"] = me.user + me.system
    return out


def request_totals(c: devcluster.Cluster) -> dict[tuple[str, str, str, str, str], float]:
    """apiserver_request_total by (verb, group, resource, subresource, code)."""
    text = c.kubectl("get", "--raw", "/metrics").stdout
    totals: dict[tuple[str, str, str, str, str], float] = collections.defaultdict(float)
    for family in text_string_to_metric_families(text):
        if family.name != "apiserver_request":
            continue
        for s in family.samples:
            if s.name != "apiserver_request_total":
                continue
            lb = s.labels
            key = (
                lb["verb"],
                lb.get("group", ""),
                lb.get("resource", ""),
                lb.get("subresource", ""),
                lb["code"],
            )
            totals[key] += s.value
    return totals


def attribute(verb: str, group: str, resource: str, subresource: str) -> str:
    """Who, in this cluster, makes requests like these ("operator?": the operator or a controller)."""
    read = verb in ("GET", "LIST", "WATCH")
    if group == "events.k8s.io":
        return "scheduler"
    if group == "" and resource == "pods" and subresource == "binding":
        return "scheduler"
    if group == "" and resource in ("nodes", "pods") and subresource == "status":
        return "kwok"
    if group == "scheduling.k8s.io" and resource == "podgroups":  # the operator's gangs
        return "scheduler" if subresource == "status" else "operator?" if read else "operator"
    if (group == "" and resource in ("pods", "services", "configmaps", "events", "nodes")) or (
        group == "training.kubetrain.dev" and resource == "trainingjobs"
    ):
        return "operator?" if read else "operator" if resource != "nodes" else "other"
    return "other"


def request_rows(
    before: Mapping[tuple[str, str, str, str, str], float],
    after: Mapping[tuple[str, str, str, str, str], float],
    own: Mapping[RowKey, int],
) -> list[dict[str, Any]]:
    """The delta by (verb, group, resource, subresource), attributed; the benchmark's own requests split off."""
    count: dict[RowKey, float] = collections.defaultdict(float)
    failed: dict[RowKey, dict[str, float]] = collections.defaultdict(dict)
    for labels, value in after.items():
        delta = value - before.get(labels, 0.0)
        if delta <= 0:
            continue
        verb, group, resource, subresource, code = labels
        count[verb, group, resource, subresource] += delta
        if not code.startswith("2"):
            failed[verb, group, resource, subresource][code] = delta
    rows: list[dict[str, Any]] = []
    for key, n in count.items():
        mine = min(float(own.get(key, 0)), n)
        if mine:
            rows.append({"who": "benchmark", "key": key, "count": mine, "codes": {}})
        if n - mine > 0:
            rows.append({"who": attribute(*key), "key": key, "count": n - mine, "codes": failed[key]})
    order = {"operator": 0, "operator?": 1, "scheduler": 2, "kwok": 3, "benchmark": 4, "other": 5}
    rows.sort(key=lambda r: (order[r["who"]], -r["count"]))
    return rows


def audit_rows(path: pathlib.Path, offset: int) -> list[dict[str, Any]]:
    """Requests in the audit log since ``offset``, exactly attributed by user, else by user agent."""
    counts: dict[tuple[str, str, str], int] = collections.Counter()
    seen: set[str] = set()
    with path.open("rb") as f:
        f.seek(offset)
        for line in f:
            try:
                ev = json.loads(line)
            except json.JSONDecodeError:  # a line still being written
                continue
            if ev.get("auditID") in seen:  # a watch logs ResponseStarted, then ResponseComplete
                continue
            seen.add(ev.get("auditID"))
            user = ev.get("user", {}).get("username", "")
            if user == OPERATOR_USER:
                who = "operator"
            elif user == BENCH_USER:
                who = "benchmark"
            else:
                who = (ev.get("userAgent") or "?").split("/")[0]
            ref = ev.get("objectRef") or {}
            if "resource" in ref:
                resource = ref["resource"] + (f".{ref['apiGroup']}" if ref.get("apiGroup") else "")
                resource += f"/{ref['subresource']}" if ref.get("subresource") else ""
            else:  # a non-resource URL
                resource = ev.get("requestURI", "?").split("?")[0]
            counts[who, ev.get("verb", "?"), resource] += 1
    order = {"operator": 0, "kube-scheduler": 1, "kwok": 2, "benchmark": 3}
    rows: list[dict[str, Any]] = [
        {"who": who, "verb": verb, "resource": resource, "count": n}
        for (who, verb, resource), n in counts.items()
    ]
    rows.sort(key=lambda r: (order.get(r["who"], 9), r["who"], -r["count"]))
    return rows


def percentiles(latencies: Iterable[float]) -> dict[str, float]:
    values = sorted(latencies)
    if not values:
        return {}
    q = statistics.quantiles(values, n=100, method="inclusive") if len(values) > 1 else values * 99
    return {"p50": q[49], "p95": q[94], "max": values[-1]}


# --- the cluster side ------------------------------------------------------------------------------


def user_kubeconfig(c: devcluster.Cluster, user: str, path: pathlib.Path) -> pathlib.Path:
    """A kubeconfig like the admin's, but with a client certificate of its own (for the audit log)."""
    pki_dir = c.workdir / "pki"
    ca = pki.KeyPair((pki_dir / "ca.crt").read_bytes(), (pki_dir / "ca.key").read_bytes())
    pair = pki.issue(ca, user, organizations=("system:masters",), client=True)
    config = yaml.safe_load(c.kubeconfig.read_text())
    config["users"][0]["user"] = {
        "client-certificate-data": base64.b64encode(pair.cert_pem).decode(),
        "client-key-data": base64.b64encode(pair.key_pem).decode(),
    }
    path.write_text(yaml.safe_dump(config))
    path.chmod(0o600)
    return path


def operator_argv(
    kubeconfig: pathlib.Path, metrics_port: int, probe_port: int, qps: float, burst: int, gang_scheduler: str
) -> list[str]:
    script = pathlib.Path(sys.executable).parent / "kubetrain-operator"
    command = [str(script)] if script.exists() else [sys.executable, "-P", "-m", "kubetrain.operator"]
    return [
        *command,
        f"--kubeconfig={kubeconfig}",
        f"--metrics-bind-address=127.0.0.1:{metrics_port}",
        f"--health-probe-bind-address=127.0.0.1:{probe_port}",
        "--webhook-port=0",
        "--log-level=warning",
        f"--kube-api-qps={qps:g}",
        f"--kube-api-burst={burst}",
        f"--gang-scheduler={gang_scheduler}",
    ]


def start_operator(
    kubeconfig: pathlib.Path, log_path: pathlib.Path, qps: float, burst: int, gang_scheduler: str
) -> tuple[process.Process, int]:
    """Start kubetrain-operator and wait until its caches are synced (/readyz); returns it and its metrics port."""
    metrics_port, probe_port = process.free_port(), process.free_port()
    op = process.Process(
        "kubetrain-operator",
        operator_argv(kubeconfig, metrics_port, probe_port, qps, burst, gang_scheduler),
        log_path,
    )
    op.start()

    def ready() -> bool:
        with urllib.request.urlopen(f"http://127.0.0.1:{probe_port}/readyz", timeout=2) as r:
            return bool(r.status == 200)

    process.wait_until("kubetrain-operator to be ready", ready, timeout=60, watch=[op], interval=0.2)
    return op, metrics_port


def operator_reconciles(metrics_port: int) -> dict[str, float]:
    with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=5) as r:
        text = r.read().decode()
    out: dict[str, float] = collections.defaultdict(float)
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name == "controller_runtime_reconcile_total":
                out[s.labels.get("result", "?")] += s.value
    return dict(out)


# --- the client side -------------------------------------------------------------------------------


class Waiter:
    """List, then watch, ``names`` in a namespace; note when each first satisfies ``done``."""

    def __init__(
        self,
        api: client.Client,
        resource: client.Resource,
        namespace: str,
        names: Iterable[str],
        state: Callable[[Obj], str],
        done: str,
        own: collections.Counter[RowKey],
    ) -> None:
        self.api, self.resource, self.namespace = api, resource, namespace
        self.names = set(names)
        self.state, self.done = state, done
        self.own = own
        self.states: dict[str, str] = {}
        self.done_at: dict[str, float] = {}
        self.listed = asyncio.Event()
        self.all_done = asyncio.Event()

    def _key(self, verb: str) -> RowKey:
        return (verb, self.resource.group, self.resource.plural, "")

    def _see(self, obj: Obj, now: float) -> None:
        name = obj["metadata"]["name"]
        if name not in self.names:
            return
        state = self.state(obj)
        self.states[name] = state
        if state == self.done and name not in self.done_at:
            self.done_at[name] = now
            if len(self.done_at) == len(self.names):
                self.all_done.set()

    async def run(self) -> None:
        while True:
            try:
                self.own[self._key("LIST")] += 1
                listed = await self.api.list(self.resource, self.namespace)
                now = time.perf_counter()
                for obj in listed["items"]:
                    self._see(obj, now)
                self.listed.set()
                rv = listed["metadata"]["resourceVersion"]
                while True:
                    self.own[self._key("WATCH")] += 1
                    params = {
                        "watch": "1",
                        "resourceVersion": rv,
                        "allowWatchBookmarks": "true",
                        "timeoutSeconds": "300",
                    }
                    async for ev in self.api.stream(
                        self.resource, namespace=self.namespace, params=params, read_timeout=400
                    ):
                        if ev["type"] == "ERROR":  # 410 Gone, most likely: list again
                            raise client.ApiError(int(ev["object"].get("code", 0)), "Expired", "watch error")
                        rv = ev["object"]["metadata"]["resourceVersion"]
                        if ev["type"] in ("ADDED", "MODIFIED"):
                            self._see(ev["object"], time.perf_counter())
            except client.ApiError:
                await asyncio.sleep(0.2)

    def summary(self) -> str:
        counts = collections.Counter(self.states.get(n) or "(no state)" for n in self.names)
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


async def create_all(
    api: client.Client,
    resource: client.Resource,
    namespace: str,
    bodies: list[Obj],
    concurrency: int,
    own: collections.Counter[RowKey],
) -> dict[str, float]:
    """Create every object, ``concurrency`` at a time; returns when each create was sent."""
    sem = asyncio.Semaphore(concurrency)
    sent: dict[str, float] = {}

    async def one(body: Obj) -> None:
        async with sem:
            sent[body["metadata"]["name"]] = time.perf_counter()
            own["POST", resource.group, resource.plural, ""] += 1
            await api.create(resource, body, namespace)

    await asyncio.gather(*(one(b) for b in bodies))
    return sent


async def wait_all(
    waiter: Waiter,
    what: str,
    started: float,
    timeout: float,
    alive: Callable[[], None] = lambda: None,
) -> float:
    """Wait until every object is done; returns the time it happened, or raises BenchTimeoutError."""
    last_report = time.perf_counter()
    while not waiter.all_done.is_set():
        alive()
        now = time.perf_counter()
        if now - started > timeout:
            raise BenchTimeoutError(
                f"timed out after {timeout:.0f}s: only {len(waiter.done_at)} of {len(waiter.names)} "
                f"{what} reached {waiter.done} (states: {waiter.summary()})"
            )
        if now - last_report >= 10:
            last_report = now
            log(
                f"  {len(waiter.done_at)}/{len(waiter.names)} {what} {waiter.done} after {now - started:.0f}s"
            )
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(waiter.all_done.wait(), 1.0)
    return max(waiter.done_at.values())


def pod_body(name: str, image: str = "bench", labels: Mapping[str, str] | None = None) -> Obj:
    return {
        "metadata": {"name": name, "labels": dict(labels or {})},
        "spec": {"containers": [{"name": "pytorch", "image": image}]},
    }


def job_body(name: str, replicas: int) -> Obj:
    template = {"spec": {"containers": [{"name": "pytorch", "image": "bench"}]}}
    specs: Obj = {"Master": {"replicas": 1, "template": template}}
    if replicas > 1:
        specs["Worker"] = {"replicas": replicas - 1, "template": template}
    return {
        "apiVersion": "training.kubetrain.dev/v1beta1",
        "kind": "TrainingJob",
        "metadata": {"name": name},
        "spec": {"framework": {"name": "pytorch"}, "replicaSpecs": specs},
    }


async def run_creates(
    kubeconfig: pathlib.Path,
    resource: client.Resource,
    namespace: str,
    bodies: list[Obj],
    state: Callable[[Obj], str],
    done: str,
    what: str,
    args: argparse.Namespace,
    own: collections.Counter[RowKey],
    *,
    before: Callable[[], None] = lambda: None,
    after: Callable[[], None] = lambda: None,
    alive: Callable[[], None] = lambda: None,
    settle: float = 0.0,
) -> dict[str, Any]:
    """Create ``bodies`` and wait until all are ``done``; the timings as a dict (or BenchTimeoutError).

    ``before`` runs just before the first create, ``after`` once all are done and ``settle``
    seconds have passed, or at a timeout — both while this benchmark's own watch is open, so
    it is in neither scrape.
    """
    api = await client.Client.connect(str(kubeconfig), qps=1e6, burst=1_000_000, timeout=60)
    await ensure_namespace(api, namespace, own)
    names = [b["metadata"]["name"] for b in bodies]
    waiter = Waiter(api, resource, namespace, names, state, done, own)
    watch = asyncio.create_task(waiter.run())

    def check() -> None:
        alive()
        if watch.done():
            watch.result()  # raises what ended the watch
            raise RuntimeError("the benchmark's watch ended")

    try:
        await waiter.listed.wait()
        await asyncio.to_thread(before)
        started = time.perf_counter()
        sent = await create_all(api, resource, namespace, bodies, args.concurrency, own)
        created = time.perf_counter()
        log(f"  created {len(bodies)} {what} in {created - started:.1f}s")
        try:
            finished = await wait_all(waiter, what, started, args.timeout, check)
        except BenchTimeoutError as e:
            e.partial = {"count": len(bodies), "done": len(waiter.done_at), "states": waiter.summary()}
            await asyncio.to_thread(after)
            raise
        if settle:
            await asyncio.sleep(settle)
        await asyncio.to_thread(after)
        return {
            "count": len(bodies),
            "create_seconds": created - started,
            "seconds": finished - started,
            "per_second": len(bodies) / (finished - started),
            "latency": percentiles(waiter.done_at[n] - sent[n] for n in names),
        }
    finally:
        watch.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watch


async def delete_namespace(kubeconfig: pathlib.Path, namespace: str, timeout: float) -> None:
    """Delete a namespace and wait until its pods are gone, so the next phase has the nodes to itself."""
    api = await client.Client.connect(str(kubeconfig), timeout=60)
    await api.delete(NAMESPACES, namespace)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            await api.get(NAMESPACES, namespace)
        except client.ApiError as e:
            if e.not_found:
                return
            raise
        await asyncio.sleep(1)
    pods = await api.list(client.PODS, namespace)
    log(f"  warning: namespace {namespace} still has {len(pods['items'])} pods after {timeout:.0f}s")


def wait_quiet(c: devcluster.Cluster, timeout: float, interval: float = 2.0) -> None:
    """Wait until no request on an API resource reaches the apiserver for ``interval`` seconds.

    Leases and endpoints are left out: the apiserver renews its own every few seconds.
    """

    def busy() -> float:
        return sum(
            n
            for (_verb, _group, resource, _sub, _code), n in request_totals(c).items()
            if resource not in ("", "leases", "endpoints")
        )

    deadline = time.monotonic() + timeout
    last = busy()
    while time.monotonic() < deadline:
        time.sleep(interval)
        now = busy()
        if now == last:
            return
        last = now
    log(f"  warning: the apiserver was still busy {timeout:.0f}s after the namespace was deleted")


def clean(c: devcluster.Cluster, kubeconfig: pathlib.Path, namespace: str, timeout: float) -> None:
    log(f"  deleting {namespace}")
    asyncio.run(delete_namespace(kubeconfig, namespace, timeout))
    wait_quiet(c, timeout=60)


# --- phases ----------------------------------------------------------------------------------------


def plain_phase(
    c: devcluster.Cluster, kubeconfig: pathlib.Path, args: argparse.Namespace, result: dict[str, Any]
) -> None:
    """Fills ``result`` as it goes, so that a timeout still leaves what was measured."""
    n = args.jobs * args.replicas
    log(f"plain client: {n} pods in {PLAIN_NAMESPACE}, concurrency {args.concurrency}")
    bodies = [pod_body(f"pod-{i:05d}") for i in range(n)]
    cpu_before = control_plane_cpu(c)
    result.update({"namespace": PLAIN_NAMESPACE, "count": n})
    try:
        result.update(
            asyncio.run(
                run_creates(
                    kubeconfig,
                    client.PODS,
                    PLAIN_NAMESPACE,
                    bodies,
                    lambda o: str(o.get("status", {}).get("phase", "")),
                    "Running",
                    "pods",
                    args,
                    collections.Counter(),
                )
            )
        )
    except BenchTimeoutError as e:
        result.update(e.partial)
        raise
    finally:
        result["control_plane_cpu"] = cpu_delta(cpu_before, control_plane_cpu(c))


def cpu_delta(before: Mapping[str, float], after: Mapping[str, float]) -> dict[str, float]:
    return {name: after[name] - before.get(name, 0.0) for name in after}


def operator_phase(
    c: devcluster.Cluster,
    workdir: pathlib.Path,
    kubeconfigs: Mapping[str, pathlib.Path],
    namespace: str,
    qps: float,
    burst: int,
    args: argparse.Namespace,
    audit_log: pathlib.Path | None,
    result: dict[str, Any],
) -> None:
    """Fills ``result`` as it goes, so that a timeout still leaves what was measured."""
    log(f"operator (qps {qps:g}, burst {burst}): {args.jobs} TrainingJobs in {namespace}")
    result.update({"namespace": namespace, "qps": qps, "burst": burst, "count": args.jobs})
    op, metrics_port = start_operator(
        kubeconfigs["operator"],
        workdir / f"kubetrain-operator-{namespace}.log",
        qps,
        burst,
        args.gang_scheduler,
    )
    own: collections.Counter[RowKey] = collections.Counter()
    snapshot: dict[str, Any] = {}

    def before() -> None:
        snapshot["requests"] = request_totals(c)
        snapshot["cpu"] = control_plane_cpu(c)
        snapshot["audit_offset"] = audit_log.stat().st_size if audit_log else 0
        own.clear()  # only what the benchmark does from here on is in the window

    def after() -> None:
        assert op.pid is not None
        result["operator"] = proc_figures(op.pid)
        result["reconciles"] = operator_reconciles(metrics_port)
        result["control_plane_cpu"] = cpu_delta(snapshot["cpu"], control_plane_cpu(c))
        result["requests"] = request_rows(snapshot["requests"], request_totals(c), own)
        if audit_log is not None:
            result["audit"] = audit_rows(audit_log, snapshot["audit_offset"])

    bodies = [job_body(f"bench-{i:05d}", args.replicas) for i in range(args.jobs)]
    try:
        result.update(
            asyncio.run(
                run_creates(
                    kubeconfigs["bench"],
                    client.TRAININGJOBS,
                    namespace,
                    bodies,
                    lambda o: str(o.get("status", {}).get("state", "")),
                    "Running",
                    "TrainingJobs",
                    args,
                    own,
                    before=before,
                    after=after,
                    alive=op.check_alive,
                    settle=args.settle,
                )
            )
        )
    except BenchTimeoutError as e:
        result.update(e.partial)
        raise
    finally:
        op.stop()
        result["operator_log_tail"] = op.tail(20)


# --- the report ------------------------------------------------------------------------------------


def fmt_latency(lat: Mapping[str, float]) -> str:
    if not lat:
        return ""
    return f"create→Running p50 {lat['p50']:.2f}s  p95 {lat['p95']:.2f}s  max {lat['max']:.2f}s"


def unfinished(phase: Mapping[str, Any]) -> str:
    if "done" not in phase:
        return "DID NOT FINISH (see the error below)"
    return f"NOT all Running: {phase['done']} of {phase['count']} (states: {phase['states']})"


def fmt_cpu(cpu: Mapping[str, float]) -> str:
    return ", ".join(f"{name} {s:.1f}s" for name, s in sorted(cpu.items(), key=lambda kv: -kv[1]))


def report(figures: Mapping[str, Any]) -> str:
    a = figures["args"]
    out = [
        f"kubetrain jobs benchmark: {a['jobs']} jobs x {a['replicas']} replicas = {a['jobs'] * a['replicas']} pods, "
        f"{a['nodes']} kwok nodes, create concurrency {a['concurrency']}, {os.cpu_count()} CPUs",
        f"cluster start ({a['nodes']} nodes):  {figures['cluster_start_seconds']:.1f}s"
        f"  (+ CRD {figures['crd_seconds']:.1f}s)",
    ]
    plain = figures.get("plain")
    if plain:
        out += ["", f"plain client, no operator (lower bound): {plain['count']} bare pods"]
        if plain.get("seconds"):
            out.append(
                f"  all Running after     {plain['seconds']:.1f}s  ({plain['per_second']:.0f} pods/s; "
                f"creates took {plain['create_seconds']:.1f}s)"
            )
            out.append(f"  {fmt_latency(plain['latency'])}")
        else:
            out.append(f"  {unfinished(plain)}")
        out.append(f"  CPU used in phase     {fmt_cpu(plain['control_plane_cpu'])}")
    for run in figures.get("operator_runs", []):
        out += [
            "",
            f"operator, --kube-api-qps {run['qps']:g} --kube-api-burst {run['burst']}: {run['count']} TrainingJobs",
        ]
        if run.get("seconds"):
            ratio = ""
            if plain and plain.get("seconds"):
                ratio = f", {run['seconds'] / plain['seconds']:.2f}x the plain client"
            out.append(
                f"  all Running after     {run['seconds']:.1f}s  ({run['per_second']:.1f} jobs/s{ratio}; "
                f"creates took {run['create_seconds']:.1f}s)"
            )
            out.append(f"  {fmt_latency(run['latency'])}")
        else:
            out.append(f"  {unfinished(run)}")
        if "operator" in run:
            o = run["operator"]
            rec = run.get("reconciles", {})
            total = sum(rec.values())
            out.append(
                f"  operator process      peak RSS {o['peak_rss_mib']:.0f} MiB, CPU {o['cpu_seconds']:.1f}s, "
                f"{total:.0f} reconciles ({total / run['count']:.1f}/job"
                + (f", {rec.get('error', 0):.0f} errors" if rec.get("error") else "")
                + ")"
            )
        if "control_plane_cpu" in run:
            out.append(f"  CPU used in phase     {fmt_cpu(run['control_plane_cpu'])} (+ operator above)")
        if "requests" in run:
            out += request_table(run["requests"], run["count"], run.get("seconds"))
        if "audit" in run:
            out += audit_table(run["audit"], run["count"])
    return "\n".join(out)


def request_table(rows: list[dict[str, Any]], jobs: int, finished: float | None) -> list[str]:
    window = "first create → all Running + settle" if finished else "first create → timeout"
    out = [f"  API requests (apiserver_request_total delta, {window}):"]
    out.append(f"    {'who':<10} {'verb':<6} {'resource':<46} {'count':>7} {'/job':>7}  non-2xx")
    for r in rows:
        verb, group, resource, sub = r["key"]
        name = (f"{resource}.{group}" if group else resource) + (f"/{sub}" if sub else "") or "(non-resource)"
        who = r["who"]
        codes = " ".join(f"{code}x{n:.0f}" for code, n in sorted(r["codes"].items()))
        line = f"    {who:<10} {verb:<6} {name:<46} {r['count']:>7.0f} {r['count'] / jobs:>7.2f}  {codes}"
        out.append(line.rstrip())
    writes = sum(r["count"] for r in rows if r["who"] == "operator")
    reads = sum(r["count"] for r in rows if r["who"] == "operator?")
    out += [
        f"  operator: {writes / jobs:.2f} writes/job"
        + (f" (+ at most {reads / jobs:.2f} reads/job, the operator?'s rows)" if reads else ""),
        "    attributed by resource, as the metric has no client label: only the operator writes pods, services,",
        "    configmaps, core Events and TrainingJobs here, but a controller may read them too; and a WATCH",
        "    is counted when it ends, so watches still open are missing. --audit attributes exactly.",
    ]
    return out


def audit_table(rows: list[dict[str, Any]], jobs: int) -> list[str]:
    out = [
        "  API requests from the audit log (exact: by user for the operator and benchmark, else user agent):"
    ]
    out.append(f"    {'who':<24} {'verb':<7} {'resource':<46} {'count':>7} {'/job':>7}")
    for r in rows:
        out.append(
            f"    {r['who']:<24} {r['verb']:<7} {r['resource']:<46} {r['count']:>7} {r['count'] / jobs:>7.2f}"
        )
    total = sum(r["count"] for r in rows if r["who"] == "operator")
    out.append(f"  operator (audit, exact): {total / jobs:.2f} requests/job")
    return out


# --- main ------------------------------------------------------------------------------------------


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--jobs", type=int, default=500, help="TrainingJobs to create (default 500)")
    p.add_argument("--replicas", type=int, default=4, help="pods per job: 1 Master + N-1 Workers (default 4)")
    p.add_argument("--nodes", type=int, default=24, help="kwok nodes, 110 pods each (default 24)")
    p.add_argument("--concurrency", type=int, default=50, help="creates in flight at once (default 50)")
    p.add_argument("--qps", type=float, default=200.0, help="operator --kube-api-qps (default 200)")
    p.add_argument("--burst", type=int, default=400, help="operator --kube-api-burst (default 400)")
    p.add_argument(
        "--also-default-limits",
        action="store_true",
        help="run the operator phase again with the operator's own defaults (qps 20, burst 30); slow",
    )
    p.add_argument("--timeout", type=float, default=300.0, help="seconds each phase may take (default 300)")
    p.add_argument(
        "--settle",
        type=float,
        default=5.0,
        help="seconds after all jobs run before the last scrape (default 5)",
    )
    p.add_argument(
        "--gang-scheduler",
        default="auto",
        help="the operator's --gang-scheduler (default auto: native gangs, served by this cluster)",
    )
    p.add_argument("--skip-plain", action="store_true", help="skip the plain-client lower bound")
    p.add_argument("--skip-operator", action="store_true", help="run the plain-client lower bound only")
    p.add_argument("--audit", action="store_true", help="exact attribution from an apiserver audit log")
    p.add_argument("--json", action="store_true", help="print the figures as JSON instead of the report")
    args = p.parse_args(argv)
    if args.jobs < 1 or args.replicas < 1 or args.nodes < 1 or args.concurrency < 1:
        p.error("--jobs, --replicas, --nodes and --concurrency must be at least 1")
    capacity = args.nodes * int(kwok.NODE_CAPACITY["pods"])
    if args.jobs * args.replicas > capacity:
        need = math.ceil(args.jobs * args.replicas / int(kwok.NODE_CAPACITY["pods"]))
        p.error(
            f"{args.jobs * args.replicas} pods do not fit on {args.nodes} nodes; use --nodes {need} or more"
        )
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    # SIGTERM as Ctrl-C: the same clean stop of the operator and the cluster.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    workdir = pathlib.Path(tempfile.mkdtemp(prefix="kubetrain-jobs-bench-"))
    figures: dict[str, Any] = {"args": vars(args)}
    c: devcluster.Cluster | None = None
    error: str | None = None
    completed = False
    try:
        apiserver_args: tuple[str, ...] = ()
        audit_log = workdir / "audit.log" if args.audit else None
        if audit_log is not None:
            (workdir / "audit-policy.yaml").write_text(AUDIT_POLICY)
            apiserver_args = (
                f"--audit-policy-file={workdir / 'audit-policy.yaml'}",
                f"--audit-log-path={audit_log}",
                "--audit-log-maxsize=100000",
                "--audit-log-format=json",
            )
        log(f"starting the control plane with {args.nodes} kwok nodes")
        t = time.perf_counter()
        c = devcluster.start(
            devcluster.Tier.CLUSTER, nodes=args.nodes, timeout=180, apiserver_args=apiserver_args
        )
        figures["cluster_start_seconds"] = time.perf_counter() - t
        t = time.perf_counter()
        c.install_crds(pathlib.Path(__file__).resolve().parent.parent / "config")
        figures["crd_seconds"] = time.perf_counter() - t
        log(
            f"  up in {figures['cluster_start_seconds']:.1f}s, CRD installed in {figures['crd_seconds']:.1f}s"
        )
        kubeconfigs = {
            "bench": user_kubeconfig(c, BENCH_USER, workdir / "bench.kubeconfig"),
            "operator": user_kubeconfig(c, OPERATOR_USER, workdir / "operator.kubeconfig"),
        }
        if not args.skip_plain:
            figures["plain"] = {}
            plain_phase(c, kubeconfigs["bench"], args, figures["plain"])
            if not args.skip_operator:
                clean(c, kubeconfigs["bench"], PLAIN_NAMESPACE, args.timeout)
        if not args.skip_operator:
            limits = [(args.qps, args.burst, JOBS_NAMESPACE)]
            if args.also_default_limits:
                limits.append((*OPERATOR_DEFAULT_LIMITS, f"{JOBS_NAMESPACE}-defaults"))
            figures["operator_runs"] = []
            for i, (qps, burst, namespace) in enumerate(limits):
                if i:
                    clean(c, kubeconfigs["bench"], limits[i - 1][2], args.timeout)
                run: dict[str, Any] = {}
                figures["operator_runs"].append(run)
                operator_phase(c, workdir, kubeconfigs, namespace, qps, burst, args, audit_log, run)
        completed = True
    except BenchTimeoutError as e:
        error = str(e)
    except process.StartError as e:
        error = f"a process failed: {e}"
    except KeyboardInterrupt:
        error = "interrupted"
    finally:
        if c is not None:
            log("stopping the control plane")
            c.stop()
        if completed or not any(workdir.glob("*.log")):
            shutil.rmtree(workdir, ignore_errors=True)
        else:
            log(f"kept the operator's logs in {workdir}")
    if "cluster_start_seconds" in figures and "crd_seconds" in figures:
        if args.json:
            print(json.dumps({**figures, "error": error}, indent=2, default=str))
        else:
            print(report(figures))
    if error is not None:
        for run in figures.get("operator_runs", []):
            if run.get("operator_log_tail"):
                log(
                    f"--- kubetrain-operator log ({run['namespace']}), last lines ---\n{run['operator_log_tail']}"
                )
        log(f"\nerror: {error}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
