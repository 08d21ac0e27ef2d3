"""Steps redone per stop, with a checkpoint before the stop and without, and goodput, on real nodes.

The job is samples/v1beta1/pytorch-ddp.yaml (1 Master and 2 Workers: 3 ranks over the 2 real
nodes, torchrun, gloo) with ``spec.progress``, running ``ddp_train.py`` at a steady pace
(``--step-seconds``), rank 0 saving a checkpoint every ``--every`` steps to a hostPath both nodes
share and printing every step. Each run stops it ``--stops`` times and lets it resume, then lets it
finish; the same run is made with ``spec.checkpoint`` (the operator asks rank 0 to checkpoint
before each stop and waits for the answer or the grace) and without it. The stops
(``--scenarios``):

- ``suspend``: ``runPolicy.suspend`` set, then unset once the job's pods are gone;
- ``notice``: the node of rank 0's pod tainted ``aws-node-termination-handler/spot-itn``
  (NoSchedule), a spot interruption notice: the job moves off it (a new attempt, uncharged); the
  taint is removed once the next attempt has resumed;
- ``kueue``: the job waits in a Kueue queue (the Workload route) and a job of a higher priority
  class, asking for more cpu than the ClusterQueue has left, preempts it; that job sleeps a few
  seconds and ends, and Kueue admits the first again.

Each stop is made when rank 0 has done a step at a chosen distance past its last periodic
checkpoint: the stops' phases are spread evenly over a checkpoint period (for 3 stops of a
50-step period: 8, 25 and 42 steps past it), at least half a period after the attempt resumed,
so that a stop without a checkpoint throws away half a period on average, plus the steps run
while the stop is carried out.

From rank 0's own log (checkpoint_logs.py): the steps each attempt had done when it stopped and
the step the next resumed from (redone = the difference), and the share of the job's time spent
in steps that were kept; against it, the share ``status.goodput`` reports, both over the same
window (the job's creation to ``status.goodput.accountedTime``). From the watches
(checkpoint_watch.py), when each part of a checkpoint before a stop happened: the request in the
status, its annotation on the pod, rank 0's answer, the agent's line carrying it, the operator's
reading of it, the pod's deletion, rank 0's last step.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import pathlib
import shutil
import statistics
import tempfile
import time
from collections.abc import Iterator
from typing import Any

import attrs

from kubetrain.api import naming
from kubetrain.devcluster import cluster as devcluster
from kubetrain.devcluster import dev, kueue, process
from kubetrain_bench import ROOT, console, operator_process, samples
from kubetrain_bench import checkpoint_logs as logs_
from kubetrain_bench.checkpoint_watch import NodeLogs, Recorded, Watch, at, parse_time

NAMESPACE = "checkpoint"
SCENARIOS = ("suspend", "notice", "kueue")
# with: spec.checkpoint; without: none; paused: spec.checkpoint, and rank 0 pauses after it answers
VARIANTS = ("with", "without", "paused")
NOTICE_TAINT = "aws-node-termination-handler/spot-itn"
SCRIPT = "/opt/kubetrain/examples/ddp_train.py"
# Kueue: a ClusterQueue of 1 cpu; the job's 3 pods ask 200m each (and rank 0's agent 50m); the
# preempting job's one pod asks 500m, which fits only if the job goes.
QUOTA, RANK_CPU, URGENT_CPU = "1", "200m", "500m"
LOW, HIGH = "checkpoint-low", "checkpoint-high"
URGENT_SECONDS = 3
CONTAINERS = {"pytorch", naming.AGENT}


@attrs.define
class Params:
    stops: int
    every: int
    step_seconds: float
    steps: int
    grace: int
    pause: float
    termination_grace: int
    progress_interval: float
    keep: pathlib.Path | None = None


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--stops", type=int, default=3, help="stops per run (N)")
    p.add_argument("--every", type=int, default=50, help="the periodic checkpoint's period in steps (K)")
    p.add_argument("--step-seconds", type=float, default=0.1, help="each step's length (ddp_train.py's pace)")
    p.add_argument("--steps", type=int, help="the job's steps (default: 3 K per stop, and 2 K)")
    p.add_argument(
        "--scenarios", default=",".join(SCENARIOS), help=f"comma-separated: {', '.join(SCENARIOS)}"
    )
    p.add_argument(
        "--variants",
        default="with,without,paused",
        help="comma-separated: with (spec.checkpoint), without, paused (spec.checkpoint, and rank 0 "
        "pauses after it answers, up to --pause seconds)",
    )
    p.add_argument("--grace", type=int, default=60, help="spec.checkpoint.graceSeconds")
    p.add_argument("--pause", type=float, default=30.0, help="ddp_train.py --pause-after-answer, for paused")
    p.add_argument(
        "--termination-grace", type=int, default=10, help="the pods' terminationGracePeriodSeconds"
    )
    p.add_argument(
        "--progress-interval", type=float, default=5.0, help="the operator's --progress-interval (seconds)"
    )
    p.add_argument(
        "--keep",
        type=pathlib.Path,
        help="write into this directory what each run saw (rank 0's and its agent's lines, the job's "
        "and the pods' changes as watched) and the operator's log",
    )
    p.add_argument(
        "--report",
        type=pathlib.Path,
        help="no cluster: print the figures of the runs a --keep directory holds",
    )
    p.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = p.parse_args()
    params = Params(
        stops=args.stops,
        every=args.every,
        step_seconds=args.step_seconds,
        steps=args.steps or (3 * args.stops + 2) * args.every,
        grace=args.grace,
        pause=args.pause,
        termination_grace=args.termination_grace,
        progress_interval=args.progress_interval,
        keep=args.keep,
    )
    if params.keep is not None:
        params.keep.mkdir(parents=True, exist_ok=True)
        (params.keep / "params.json").write_text(json.dumps(_plain(params)))
    scenarios = [s for s in args.scenarios.split(",") if s]
    variants = [v for v in args.variants.split(",") if v]
    if args.report is not None:
        kept = args.report / "params.json"
        if kept.exists():
            params = Params(**json.loads(kept.read_text()))
        replayed = [
            replay(path, params)
            for s in scenarios
            for v in variants
            if (path := args.report / f"{s}-{v}.jsonl").exists()
        ]
        report(params, replayed, as_json=args.json)
        return
    console.log(f"==> {params}")
    console.log("==> start a control plane with two real nodes (images built or reused)")
    c = devcluster.start(
        devcluster.Tier.CLUSTER, nodes=0, real_nodes=2, root=ROOT, timeout=600, seed_images=True
    )
    runs: list[dict[str, Any]] = []
    try:
        c.install_crds(ROOT / "config")
        c.kubectl("create", "namespace", NAMESPACE)
        c.kubectl("wait", "--for=create", "--timeout=60s", "serviceaccount/default", "-n", NAMESPACE)
        with contextlib.ExitStack() as stack:
            if "kueue" in scenarios:
                started = time.monotonic()
                proc = kueue.start(c, timeout=180)
                stack.callback(kueue.stop, c, proc)
                stack.enter_context(_queue(c))
                console.log(f"    Kueue running and its queue active in {time.monotonic() - started:.1f} s")
            port = process.free_port()
            argv = dev.operator_argv(
                c,
                f"--health-probe-bind-address=127.0.0.1:{port}",
                "--metrics-bind-address=0",
                f"--progress-interval={params.progress_interval:g}",
            )
            op = operator_process.start(argv, c.workdir / "logs" / "operator.log", port)
            stack.callback(op.stop)
            for scenario in scenarios:
                for variant in variants:
                    runs.append(Run(c, scenario, variant, params).measure())
    finally:
        if params.keep is not None:
            for log in (c.workdir / "logs").glob("*.log"):
                if log.name.startswith(("operator", "kueue")):
                    shutil.copy(log, params.keep / log.name)
        c.stop()
    report(params, runs, as_json=args.json)


@contextlib.contextmanager
def _queue(c: devcluster.Cluster) -> Iterator[None]:
    """A ClusterQueue of :data:`QUOTA` cpu that preempts lower priorities, its LocalQueue in the
    namespace, and the two priority classes."""
    kueue.manage(c, NAMESPACE)
    objects: list[dict[str, Any]] = [
        {"apiVersion": kueue.API_VERSION, "kind": "ResourceFlavor", "metadata": {"name": "checkpoint"}},
        {
            "apiVersion": kueue.API_VERSION,
            "kind": "ClusterQueue",
            "metadata": {"name": "checkpoint"},
            "spec": {
                "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": NAMESPACE}},
                "preemption": {"withinClusterQueue": "LowerPriority"},
                "resourceGroups": [
                    {
                        # Memory too: rank 0's agent asks for some (requests equal to limits).
                        "coveredResources": ["cpu", "memory"],
                        "flavors": [
                            {
                                "name": "checkpoint",
                                "resources": [
                                    {"name": "cpu", "nominalQuota": QUOTA},
                                    {"name": "memory", "nominalQuota": "64Gi"},
                                ],
                            }
                        ],
                    }
                ],
            },
        },
        {
            "apiVersion": kueue.API_VERSION,
            "kind": "LocalQueue",
            "metadata": {"name": "checkpoint", "namespace": NAMESPACE},
            "spec": {"clusterQueue": "checkpoint"},
        },
        *(
            {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": n},
                "value": v,
            }
            for n, v in ((LOW, 100), (HIGH, 1000))
        ),
    ]
    c.kubectl("apply", "--server-side", "-f", "-", input="\n".join(json.dumps(o) for o in objects))
    process.wait_until(
        "the LocalQueue to be active",
        lambda: (
            "True"
            in c.kubectl(
                "get",
                "localqueues.kueue.x-k8s.io",
                "checkpoint",
                "-n",
                NAMESPACE,
                "-o",
                'jsonpath={.status.conditions[?(@.type=="Active")].status}',
                check=False,
            ).stdout
        ),
        timeout=60,
        interval=0.5,
    )
    try:
        yield
    finally:
        for n in (LOW, HIGH):
            c.kubectl("delete", "priorityclass", n, "--ignore-not-found", check=False)


def job(name: str, variant: str, scenario: str, params: Params, shared: str) -> dict[str, Any]:
    """The DDP sample as this run makes it."""
    out = samples.load("v1beta1", "pytorch-ddp")
    out["metadata"]["name"] = name
    spec = out["spec"]
    spec["progress"] = {}  # no hang deadline: only the first rank has an agent
    if variant in ("with", "paused"):
        spec["checkpoint"] = {"graceSeconds": params.grace}
    spec["runPolicy"] = {"backoffLimit": 10, "cleanPodPolicy": "None"}
    if scenario == "kueue":
        spec["runPolicy"]["schedulingPolicy"] = {"queue": "checkpoint", "priorityClass": LOW}
    flags = [
        f"--steps={params.steps}",
        "--checkpoint=/checkpoint",
        f"--checkpoint-every={params.every}",
        f"--step-seconds={params.step_seconds:g}",
        "--log-every=1",
    ]
    if variant == "paused":
        flags.append(f"--pause-after-answer={params.pause:g}")
    for rs in spec["replicaSpecs"].values():
        pod = rs["template"]["spec"]
        main = pod["containers"][0]
        main["command"] = ["torchrun", SCRIPT, *flags]
        main["volumeMounts"] = [{"name": "checkpoint", "mountPath": "/checkpoint"}]
        if scenario == "kueue":
            main["resources"] = {"requests": {"cpu": RANK_CPU}}
        pod["volumes"] = [{"name": "checkpoint", "hostPath": {"path": shared, "type": "Directory"}}]
        pod["terminationGracePeriodSeconds"] = params.termination_grace
    return out


def urgent_job(name: str) -> dict[str, Any]:
    """A one-pod job of the higher priority class that asks for :data:`URGENT_CPU` and sleeps."""
    return {
        "apiVersion": "training.kubetrain.dev/v1beta1",
        "kind": "TrainingJob",
        "metadata": {"name": name},
        "spec": {
            "framework": {"name": "generic"},
            "runPolicy": {"schedulingPolicy": {"queue": "checkpoint", "priorityClass": HIGH}},
            "replicaSpecs": {
                "Main": {
                    "replicas": 1,
                    "template": {
                        "spec": {
                            "terminationGracePeriodSeconds": 1,
                            "containers": [
                                {
                                    "name": "main",
                                    "image": "kubetrain.local/examples:v1",
                                    "command": ["sleep", str(URGENT_SECONDS)],
                                    "resources": {"requests": {"cpu": URGENT_CPU}},
                                }
                            ],
                        }
                    },
                }
            },
        },
    }


class Run:
    """One job, stopped ``params.stops`` times by ``scenario`` and resumed, with or without
    ``spec.checkpoint`` (``variant``)."""

    def __init__(self, c: devcluster.Cluster | None, scenario: str, variant: str, params: Params) -> None:
        self.scenario, self.variant, self.params = scenario, variant, params
        self.name = f"{scenario}-{variant}"
        self.rank0 = f"{self.name}-master-0"
        if c is not None:  # else a run read back (replay)
            self.c = c
            self.logs = NodeLogs(c, NAMESPACE, self.rank0 + "_", CONTAINERS)
        self.pods: Recorded = Recorded()
        self.jobs: Recorded = Recorded()
        self.rank0_lines: list[tuple[datetime.datetime, str, str]] = []  # (when, uid, text)
        self.agent_lines: list[tuple[datetime.datetime, str]] = []
        self.triggers: list[dict[str, Any]] = []

    def measure(self) -> dict[str, Any]:
        p = self.params
        console.log(
            f"==> {self.scenario}, {self.variant}: {p.stops} stops, a checkpoint every {p.every} steps "
            f"of {p.step_seconds:g} s, {p.steps} steps"
        )
        shared = tempfile.mkdtemp(prefix="kubetrain-checkpoint-")
        os.chmod(shared, 0o755)
        pods = Watch(self.c, "pods", NAMESPACE, "-l", f"{naming.JOB_NAME}={self.name}")
        jobs = Watch(
            self.c,
            "trainingjobs.v1beta1.training.kubetrain.dev",
            NAMESPACE,
            "--field-selector",
            f"metadata.name={self.name}",
        )
        self.pods, self.jobs = pods, jobs
        started = time.monotonic()
        final: dict[str, Any] | None = None
        try:
            spec = job(self.name, self.variant, self.scenario, p, shared)
            self.c.kubectl("create", "-n", NAMESPACE, "-f", "-", input=json.dumps(spec))
            for i in range(p.stops):
                segs = self._wait_steps(i)
                target = self._target(i, segs[-1].resumed)
                if target > p.steps - p.every // 2:
                    console.log(
                        f"    stop {i + 1}: step {target} is too near the end ({p.steps}): no more stops"
                    )
                    break
                self._wait_step(i, target)
                self._stop(i)
            final = self._wait_finished()
        finally:
            self.c.kubectl(
                "delete",
                "trainingjobs.v1beta1.training.kubetrain.dev",
                self.name,
                "-n",
                NAMESPACE,
                "--wait=true",
                "--timeout=120s",
                check=False,
            )
            deadline = time.monotonic() + 120
            while self.c.kubectl(
                "get", "pods", "-n", NAMESPACE, "-l", f"{naming.JOB_NAME}={self.name}", "-o", "name"
            ).stdout.strip():
                if time.monotonic() > deadline:
                    break
                time.sleep(1)
            pods.stop()
            jobs.stop()
            shutil.rmtree(shared, ignore_errors=True)
            if p.keep is not None:
                self._dump(p.keep, final)
        took = time.monotonic() - started
        assert final is not None
        out = self._figures(final)
        out["seconds"] = round(took, 1)
        return out

    # --- the run ------------------------------------------------------------------------------

    def _read(self) -> None:
        """Read rank 0's new lines: as often as can be, its pod's files go a few seconds after it."""
        before = len(self.logs.lines)
        self.logs.poll()
        for when, _pod, uid, container, text in self.logs.lines[before:]:
            if container == naming.AGENT:
                self.agent_lines.append((when, text))
            else:
                self.rank0_lines.append((when, uid, text))

    def _poll(self) -> list[logs_.Segment]:
        self._read()
        return logs_.segments(self.rank0_lines)

    def _wait_steps(self, i: int, timeout: float = 600) -> list[logs_.Segment]:
        """Until attempt ``i`` of rank 0 (counting the attempts this run saw) has done a step."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            segs = self._poll()
            if len(segs) > i and segs[i].steps:
                return segs
            time.sleep(0.2)
        raise TimeoutError(f"{self.name}: rank 0 did not step in attempt {i + 1} within {timeout:.0f}s")

    def _target(self, i: int, resumed: int) -> int:
        """The step stop ``i`` is made at: ``phase`` steps past a periodic checkpoint, at least
        half a period after ``resumed``."""
        k = self.params.every
        phase = round((i + 0.5) * k / self.params.stops) % k
        target = (resumed + k // 2) // k * k + phase
        return target if target > resumed + k // 2 else target + k

    def _wait_step(self, i: int, step: int, timeout: float = 600) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            segs = self._poll()
            if len(segs) > i and segs[i].reached >= step:
                return
            time.sleep(0.05)
        raise TimeoutError(f"{self.name}: rank 0 did not reach step {step} within {timeout:.0f}s")

    def _stop(self, i: int) -> None:
        segs = self._poll()
        trigger = {"at": time.time(), "step": segs[i].reached, "uid": segs[i].uid}
        self.triggers.append(trigger)
        console.log(f"    stop {i + 1}/{self.params.stops}: at step {trigger['step']} ({self.scenario})")
        if self.scenario == "suspend":
            self._suspend(True)
            self._wait(lambda: not self._live_pods(), "the job's pods to be gone")
            trigger["gone"] = time.time()
            self._suspend(False)
            self._wait_steps(i + 1)
        elif self.scenario == "notice":
            node = self._node_of_rank0()
            trigger["node"] = node
            self.c.kubectl("taint", "node", node, f"{NOTICE_TAINT}=true:NoSchedule")
            try:
                self._wait_steps(i + 1)
            finally:
                self.c.kubectl("taint", "node", node, f"{NOTICE_TAINT}-", check=False)
        elif self.scenario == "kueue":
            urgent = f"urgent-{self.variant}-{i}"
            self.c.kubectl("create", "-n", NAMESPACE, "-f", "-", input=json.dumps(urgent_job(urgent)))
            try:
                self._wait_steps(i + 1)
            finally:
                self.c.kubectl(
                    "delete",
                    "trainingjobs.v1beta1.training.kubetrain.dev",
                    urgent,
                    "-n",
                    NAMESPACE,
                    "--wait=false",
                    check=False,
                )
        segs = self._poll()
        console.log(
            f"      attempt {i + 2} resumed from step {segs[i + 1].resumed} ({segs[i].reached} reached): "
            f"{segs[i].reached - segs[i + 1].resumed} redone"
        )

    def _suspend(self, value: bool) -> None:
        patch = {"spec": {"runPolicy": {"suspend": value}}}
        self.c.kubectl(
            "patch",
            "trainingjobs.v1beta1.training.kubetrain.dev",
            self.name,
            "-n",
            NAMESPACE,
            "--type=merge",
            "-p",
            json.dumps(patch),
        )

    def _live_pods(self) -> list[dict[str, Any]]:
        """The job's pods not gone yet (being deleted included)."""
        return list(self.pods.latest().values())

    def _node_of_rank0(self) -> str:
        def node() -> str | None:
            pod = self.pods.latest().get(self.rank0)
            where: str | None = (pod or {}).get("spec", {}).get("nodeName")
            return where

        self._wait(lambda: node() is not None, "rank 0's pod to be on a node")
        found = node()
        assert found is not None
        return found

    def _wait(self, probe: Any, what: str, timeout: float = 300) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self._read()
            if probe():
                return
            time.sleep(0.1)
        raise TimeoutError(f"{self.name}: {what} within {timeout:.0f}s")

    def _wait_finished(self, timeout: float = 900) -> dict[str, Any]:
        def done() -> bool:
            latest = self.jobs.latest().get(self.name) or {}
            return (latest.get("status") or {}).get("state") in ("Succeeded", "Failed")

        self._wait(lambda: (self._poll() is not None) and done(), "the job to finish", timeout)
        # The last lines, and the status's last accounting.
        time.sleep(2)
        self._poll()
        out: dict[str, Any] = json.loads(
            self.c.kubectl(
                "get", "trainingjobs.v1beta1.training.kubetrain.dev", self.name, "-n", NAMESPACE, "-o", "json"
            ).stdout
        )
        return out

    def _dump(self, keep: pathlib.Path, final: dict[str, Any] | None) -> None:
        """What the run saw, for a look afterwards and for ``--report`` (:func:`replay`): one JSON
        line per log line or change watched, and the job as it ended."""

        def stamp(t: float) -> str:
            return at(t).isoformat()

        def lean(obj: dict[str, Any]) -> dict[str, Any]:
            md = {k: v for k, v in (obj.get("metadata") or {}).items() if k != "managedFields"}
            return {**obj, "metadata": md}

        with (keep / f"{self.name}.jsonl").open("w") as f:
            f.write(json.dumps({"run": {"scenario": self.scenario, "variant": self.variant}}) + "\n")
            for trigger in self.triggers:
                f.write(json.dumps({"trigger": trigger, "time": stamp(trigger["at"])}) + "\n")
            for when, uid, text in self.rank0_lines:
                f.write(json.dumps({"time": when.isoformat(), "rank0": text, "uid": uid}) + "\n")
            for when, text in self.agent_lines:
                f.write(json.dumps({"time": when.isoformat(), "agent": text}) + "\n")
            for t, kind, obj in self.jobs.since():
                f.write(json.dumps({"time": stamp(t), "job": kind, "object": lean(obj)}) + "\n")
            for t, kind, obj in self.pods.since():
                f.write(json.dumps({"time": stamp(t), "pod": kind, "object": lean(obj)}) + "\n")
            if final is not None:
                f.write(json.dumps({"final": lean(final)}) + "\n")

    # --- the figures --------------------------------------------------------------------------

    def _figures(self, final: dict[str, Any]) -> dict[str, Any]:
        segs = logs_.segments(self.rank0_lines)
        status = final.get("status") or {}
        created = parse_time(final["metadata"]["creationTimestamp"])
        g = status.get("goodput") or {}
        accounted = parse_time(g["accountedTime"]) if g.get("accountedTime") else None
        end = accounted or segs[-1].ended or created
        from_logs = logs_.goodput(segs, created, end)
        wall = (end - created).total_seconds()
        stops = []
        for i, stop in enumerate(logs_.stops(segs)):
            record: dict[str, Any] = attrs.asdict(stop) | {"redone": stop.redone}
            if i < len(self.triggers):
                record |= {"trigger": self.triggers[i]["step"]}
                record["after"] = self._timeline(i, segs)
            stops.append(record)
        return {
            "scenario": self.scenario,
            "variant": self.variant,
            "state": status.get("state"),
            "attempts": len(segs),
            "stops": stops,
            "redone": [s["redone"] for s in stops],
            "goodput": {
                "status": {
                    "share": status.get("goodput", {}).get("share"),
                    "productive": g.get("productiveSeconds", 0),
                    "lost": g.get("lostSeconds", {}),
                    "wall": wall,
                    "computed": g.get("productiveSeconds", 0) / wall if wall > 0 else 0.0,
                },
                "logs": {
                    "productive": round(from_logs.productive, 1),
                    "redone": round(from_logs.redone, 1),
                    "wall": round(from_logs.wall, 1),
                    "share": from_logs.share,
                    **self._running_idle(segs),
                },
            },
            "checkpoint": {
                k: status.get("checkpoint", {}).get(k) for k in ("requests", "answered", "timedOut")
            },
            "restarts": status.get("restarts", {}),
        }

    def _running_idle(self, segs: list[logs_.Segment]) -> dict[str, float]:
        """Seconds the job was Running while rank 0 did no step: from each time the job turned
        Running to the attempt's first step (the containers starting: torchrun, imports, the
        rendezvous, the checkpoint loaded), and from the last step to Succeeded."""
        turned: list[datetime.datetime] = []
        succeeded: datetime.datetime | None = None
        before = None
        for t, kind, obj in self.jobs.since():
            state = (obj.get("status") or {}).get("state")
            if kind != "DELETED" and state != before:
                if state == "Running":
                    turned.append(at(t))
                elif state == "Succeeded" and succeeded is None:
                    succeeded = at(t)
                before = state
        starting = 0.0
        for seg in segs:
            began = max((t for t in turned if t <= seg.began), default=None)
            if began is not None and seg.ready is not None:
                starting += (seg.ready - began).total_seconds()
        last = segs[-1].last_step_at if segs else None
        ending = (succeeded - last).total_seconds() if succeeded and last else 0.0
        return {"running_before_first_step": round(starting, 1), "running_after_last_step": round(ending, 1)}

    def _timeline(self, i: int, segs: list[logs_.Segment]) -> dict[str, float]:
        """Seconds from the stop's trigger to each thing that followed it."""
        trigger = self.triggers[i]
        t0 = trigger["at"]
        out: dict[str, float] = {}

        def mark(name: str, when: float | None) -> None:
            if when is not None:
                out[name] = round(when - t0, 2)

        number: int | None = None
        for when, kind, obj in self.jobs.since():
            asked = ((obj.get("status") or {}).get("checkpoint") or {}).get("requested")
            if when >= t0 and kind != "DELETED" and asked:
                number = int(asked["number"])
                mark("requested", when)
                break
        if number is not None:
            for when, _kind, obj in self.pods.since():
                md = obj.get("metadata") or {}
                if (
                    when >= t0
                    and md.get("uid") == trigger["uid"]
                    and (md.get("annotations") or {}).get(naming.CHECKPOINT_REQUEST) == str(number)
                ):
                    mark("annotated", when)
                    break
            answer = segs[i].answer(number)
            if answer is not None:
                mark("answered", answer[2].timestamp())
                for said, text in self.agent_lines:
                    if said >= answer[2] and f"answered={number}" in text:
                        mark("agent", said.timestamp())
                        break
            for when, kind, obj in self.jobs.since():
                answered = int(((obj.get("status") or {}).get("checkpoint") or {}).get("answered") or 0)
                if when >= t0 and kind != "DELETED" and answered >= number:
                    mark("read", when)
                    break
        for when, _kind, obj in self.pods.since():
            md = obj.get("metadata") or {}
            if when >= t0 and md.get("uid") == trigger["uid"] and md.get("deletionTimestamp"):
                mark("deleted", when)
                break
        last = segs[i].last_step_at
        mark("last step", last.timestamp() if last else None)
        if i + 1 < len(segs):
            mark("resumed", (segs[i + 1].ready or segs[i + 1].began).timestamp())
        return out


def _plain(params: Params) -> dict[str, Any]:
    return attrs.asdict(params) | {"keep": None}


def replay(path: pathlib.Path, params: Params) -> dict[str, Any]:
    """The figures of a run from what ``--keep`` wrote of it."""
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    info = next((r["run"] for r in rows if "run" in r), None)
    scenario, variant = (info["scenario"], info["variant"]) if info else path.stem.split("-", 1)
    run = Run(None, scenario, variant, params)
    final = None
    for r in rows:
        if "trigger" in r:
            run.triggers.append(r["trigger"])
        elif "rank0" in r:
            run.rank0_lines.append((datetime.datetime.fromisoformat(r["time"]), r["uid"], r["rank0"]))
        elif "agent" in r:
            run.agent_lines.append((datetime.datetime.fromisoformat(r["time"]), r["agent"]))
        elif "job" in r or "pod" in r:
            kind = "job" if "job" in r else "pod"
            obj = r.get("object") or _summarized(kind, r)
            recorded = run.jobs if kind == "job" else run.pods
            recorded.events.append((datetime.datetime.fromisoformat(r["time"]).timestamp(), r[kind], obj))
        elif "final" in r:
            final = r["final"]
    if final is None:  # written before the job itself was kept: its last state, created when accounted first
        final = next(o for _, kind, o in reversed(run.jobs.since()) if kind != "DELETED")
        first = min(
            parse_time(g["accountedTime"])
            for _, _, o in run.jobs.since()
            if (g := (o.get("status") or {}).get("goodput"))
        )
        final["metadata"]["creationTimestamp"] = first.strftime("%Y-%m-%dT%H:%M:%SZ")
    out = run._figures(final)
    times = [t for t, _, _ in run.jobs.since()]
    out["seconds"] = round(max(times) - min(times), 1) if times else 0.0
    return out


def _summarized(kind: str, r: dict[str, Any]) -> dict[str, Any]:
    """An object from the summary an earlier ``--keep`` wrote of it."""
    if kind == "job":
        status = {k: r.get(k) for k in ("state", "checkpoint", "goodput", "progress", "restarts")}
        return {"metadata": {}, "status": {k: v for k, v in status.items() if v is not None}}
    metadata: dict[str, Any] = {"name": r["name"], "uid": r["uid"], "deletionTimestamp": r["deletion"]}
    metadata["annotations"] = {naming.CHECKPOINT_REQUEST: r["request"]} if r.get("request") else {}
    metadata["labels"] = {naming.ATTEMPT: r["attempt"]} if r.get("attempt") else {}
    return {"metadata": metadata, "spec": {"nodeName": r["node"]}, "status": {"phase": r["phase"]}}


def report(params: Params, runs: list[dict[str, Any]], *, as_json: bool) -> None:
    if as_json:
        print(json.dumps({"params": _plain(params), "runs": runs}))
        return
    p = params
    print(
        f"Checkpoint before a stop, on 2 real nodes: PyTorch DDP (3 ranks), a checkpoint every {p.every} "
        f"steps of {p.step_seconds:g} s, {p.stops} stops a run; spec.checkpoint.graceSeconds {p.grace}; "
        f"operator --progress-interval {p.progress_interval:g}"
    )
    print(
        f"  {'scenario':9} {'variant':8} {'steps redone each':>18} {'mean':>6} {'K/2':>4} "
        f"{'answered':>9} {'goodput status':>15} {'from logs':>10} {'diff':>6} {'run':>6}"
    )
    for r in runs:
        redone = r["redone"]
        mean = statistics.fmean(redone) if redone else float("nan")
        ck = r["checkpoint"]
        answered = (
            f"{ck.get('answered') or 0}/{ck.get('requests') or 0}" if r["variant"] != "without" else "-"
        )
        gs, gl = r["goodput"]["status"], r["goodput"]["logs"]
        print(
            f"  {r['scenario']:9} {r['variant']:8} {', '.join(map(str, redone)):>18} {mean:>6.1f} "
            f"{p.every / 2:>4g} {answered:>9} {100 * gs['computed']:>8.1f}% ({gs['share']}) "
            f"{100 * gl['share']:>9.1f}% {100 * (gs['computed'] - gl['share']):>+6.1f} {r['seconds']:>5.0f}s"
        )
    print("Seconds from each stop's trigger (median over the stops of a run):")
    keys = ("requested", "annotated", "answered", "agent", "read", "deleted", "last step", "resumed")
    print(f"  {'scenario':9} {'variant':8} " + " ".join(f"{k:>9}" for k in keys))
    for r in runs:
        cells = []
        for k in keys:
            values = [s["after"][k] for s in r["stops"] if k in s.get("after", {})]
            cells.append(f"{statistics.median(values):>9.2f}" if values else f"{'-':>9}")
        print(f"  {r['scenario']:9} {r['variant']:8} " + " ".join(cells))
    print("Goodput, seconds (status: productive and lost by cause; logs: in steps kept and redone):")
    for r in runs:
        gs, gl = r["goodput"]["status"], r["goodput"]["logs"]
        lost = ", ".join(f"{k} {v}" for k, v in sorted(gs["lost"].items()))
        print(
            f"  {r['scenario']:9} {r['variant']:8} wall {gs['wall']:.0f}: status productive {gs['productive']} "
            f"({lost}); logs productive {gl['productive']}, redone {gl['redone']}; Running with no "
            f"step: {gl['running_before_first_step']} before attempts' first steps, "
            f"{gl['running_after_last_step']} after the last"
        )
