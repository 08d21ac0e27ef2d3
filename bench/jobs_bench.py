"""End-to-end benchmark: N TrainingJobs from create to Running, against a plain-client lower bound.

    make bench-jobs       # or: python -P bench/jobs_bench.py [--jobs 500 --replicas 4]
    make bench-jobs BENCH_ARGS="--jobs 10000 --steady 60"           # see --help for the rest
    make bench-jobs BENCH_ARGS="--jobs 2000 --fairness"
    make bench-jobs BENCH_ARGS=--smoke                               # every phase, small (make test)

Starts the local control plane with kwok fake nodes (as many as the pods need; kube-scheduler
binds pods, kwok makes them Running). kube-scheduler runs with ``--kube-api-qps``
``--scheduler-qps`` (1000; burst twice that): at its default, 50, it binds about 50 pods a
second and the floor would measure the scheduler. The benchmark installs the TrainingJob
CRD and runs its phases, each in namespaces of its own (``--namespaces`` spreads the jobs),
deleted (and drained of pods) before the next starts:

1. **Plain client (the lower bound).** No operator. The benchmark itself creates
   jobs x replicas bare pods with the same concurrency it uses for jobs, and times them
   from the first create until every pod's phase is Running. No operator can beat this:
   it has to make at least these pods, through the same apiserver, scheduler and kwok.
2. **Operator.** ``kubetrain-operator`` runs as a separate process (``--kube-api-qps``
   and ``--kube-api-burst`` from ``--qps``/``--burst``; ``--gang-scheduler none`` unless
   told otherwise), and the benchmark creates the TrainingJobs (one Master, replicas - 1
   Workers each) and times them from the first create until every job's
   ``.status.state`` is Running.
3. **Fairness** (``--fairness``). As many new jobs again, while the running ones finish
   (their Masters exit 0 at a steady rate through kwok): the status lag of the finishing
   jobs, and of the new ones, while thousands of first passes wait.
4. **Steady state** (``--steady SECONDS``). Once every job runs, the benchmark waits until
   its watches have shown no change to a pod or a job for ``--quiet`` seconds (kwok may
   still be catching up on pods' conditions long after they all run), then takes the
   operator's CPU over SECONDS (as a share of one core), with the changes its watches saw
   meanwhile and the operator's reconciles; then ``--changes`` single changes one after
   another (a Master exits 0), each timed until its job says Succeeded.

Per-object latencies (create sent → Running seen on the benchmark's watch) give p50/p95.
The **status lag** of a job is the time from the moment the benchmark's own pod watch
shows its last pod Running (or its Master Succeeded) to the moment its job watch shows the
job Running (Succeeded): what the operator adds, given p50/p99/max for every phase. The
ratio of the wall times says how far the operator is from the floor.

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

``--smoke`` runs every phase with 12 jobs of 2 replicas (``make test`` runs it; see
tests/e2e/test_bench_jobs.py). If the jobs are not all Running within ``--timeout`` seconds, the benchmark prints what it
measured so far, says how many jobs got there, and exits with status 1.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import collections
import contextlib
import datetime
import functools
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
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from typing import Any

import attrs
import yaml
from prometheus_client.parser import text_string_to_metric_families

from kubetrain.api import meta, naming, scheme, v1beta1, wire
from kubetrain.devcluster import cluster as devcluster
from kubetrain.devcluster import kwok, process
from kubetrain.operator import main as operator_main
from kubetrain.operator import pki, render
from kubetrain.operator.frameworks import registry as fw_registry
from kubetrain.operator.runtime import client

# kr8s 0.20 knows Kubernetes up to 1.35; the local control plane runs 1.36.
warnings.filterwarnings("ignore", message="Kubernetes version .* is not supported")

LABEL = "training.kubetrain.dev/job-name"
PLAIN_NAMESPACE = "bench-plain"
JOBS_NAMESPACE = "bench"
OPERATOR_USER = "kubetrain-bench-operator"
BENCH_USER = "kubetrain-bench"
CLIENT_GO_LIMITS = (20.0, 30)  # client-go's default QPS and burst, which many operators keep
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
    return {"p50": q[49], "p95": q[94], "p99": q[98], "max": values[-1], "count": len(values)}


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
    kubeconfig: pathlib.Path,
    metrics_port: int,
    probe_port: int,
    qps: float,
    burst: int,
    gang_scheduler: str,
    workers: int,
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
        f"--max-concurrent-reconciles={workers}",
    ]


def start_operator(
    kubeconfig: pathlib.Path,
    log_path: pathlib.Path,
    qps: float,
    burst: int,
    gang_scheduler: str,
    workers: int,
) -> tuple[process.Process, int]:
    """Start kubetrain-operator and wait until its caches are synced (/readyz); returns it and its metrics port."""
    metrics_port, probe_port = process.free_port(), process.free_port()
    op = process.Process(
        "kubetrain-operator",
        operator_argv(kubeconfig, metrics_port, probe_port, qps, burst, gang_scheduler, workers),
        log_path,
    )
    op.start()

    def ready() -> bool:
        with urllib.request.urlopen(f"http://127.0.0.1:{probe_port}/readyz", timeout=2) as r:
            return bool(r.status == 200)

    process.wait_until("kubetrain-operator to be ready", ready, timeout=60, watch=[op], interval=0.2)
    return op, metrics_port


def operator_samples(metrics_port: int) -> list[Any]:
    with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=5) as r:
        return samples_of(r.read().decode())


def samples_of(exposition: str) -> list[Any]:
    """Every sample of a Prometheus text exposition."""
    return [s for family in text_string_to_metric_families(exposition) for s in family.samples]


def operator_reconciles(samples: Iterable[Any]) -> dict[str, float]:
    out: dict[str, float] = collections.defaultdict(float)
    for s in samples:
        if s.name == "controller_runtime_reconcile_total":
            out[s.labels.get("result", "?")] += s.value
    return dict(out)


# Where a job's pass spends its time, from the operator's own histograms: (figure, metric, label).
WAITS: tuple[tuple[str, str, dict[str, str]], ...] = (
    ("queue wait: changes", "workqueue_queue_duration_seconds", {"priority": "0"}),
    ("first passes", "workqueue_queue_duration_seconds", {"priority": "-100"}),
    ("reconcile", "controller_runtime_reconcile_time_seconds", {}),
    ("PATCH", "rest_client_request_duration_seconds", {"verb": "PATCH"}),
    ("POST", "rest_client_request_duration_seconds", {"verb": "POST"}),
)


def operator_waits(samples: Iterable[Any], since: Iterable[Any] = ()) -> dict[str, dict[str, float]]:
    """p50/p99 and count of each of :data:`WAITS` (of what was observed after ``since``, an earlier
    scrape), interpolated in its buckets as Prometheus' ``histogram_quantile`` does."""
    samples, since = list(samples), list(since)
    out: dict[str, dict[str, float]] = {}
    for what, metric, labels in WAITS:
        buckets: dict[float, float] = collections.defaultdict(float)
        for sign, scrape in ((1, samples), (-1, since)):
            for s in scrape:
                if s.name == f"{metric}_bucket" and labels.items() <= s.labels.items():
                    buckets[float(s.labels["le"])] += sign * s.value
        ordered = sorted(buckets.items())
        if ordered and ordered[-1][1]:
            out[what] = {
                "count": ordered[-1][1],
                **{f"p{q * 100:g}": histogram_quantile(q, ordered) for q in (0.5, 0.99)},
            }
    return out


def histogram_quantile(q: float, buckets: list[tuple[float, float]]) -> float:
    """``buckets``: (upper bound, cumulative count) in order, the last one +Inf."""
    rank = q * buckets[-1][1]
    lower, below = 0.0, 0.0
    for bound, count in buckets:
        if count >= rank:
            if bound == float("inf"):
                return lower  # past the largest finite bound: Prometheus answers with it too
            return lower + (bound - lower) * (rank - below) / ((count - below) or 1)
        lower, below = bound, count
    return lower


# --- the client side -------------------------------------------------------------------------------


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
        while True:
            try:
                self.own[self._key("LIST")] += 1
                listed = await self.api.list(self.resource)
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
                    async for ev in self.api.stream(self.resource, params=params, read_timeout=400):
                        if ev["type"] == "ERROR":  # 410 Gone, most likely: list again
                            raise client.ApiError(int(ev["object"].get("code", 0)), "Expired", "watch error")
                        rv = ev["object"]["metadata"]["resourceVersion"]
                        if ev["type"] != "BOOKMARK":
                            self.changes += 1
                            self.changed_at = time.perf_counter()
                        if ev["type"] in ("ADDED", "MODIFIED"):
                            self._see(ev["object"], self.changed_at)
            except client.ApiError:
                await asyncio.sleep(0.2)

    def summary(self, names: Iterable[str]) -> str:
        counts = collections.Counter(self.states.get(n) or "(no state)" for n in names)
        return ", ".join(f"{state} {n}" for state, n in counts.most_common())


def status_lags(
    jobs: Waiter, pods: Waiter, names: Iterable[str], job_state: str, pod_state: str, pods_per_job: int | None
) -> list[float]:
    """Per job: job first seen in ``job_state`` minus its last pod first seen in ``pod_state``.

    With ``pods_per_job``, a job counts once that many of its pods reached ``pod_state`` (all
    Running); without, once any did (the Master that finished the job).
    """
    by_job: dict[str, list[float]] = collections.defaultdict(list)
    for pod, job in pods.job.items():
        t = pods.first.get(pod, {}).get(pod_state)
        if t is not None:
            by_job[job].append(t)
    lags = []
    for name in names:
        seen = jobs.first.get(name, {}).get(job_state)
        times = by_job.get(name, [])
        if seen is None or not times or (pods_per_job and len(times) < pods_per_job):
            continue
        lags.append(seen - (max(times) if pods_per_job else min(times)))
    return lags


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


def pod_body(
    name: str, image: str = "bench", labels: Mapping[str, str] | None = None, namespace: str | None = None
) -> Obj:
    return {
        "metadata": {
            "name": name,
            "labels": dict(labels or {}),
            **({"namespace": namespace} if namespace else {}),
        },
        "spec": {"containers": [{"name": "pytorch", "image": image}]},
    }


def service_body(pod: Obj, per_job: bool) -> Obj | None:
    """The headless Service the operator would make with ``pod``: per replica, one named like it
    selecting it; per job, one for the first pod of each job, named after the job, selecting its pods."""
    labels = pod["metadata"]["labels"]
    if per_job:
        if not pod["metadata"]["name"].endswith("-0"):
            return None
        return {
            "metadata": {"name": labels["job"]},
            "spec": {"clusterIP": "None", "selector": {"job": labels["job"]}},
        }
    name = pod["metadata"]["name"]
    return {
        "metadata": {"name": name},
        "spec": {"clusterIP": "None", "selector": {"pod": name}, "ports": [{"name": "p", "port": 23456}]},
    }


def operator_objects(jobs: Iterable[Obj]) -> tuple[list[Obj], dict[str, Obj], set[str]]:
    """The pods and Services the operator makes for ``jobs`` (as stored, with their uids), rendered
    by the operator's own code, byte for byte: the pods; pod name -> the Service to create just
    before it (a replica's own, or the job's before its first pod); and each job's last pod."""
    pods: list[Obj] = []
    services: dict[str, Obj] = {}
    last: set[str] = set()
    for stored in jobs:
        job = scheme.to_hub(scheme.decode(stored))
        objects = render.render(job, fw_registry.default().get(job.spec.framework.name))
        own = [o for o in objects if o["kind"] == "Pod"]
        names = {p["metadata"]["name"] for p in own}
        for o in objects:
            if o["kind"] == "Service":
                name = o["metadata"]["name"]
                services[name if name in names else own[0]["metadata"]["name"]] = o
        pods += own
        last.add(own[-1]["metadata"]["name"])
    return pods, services, last


def spread(base: str, count: int) -> list[str]:
    """The namespaces the jobs of one run are spread over: ``base``, ``base-1``, ..."""
    return [base, *(f"{base}-{i}" for i in range(1, count))]


def job_body(name: str, replicas: int, namespace: str, host_names: str = "PerReplica") -> Obj:
    template = {"spec": {"containers": [{"name": "pytorch", "image": "bench"}]}}
    specs: Obj = {"Master": {"replicas": 1, "template": template}}
    if replicas > 1:
        specs["Worker"] = {"replicas": replicas - 1, "template": template}
    return {
        "apiVersion": "training.kubetrain.dev/v1beta1",
        "kind": "TrainingJob",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "framework": {"name": "pytorch"},
            "replicaSpecs": specs,
            "network": {"hostNames": host_names},
        },
    }


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
    return str(obj.get("status", {}).get("phase", ""))


def _job_state(obj: Obj) -> str:
    return str(obj.get("status", {}).get("state", ""))


def wave(
    sent: Mapping[str, float], done: Mapping[str, float], started: float, created: float
) -> dict[str, Any]:
    """The figures of one batch of creates: wall time to the last one done, and per-object latency."""
    finished = max(done.values())
    return {
        "count": len(sent),
        "create_seconds": created - started,
        "seconds": finished - started,
        "per_second": len(sent) / (finished - started),
        "latency": percentiles(done[n] - sent[n] for n in sent),
    }


async def delete_namespace(kubeconfig: pathlib.Path, namespace: str, timeout: float) -> None:
    """Delete a namespace and wait until its pods are gone, so the next phase has the nodes to itself."""
    async with await client.Client.connect(str(kubeconfig), timeout=60) as api:
        await _delete_namespace(api, namespace, timeout)


async def _delete_namespace(api: client.Client, namespace: str, timeout: float) -> None:
    # The pods at once, in one request: the namespace controller would delete them one by one at
    # kube-controller-manager's 20 requests a second (400 s for 8,000 pods).
    try:
        await api.request("DELETE", client.PODS, namespace=namespace, body={"gracePeriodSeconds": 0})
    except client.ApiError as e:
        if e.status != 504:  # tens of thousands outlast the request's deadline: it goes on regardless
            raise
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


def clean(c: devcluster.Cluster, kubeconfig: pathlib.Path, namespaces: list[str], timeout: float) -> None:
    log(f"  deleting {', '.join(namespaces)}")

    async def delete_all() -> None:
        await asyncio.gather(*(delete_namespace(kubeconfig, n, timeout) for n in namespaces))

    asyncio.run(delete_all())
    wait_quiet(c, timeout=60)


# --- phases ----------------------------------------------------------------------------------------


PLAIN_KINDS = {
    "pods": "{n} pods",
    "services": "{n} pods and their headless Services",
    "writes": "{jobs} TrainingJobs, their headless Services, {n} pods and two status patches a job",
}


def plain_phase(
    c: devcluster.Cluster,
    kubeconfig: pathlib.Path,
    args: argparse.Namespace,
    result: dict[str, Any],
    namespaces: list[str],
    *,
    kind: str = "pods",
) -> None:
    """Fills ``result`` as it goes, so that a timeout still leaves what was measured.

    ``kind`` is what the plain client makes (:data:`PLAIN_KINDS`): bare pods; the same with the
    Services the operator would make; or every write a job costs with no operator at all — the
    TrainingJobs (created first, as the operator phase's user does), then per job the Service(s)
    and pods the operator renders for it, byte for byte (env, labels, owner reference: a rendered
    pod costs the apiserver about 40 % more per write than a bare one), and, once the last pod is
    created, the two status patches the operator would write.
    Job ``j`` goes to ``namespaces[j % len(namespaces)]``, as in the operator phase.
    """
    n = args.jobs * args.replicas
    per_job = args.host_names == "PerJob"
    what = PLAIN_KINDS[kind].format(n=n, jobs=args.jobs)
    where = namespaces[0] if len(namespaces) == 1 else f"{len(namespaces)} namespaces ({namespaces[0]}, ...)"
    log(f"plain client: {what} in {where}, concurrency {args.concurrency}")
    cpu_before = control_plane_cpu(c)
    result.update({"namespaces": len(namespaces), "count": n, "kind": kind, "host_names": args.host_names})

    async def run() -> None:
        r = args.replicas
        # Bare pods; the writes phase renders the operator's own from the jobs it stores.
        bodies = [
            pod_body(
                f"job-{i // r:05d}-{i % r}",
                labels={"pod": f"job-{i // r:05d}-{i % r}", "job": f"job-{i // r:05d}"},
                namespace=namespaces[i // r % len(namespaces)],
            )
            for i in range(n if kind != "writes" else 0)
        ]
        own: collections.Counter[RowKey] = collections.Counter()
        async with Watches.open(kubeconfig, namespaces, own, jobs=kind == "writes") as w:
            started = time.perf_counter()
            after: Callable[[Obj], Awaitable[None]] | None = None
            make = functools.partial(service_body, per_job=per_job) if kind == "services" else None
            if kind == "writes":
                jobs = [
                    job_body(f"job-{j:05d}", r, namespaces[j % len(namespaces)], args.host_names)
                    for j in range(args.jobs)
                ]
                stored = await w.create(client.TRAININGJOBS, jobs, args.concurrency)
                bodies, services, last = operator_objects(stored.values())

                async def patch_when_last(pod: Obj) -> None:
                    if pod["metadata"]["name"] in last:
                        job, namespace = pod["metadata"]["labels"][LABEL], pod["metadata"]["namespace"]
                        for patch in status_patches(job, r, datetime.datetime.now(datetime.UTC)):
                            await w.patch_status(job, namespace, patch)

                def service_of(pod: Obj) -> Obj | None:
                    return services.get(pod["metadata"]["name"])

                after, make = patch_when_last, service_of
            names = [b["metadata"]["name"] for b in bodies]
            await w.create(client.PODS, bodies, args.concurrency, services=make, after=after)
            created = time.perf_counter()
            sent = {name: w.sent[name] for name in names}
            log(f"  created {n} pods in {created - started:.1f}s")
            await wait_all(w.pods, names, "Running", "pods", started, args.timeout, w.check)
            result.update(wave(sent, w.pods.done_at(names, "Running"), started, created))
            result["writes"] = {
                "/".join(filter(None, (verb, plural, sub))): count
                for (verb, _group, plural, sub), count in own.items()
            }

    try:
        asyncio.run(run())
    except BenchTimeoutError as e:
        result.update(e.partial)
        raise
    finally:
        result["control_plane_cpu"] = cpu_delta(cpu_before, control_plane_cpu(c))


def status_patches(job: str, replicas: int, now: datetime.datetime) -> tuple[Obj, Obj]:
    """The operator's two status writes for a healthy job: its pods made, then all running."""

    def condition(kind: v1beta1.ConditionType, reason: str, message: str) -> meta.Condition:
        return meta.Condition(
            type=kind,
            status=meta.ConditionStatus.TRUE,
            reason=reason,
            message=message,
            last_transition_time=now,
        )

    counts = {"Master": 1, "Worker": replicas - 1} if replicas > 1 else {"Master": 1}
    created = v1beta1.TrainingJobStatus(
        state=v1beta1.JobState.CREATED,
        conditions=(
            condition(v1beta1.ConditionType.CREATED, "TrainingJobCreated", f"TrainingJob {job} was created"),
        ),
        replica_statuses={
            t: v1beta1.ReplicaStatus(
                selector=f"training.kubetrain.dev/job-name={job},training.kubetrain.dev/replica-type={t.lower()}"
            )
            for t in counts
        },
        start_time=now,
        observed_generation=1,
    )
    running = attrs.evolve(
        created,
        state=v1beta1.JobState.RUNNING,
        conditions=(
            *created.conditions,
            condition(v1beta1.ConditionType.RUNNING, "Running", "every replica is running"),
        ),
        replica_statuses={
            t: attrs.evolve(st, active=counts[t], ready=counts[t])
            for t, st in created.replica_statuses.items()
        },
    )
    return {"status": wire.unstructure(created)}, {"status": wire.unstructure(running)}


def cpu_delta(before: Mapping[str, float], after: Mapping[str, float]) -> dict[str, float]:
    return {name: after[name] - before.get(name, 0.0) for name in after}


def operator_phase(
    c: devcluster.Cluster,
    workdir: pathlib.Path,
    kubeconfigs: Mapping[str, pathlib.Path],
    namespaces: list[str],
    qps: float,
    burst: int,
    args: argparse.Namespace,
    audit_log: pathlib.Path | None,
    result: dict[str, Any],
) -> None:
    """Fills ``result`` as it goes, so that a timeout still leaves what was measured."""
    namespace = namespaces[0]
    where = namespace if len(namespaces) == 1 else f"{len(namespaces)} namespaces ({namespace}, ...)"
    log(f"operator (qps {qps:g}, burst {burst}): {args.jobs} TrainingJobs in {where}")
    result.update({"namespace": namespace, "namespaces": len(namespaces), "qps": qps, "burst": burst})
    result["count"] = args.jobs
    op, metrics_port = start_operator(
        kubeconfigs["operator"],
        workdir / f"kubetrain-operator-{namespace}.log",
        qps,
        burst,
        args.gang_scheduler,
        args.workers,
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
        samples = operator_samples(metrics_port)
        result["reconciles"] = operator_reconciles(samples)
        result["waits"] = operator_waits(samples)
        result["control_plane_cpu"] = cpu_delta(snapshot["cpu"], control_plane_cpu(c))
        result["requests"] = request_rows(snapshot["requests"], request_totals(c), own)
        if audit_log is not None:
            result["audit"] = audit_rows(audit_log, snapshot["audit_offset"])

    async def run() -> None:
        async with Watches.open(kubeconfigs["bench"], namespaces, own, jobs=True) as w:

            def alive() -> None:
                op.check_alive()
                w.check()

            await asyncio.to_thread(before)
            try:
                first, names = await jobs_wave(w, "bench", args, alive)
                result.update(first)
                await asyncio.sleep(args.settle)
            finally:  # at a timeout too, the requests so far
                await asyncio.to_thread(after)
            if args.fairness:
                result["fairness"] = {}
                since = await asyncio.to_thread(operator_samples, metrics_port)
                names = await fairness(w, names, first["seconds"], args, alive, result["fairness"])
                later = await asyncio.to_thread(operator_samples, metrics_port)
                result["fairness"]["waits"] = operator_waits(later, since)
            if args.steady:
                assert op.pid is not None
                result["steady"] = await steady(w, op.pid, metrics_port, names, args, alive)

    try:
        asyncio.run(run())
    except BenchTimeoutError as e:
        result.update(e.partial)
        raise
    finally:
        if op.pid is not None and op.alive():
            result["operator_end"] = proc_figures(op.pid)
        op.stop()
        result["operator_log_tail"] = op.tail(20)


async def jobs_wave(
    w: Watches, prefix: str, args: argparse.Namespace, alive: Callable[[], None]
) -> tuple[dict[str, Any], list[str]]:
    """Create ``--jobs`` TrainingJobs and wait until all are Running: the figures, and their names."""
    spaces = w.namespaces
    bodies = [
        job_body(f"{prefix}-{i:05d}", args.replicas, spaces[i % len(spaces)], args.host_names)
        for i in range(args.jobs)
    ]
    names = [b["metadata"]["name"] for b in bodies]
    started = time.perf_counter()
    await w.create(client.TRAININGJOBS, bodies, args.concurrency)
    created = time.perf_counter()
    log(f"  created {len(bodies)} TrainingJobs in {created - started:.1f}s")
    await wait_all(w.jobs, names, "Running", "TrainingJobs", started, args.timeout, alive)
    sent = {name: w.sent[name] for name in names}
    figures = wave(sent, w.jobs.done_at(names, "Running"), started, created)
    figures["status_lag"] = percentiles(
        status_lags(w.jobs, w.pods, names, "Running", "Running", args.replicas)
    )
    figures["pods"] = pod_timeline(w.pods, set(names), started)
    return figures, names


def pod_timeline(pods: Waiter, jobs: set[str], started: float) -> dict[str, float]:
    """When the jobs' pods were first seen (created) and seen Running: half of them, and all.

    It tells the operator's part (making the pods) from the cluster's (running them)."""
    mine = [p for p, job in pods.job.items() if job in jobs]
    seen = sorted(min(pods.first[p].values()) - started for p in mine)
    running = sorted(pods.first[p]["Running"] - started for p in mine if "Running" in pods.first[p])
    if not seen or not running:
        return {}
    return {
        "created_p50": seen[len(seen) // 2],
        "created_all": seen[-1],
        "running_p50": running[len(running) // 2],
        "running_all": running[-1],
    }


async def fairness(
    w: Watches,
    running: list[str],
    first_seconds: float,
    args: argparse.Namespace,
    alive: Callable[[], None],
    result: dict[str, Any],
) -> list[str]:
    """As many new jobs arrive while the running ones finish; the names of the new ones.

    The running jobs' Masters exit 0 at a steady rate, spread over as long as the first wave
    took to run, so most of their status updates compete with the new jobs' first passes:
    the lag from a Master seen Succeeded to its job seen Succeeded is what fairness is about.
    """
    rate = len(running) / max(first_seconds, 1.0)
    log(f"fairness: {args.jobs} new TrainingJobs while {len(running)} running ones finish ({rate:.0f}/s)")
    masters = [naming.replica_name(n, "Master", 0) for n in running]
    finishing = asyncio.create_task(w.finish(masters, rate))
    started = time.perf_counter()
    try:
        late, names = await jobs_wave(w, "late", args, alive)
        await finishing
        await wait_all(w.jobs, running, "Succeeded", "first-wave TrainingJobs", started, args.timeout, alive)
    finally:
        finishing.cancel()
    result.update(late)
    result["finished_lag"] = percentiles(status_lags(w.jobs, w.pods, running, "Succeeded", "Succeeded", None))
    return names


async def steady(
    w: Watches,
    pid: int,
    metrics_port: int,
    running: list[str],
    args: argparse.Namespace,
    alive: Callable[[], None],
) -> dict[str, Any]:
    """The operator's CPU while nothing changes, then how fast a change to one job shows."""
    log(f"steady state: {len(running)} running jobs; waiting for {args.quiet:.0f}s without a change")
    waited = time.perf_counter()
    while time.perf_counter() - max(w.pods.changed_at, w.jobs.changed_at) < args.quiet:
        if time.perf_counter() - waited > args.timeout:
            raise BenchTimeoutError(f"pods or jobs still changing after {args.timeout:.0f}s")
        alive()
        await asyncio.sleep(1)
    waited = time.perf_counter() - waited
    log(f"  quiet after {waited:.0f}s; {args.steady:.0f}s with nothing changing")

    def reconciles_so_far() -> float:
        return sum(operator_reconciles(operator_samples(metrics_port)).values())

    changes, reconciles = w.pods.changes + w.jobs.changes, reconciles_so_far()
    cpu, t = proc_figures(pid)["cpu_seconds"], time.perf_counter()
    await asyncio.sleep(args.steady)
    alive()
    cpu_percent = 100 * (proc_figures(pid)["cpu_seconds"] - cpu) / (time.perf_counter() - t)
    changes = w.pods.changes + w.jobs.changes - changes
    reconciles = reconciles_so_far() - reconciles
    from_patch, from_pod = [], []
    for job in running[: args.changes]:  # one at a time: a single change in a quiet cluster
        master = naming.replica_name(job, "Master", 0)
        sent = time.perf_counter()
        await w.finish([master], rate=1e9)
        done = await wait_all(w.jobs, [job], "Succeeded", "changed TrainingJobs", sent, 60, alive)
        from_patch.append(done - sent)
        from_pod.append(done - w.pods.first[master]["Succeeded"])
    return {
        "jobs": len(running),
        "seconds": args.steady,
        "waited": waited,
        "changes_seen": changes,
        "reconciles": reconciles,
        "cpu_percent": cpu_percent,
        "change_from_patch": percentiles(from_patch),
        "change_from_pod": percentiles(from_pod),
    }


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
        f"{a['nodes']} kwok nodes, create concurrency {a['concurrency']}, kube-scheduler QPS {a['scheduler_qps']:g}, "
        f"{os.cpu_count()} CPUs",
        f"cluster start ({a['nodes']} nodes):  {figures['cluster_start_seconds']:.1f}s"
        f"  (+ CRD {figures['crd_seconds']:.1f}s)",
    ]
    plain = figures.get("plain")
    for title, phase in (
        ("plain client, no operator (lower bound): {n} bare pods", plain),
        (
            "plain client, the same objects: {n} pods and their headless Services ({host_names})",
            figures.get("plain_services"),
        ),
        (
            "plain client, the same writes, no operator: {jobs} TrainingJobs, their Services ({host_names}) "
            "and {n} pods, 2 status patches each",
            figures.get("plain_writes"),
        ),
    ):
        if not phase:
            continue
        out += ["", title.format(n=phase["count"], jobs=a["jobs"], host_names=phase.get("host_names"))]
        if phase.get("seconds"):
            out.append(
                f"  all Running after     {phase['seconds']:.1f}s  ({phase['per_second']:.0f} pods/s; "
                f"creates took {phase['create_seconds']:.1f}s)"
            )
            out.append(f"  {fmt_latency(phase['latency'])}")
        else:
            out.append(f"  {unfinished(phase)}")
        out.append(f"  CPU used in phase     {fmt_cpu(phase['control_plane_cpu'])}")
    for run in figures.get("operator_runs", []):
        out += [
            "",
            f"operator, --kube-api-qps {run['qps']:g} --kube-api-burst {run['burst']} "
            f"--max-concurrent-reconciles {a['workers']}: {run['count']} TrainingJobs"
            + (f" in {run['namespaces']} namespaces" if run.get("namespaces", 1) > 1 else ""),
        ]
        if run.get("seconds"):
            ratio = ""
            if plain and plain.get("seconds"):
                ratio = f", {run['seconds'] / plain['seconds']:.2f}x the plain client"
            for key, what in (("plain_services", "the same objects"), ("plain_writes", "the same writes")):
                if (same := figures.get(key) or {}).get("seconds"):
                    ratio += f", {run['seconds'] / same['seconds']:.2f}x {what}"
            out.append(
                f"  all Running after     {run['seconds']:.1f}s  ({run['per_second']:.1f} jobs/s{ratio}; "
                f"creates took {run['create_seconds']:.1f}s)"
            )
            out.append(f"  {fmt_latency(run['latency'])}")
            out.append(f"  {fmt_lag('status lag (last pod Running → job Running)', run['status_lag'])}")
            if t := run.get("pods"):
                out.append(
                    f"  pods (bench's watch)  half created after {t['created_p50']:.1f}s, all after "
                    f"{t['created_all']:.1f}s; half Running after {t['running_p50']:.1f}s, all after "
                    f"{t['running_all']:.1f}s"
                )
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
        if waits := run.get("waits"):
            out.append(f"  operator's waits      {fmt_waits(waits)}")
        if "control_plane_cpu" in run:
            out.append(f"  CPU used in phase     {fmt_cpu(run['control_plane_cpu'])} (+ operator above)")
        if "requests" in run:
            out += request_table(run["requests"], run["count"], run.get("seconds"))
        if "audit" in run:
            out += audit_table(run["audit"], run["count"])
        out += fairness_lines(run.get("fairness"), plain)
        out += steady_lines(run.get("steady"))
        if "operator_end" in run:
            o = run["operator_end"]
            out.append(
                f"  operator at the end   peak RSS {o['peak_rss_mib']:.0f} MiB, RSS {o['rss_mib']:.0f} MiB, "
                f"CPU {o['cpu_seconds']:.1f}s"
            )
    return "\n".join(out)


def fmt_lag(what: str, lag: Mapping[str, float]) -> str:
    if not lag:
        return f"{what}: none measured"
    return f"{what}: p50 {lag['p50']:.3f}s  p99 {lag['p99']:.3f}s  max {lag['max']:.3f}s  ({lag['count']:.0f} jobs)"


def fairness_lines(f: Mapping[str, Any] | None, plain: Mapping[str, Any] | None) -> list[str]:
    if not f:
        return []
    out = ["", f"  fairness: {f.get('count', '?')} new TrainingJobs while as many running ones finish"]
    if f.get("seconds"):
        out.append(f"    new jobs all Running after {f['seconds']:.1f}s; {fmt_latency(f['latency'])}")
        out.append(f"    {fmt_lag('new jobs: status lag', f['status_lag'])}")
    else:
        out.append(f"    {unfinished(f)}")
    if "finished_lag" in f:
        out.append(f"    {fmt_lag('running jobs: Master Succeeded → job Succeeded', f['finished_lag'])}")
    if waits := f.get("waits"):
        out.append(f"    operator's waits meanwhile: {fmt_waits(waits)}")
    return out


def fmt_waits(waits: Mapping[str, Mapping[str, float]]) -> str:
    return ", ".join(
        f"{what} p50 {w['p50']:.3f}s p99 {w['p99']:.3f}s ({w['count']:.0f})" for what, w in waits.items()
    )


def steady_lines(st: Mapping[str, Any] | None) -> list[str]:
    if not st:
        return []
    return [
        "",
        f"  steady state: {st['jobs']} running jobs, quiet {st['waited']:.0f}s after all ran, then "
        f"{st['seconds']:.0f}s: operator CPU {st['cpu_percent']:.2f}% of one core "
        f"({st['reconciles']:.0f} reconciles; {st['changes_seen']} pod or job changes seen meanwhile)",
        f"    {fmt_lag('one change (a Master exits 0): patch sent → job Succeeded', st['change_from_patch'])}",
        f"    {fmt_lag('one change: Master seen Succeeded → job Succeeded', st['change_from_pod'])}",
    ]


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
    p.add_argument(
        "--nodes",
        type=int,
        default=0,
        help="kwok nodes, 110 pods each (default: as many as the pods need, +10%%)",
    )
    p.add_argument("--concurrency", type=int, default=50, help="creates in flight at once (default 50)")
    p.add_argument(
        "--namespaces",
        type=int,
        default=1,
        help="spread the jobs (and the plain client's pods) over this many namespaces (default 1). "
        "kube-scheduler's default topology spreading looks at every Service of a pod's namespace "
        "for each pod it places, so "
        "tens of thousands of per-replica Services in one namespace make the scheduler the floor",
    )
    own = operator_main.parser().parse_args([])
    p.add_argument(
        "--qps",
        type=float,
        default=own.kube_api_qps,
        help=f"operator --kube-api-qps (default: the operator's own, {own.kube_api_qps:g})",
    )
    p.add_argument(
        "--burst",
        type=int,
        default=own.kube_api_burst,
        help=f"operator --kube-api-burst (default: the operator's own, {own.kube_api_burst})",
    )
    p.add_argument(
        "--workers",
        type=int,
        default=own.max_concurrent_reconciles,
        help="operator --max-concurrent-reconciles (default: the operator's own, "
        f"{own.max_concurrent_reconciles})",
    )
    p.add_argument(
        "--also-default-limits",
        action="store_true",
        help="run the operator phase again at client-go's default limits (qps 20, burst 30), which "
        "many operators keep; slow",
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
        default="none",
        help="the operator's --gang-scheduler (default none: with auto, this cluster's native gangs, "
        "kube-scheduler's gang plugin takes ten times the CPU of plain scheduling and becomes the floor)",
    )
    p.add_argument(
        "--scheduler-qps",
        type=float,
        default=1000.0,
        help="kube-scheduler's --kube-api-qps (burst twice that; default 1000): its own default, 50, "
        "would make the scheduler the floor",
    )
    p.add_argument(
        "--fairness",
        action="store_true",
        help="then as many new jobs again while the running ones finish: status lag under a burst",
    )
    p.add_argument(
        "--steady",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="then measure the operator's CPU while nothing changes for SECONDS, and --changes single changes",
    )
    p.add_argument(
        "--changes", type=int, default=5, help="single changes timed in the steady state (default 5)"
    )
    p.add_argument(
        "--quiet",
        type=float,
        default=10.0,
        help="seconds without a pod or job change before the steady state is measured (default 10)",
    )
    p.add_argument(
        "--smoke",
        action="store_true",
        help="a small run of every phase (12 jobs x 2, fairness, steady state): for make test",
    )
    p.add_argument(
        "--plain-services",
        action="store_true",
        help="also time a plain client making the pods and a headless Service for each (the objects "
        "the operator makes): the floor of the per-replica Service contract",
    )
    p.add_argument(
        "--plain-writes",
        action="store_true",
        help="also time a plain client making every write the operator's jobs cost, with no operator: "
        "the TrainingJobs, the Services and pods the operator renders for them, and two status "
        "patches each (the floor of any operator making these writes)",
    )
    p.add_argument(
        "--host-names",
        choices=("PerReplica", "PerJob"),
        default="PerReplica",
        help="the jobs' spec.network.hostNames (default PerReplica): a headless Service per replica, "
        "or one per job; --plain-services makes the same Services",
    )
    p.add_argument("--skip-plain", action="store_true", help="skip the plain-client lower bound")
    p.add_argument("--skip-operator", action="store_true", help="run the plain-client lower bound only")
    p.add_argument("--audit", action="store_true", help="exact attribution from an apiserver audit log")
    p.add_argument("--json", action="store_true", help="print the figures as JSON instead of the report")
    args = p.parse_args(argv)
    if args.smoke:
        args.jobs, args.replicas, args.fairness, args.settle = 12, 2, True, 1.0
        args.plain_services = args.plain_writes = True
        args.steady, args.changes, args.quiet = args.steady or 3.0, min(args.changes, 2), min(args.quiet, 2.0)
    if not args.nodes:  # room for both waves of --fairness: the first one's Masters stay, Succeeded
        waves = 2 if args.fairness else 1
        args.nodes = math.ceil(1.1 * waves * args.jobs * args.replicas / int(kwok.NODE_CAPACITY["pods"]))
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
    # SIGTERM as Ctrl-C: the same clean stop of the operator and the cluster. Ctrl-C too when started
    # as a script's background job, which a shell starts with SIGINT ignored.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    signal.signal(signal.SIGINT, signal.default_int_handler)
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
        qps = args.scheduler_qps
        c = devcluster.start(
            devcluster.Tier.CLUSTER,
            nodes=args.nodes,
            timeout=180,
            apiserver_args=apiserver_args,
            scheduler_args=(f"--kube-api-qps={qps:g}", f"--kube-api-burst={int(2 * qps)}"),
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
            kinds = [
                "pods",
                *(["services"] if args.plain_services else []),
                *(["writes"] if args.plain_writes else []),
            ]
            for kind in kinds:
                key, base = (
                    ("plain", PLAIN_NAMESPACE)
                    if kind == "pods"
                    else (f"plain_{kind}", f"{PLAIN_NAMESPACE}-{kind}")
                )
                namespaces = spread(base, args.namespaces)
                figures[key] = {}
                plain_phase(c, kubeconfigs["bench"], args, figures[key], namespaces, kind=kind)
                clean(c, kubeconfigs["bench"], namespaces, args.timeout)
        if not args.skip_operator:
            limits = [(args.qps, args.burst, JOBS_NAMESPACE)]
            if args.also_default_limits:
                limits.append((*CLIENT_GO_LIMITS, f"{JOBS_NAMESPACE}-client-go"))
            figures["operator_runs"] = []
            for i, (qps, burst, base) in enumerate(limits):
                if i:
                    clean(c, kubeconfigs["bench"], spread(limits[i - 1][2], args.namespaces), args.timeout)
                run: dict[str, Any] = {}
                figures["operator_runs"].append(run)
                namespaces = spread(base, args.namespaces)
                operator_phase(c, workdir, kubeconfigs, namespaces, qps, burst, args, audit_log, run)
        completed = True
    except BenchTimeoutError as e:
        error = str(e)
    except process.StartError as e:
        error = f"a process failed: {e}"
    except client.ApiError as e:  # the figures so far are still printed
        error = f"the apiserver answered {e}"
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
