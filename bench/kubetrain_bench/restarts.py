"""How long a restart takes on real nodes: from a rank's failure to every rank back in the rendezvous.

The jobs are samples/v1beta1/pytorch-ddp.yaml (1 Master + 2 Workers: 3 ranks over the 2 real
nodes) and mpi-allreduce.yaml (a Launcher whose ``mpirun`` starts 2 ranks on 2 Workers over ssh),
both restarted whole (their frameworks' scope, Job), with the last rank made to fail
``--fail-after`` seconds after each rendezvous, in every attempt below ``--restarts``. For each
restart the benchmark takes, from the ranks' own logs (their containers' timestamps), gathered
while they last:

- the failure: the ``rank N fails at step S`` line of the failing rank in that attempt;
- the return: the latest ``joined the rendezvous`` line among the ranks of the next attempt (each
  rank says its attempt right after it joins; one that says an attempt it joined before is
  counted in the next, and the benchmark says how many did: a kubelet can start a container
  restarted in place with the env of the attempt before).

It prints p50, p95 and max of the differences, for each ``--methods`` (``failurePolicy.
restartMethod``): ``Recreate`` deletes every pod and makes it again (new sandboxes, scheduled
again); ``InPlace`` moves the pods to the new attempt where they are and their kubelets restart
every container in place. MPI's ranks print to the Launcher's ``mpirun``: its log holds every
rank's lines.

``--floor`` first measures what the kubelet takes by itself to restart a bare pod in place
(floor.py), with and without an init container before its main container: the least any restart
in place can take on these nodes, whatever the operator does.
"""

from __future__ import annotations

import argparse
import datetime
import json
import pathlib
import re
import time
from typing import Any

from kubetrain.api import naming
from kubetrain.devcluster import cluster as devcluster
from kubetrain.devcluster import dev, process
from kubetrain.operator import render
from kubetrain_bench import ROOT, console, floor, operator_process, samples, stats

NAMESPACE = "restarts"
JOINED = re.compile(r"rank (\d+)/\d+ .*joined the rendezvous")
ATTEMPT = re.compile(r"rank (\d+) attempt (\d+) after")
FAILS = " fails at step "
# framework -> (sample, ranks)
JOBS = {"pytorch": ("pytorch-ddp", 3), "mpi": ("mpi-allreduce", 2)}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--restarts", type=int, default=10, help="restarts to measure")
    p.add_argument("--fail-after", type=float, default=8.0, help="seconds a rank runs before it fails")
    p.add_argument(
        "--frameworks",
        default="pytorch",
        help="comma-separated: pytorch, mpi",
    )
    p.add_argument("--methods", default="Recreate,InPlace", help="comma-separated: Recreate, InPlace")
    p.add_argument(
        "--grace",
        type=int,
        help="the pods' terminationGracePeriodSeconds (default: the sample's, Kubernetes' 30 s): how "
        "long a deleted rank that ignores SIGTERM holds a Recreate",
    )
    p.add_argument(
        "--floor",
        action="store_true",
        help="first measure the kubelet alone: a bare pod restarted in place by its own rule, "
        "with no init container and with one (bench/kubetrain_bench/floor.py)",
    )
    p.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = p.parse_args()
    console.log("==> start a control plane with two real nodes (images built or reused)")
    c = devcluster.start(
        devcluster.Tier.CLUSTER, nodes=0, real_nodes=2, root=ROOT, timeout=600, seed_images=True
    )
    op = None
    try:
        c.install_crds(ROOT / "config")
        c.kubectl("create", "namespace", NAMESPACE)
        c.kubectl("wait", "--for=create", "--timeout=60s", "serviceaccount/default", "-n", NAMESPACE)
        port = process.free_port()
        argv = dev.operator_argv(
            c, f"--health-probe-bind-address=127.0.0.1:{port}", "--metrics-bind-address=0"
        )
        op = operator_process.start(argv, c.workdir / "logs" / "operator.log", port)
        worker = samples.load("v1beta1", JOBS["mpi"][0])["spec"]["replicaSpecs"]["Worker"]["template"]
        image = worker["spec"]["containers"][0]["image"]
        figures = {
            f"kubelet, {'init' if init else 'no init'}": floor.measure(
                c, NAMESPACE, image, args.restarts, init=init
            )
            for init in ((False, True) if args.floor else ())
        }
        figures |= {
            f"{fw} {method}": measure(c, fw, method, args.restarts, args.fail_after, args.grace)
            for fw in args.frameworks.split(",")
            if fw
            for method in args.methods.split(",")
            if method
        }
    finally:
        if op is not None:
            op.stop()
        c.stop()
    report(figures, as_json=args.json)


def job(
    framework: str, method: str, restarts: int, fail_after: float, grace: int | None = None
) -> dict[str, Any]:
    """The framework's sample, restarted by ``method``, its last rank failing ``fail_after`` s into
    each of ``restarts`` attempts (its pods given ``grace`` seconds to stop, if said)."""
    sample, _ = JOBS[framework]
    out = samples.load("v1beta1", sample)
    out["spec"]["runPolicy"] = {"backoffLimit": restarts + 5}
    # Exit code 1 fails an MPI job at once (its Launcher's policy): here it is a restart.
    rule = {"name": "bench", "action": "Restart", "onExitCodes": {"values": [1]}}
    policy = out["spec"].setdefault("failurePolicy", {})
    policy["rules"] = [rule]
    policy["restartMethod"] = method
    fail = [f"--fail-after={fail_after}", f"--fail-attempts={restarts}"]
    for key, rs in out["spec"]["replicaSpecs"].items():
        if grace is not None:
            rs["template"]["spec"]["terminationGracePeriodSeconds"] = grace
        main = rs["template"]["spec"]["containers"][0]
        if framework == "pytorch":
            main["command"] = [
                "torchrun",
                "/opt/kubetrain/examples/ddp_train.py",
                "--steps=1000000000",
                *fail,
            ]
        elif key == "Launcher":  # the ranks, started over ssh, see only the env mpirun passes on
            mpirun, *rest = main["command"]
            passed = [x for name in render.RESTART_ENV for x in ("-x", name)]
            main["command"] = [mpirun, *passed, *rest, *fail]
    return out


def measure(
    c: devcluster.Cluster, framework: str, method: str, restarts: int, fail_after: float, grace: int | None
) -> list[dict[str, float]]:
    """One record per restart: seconds from the failure to every rank of the next attempt joined."""
    console.log(
        f"==> {framework}, {method}: {restarts} restarts, a rank failing {fail_after:.0f} s after each rendezvous"
        + ("" if grace is None else f", {grace} s to stop")
    )
    name, ranks = JOBS[framework]
    spec = job(framework, method, restarts, fail_after, grace)
    logs = Logs(c, name, fail_after)
    c.kubectl("apply", "-n", NAMESPACE, "-f", "-", input=json.dumps(spec))
    out: list[dict[str, float]] = []
    try:
        for attempt in range(restarts):
            failed_at, joined = logs.restart(attempt, ranks)
            took = (joined - failed_at).total_seconds()
            record = {"attempt": attempt + 1, "seconds": took}
            started = logs.started(attempt + 1, failed_at)
            said = ""
            if started is not None:
                # Whole seconds (the kubelet's startedAt): the part Kubernetes and kubetrain take.
                record["containers"] = (started - failed_at.replace(microsecond=0)).total_seconds()
                said = f" (every main container running after {record['containers']:.0f} s)"
            out.append(record)
            console.log(f"    restart {attempt + 1}/{restarts}: every rank back in {took:.2f} s{said}")
        if logs.stale:
            console.log(f"    {logs.stale} rank(s) said the attempt before the one they joined (a stale env)")
        if logs.estimated:
            console.log(
                f"    {logs.estimated} failure(s) taken as joined + {fail_after} s: their line was gone"
            )
    finally:
        c.kubectl(
            "delete", "trainingjob", name, "-n", NAMESPACE, "--wait=true", "--timeout=120s", check=False
        )
        # Its pods go after it, by the garbage collector: the next job's pods have their names,
        # and their logs must not be read as the next job's.
        deadline = time.monotonic() + 120
        while _pods(c, name) and time.monotonic() < deadline:
            time.sleep(0.5)
    return out


class Logs:
    """Every line the job's containers print, gathered while they last. They are read where the
    kubelets write them, the real nodes' pod-log files (one per container instance), which costs
    the machine nothing it measures (``kubectl logs`` for every pod, five times a second, took
    most of a core). A container restarted in place keeps its files, a deleted pod's go with it:
    so they are read over and over, and each pod's lines kept in the order of their timestamps.
    A rank prints ``joined the rendezvous``, then ``rank R attempt A``; the failing one ``fails
    at step``."""

    def __init__(self, c: devcluster.Cluster, name: str, fail_after: float = 0.0) -> None:
        self.c, self.name, self.fail_after = c, name, fail_after
        self.lines: dict[str, set[str]] = {}
        # pod -> (its attempt label, its main container's startedAt) as seen at each poll
        self.starts: dict[str, set[tuple[int, datetime.datetime]]] = {}
        self.estimated = 0  # failures whose line was gone: taken as joined + fail_after
        self.stale = 0  # ranks that said the attempt before the one they joined
        self._pods_due = 0.0
        # The files of an earlier job's pods stay on the nodes: older ones are not this job's.
        self._since = time.time()

    def restart(
        self, attempt: int, ranks: int, timeout: float = 300
    ) -> tuple[datetime.datetime, datetime.datetime]:
        """When a rank of ``attempt`` failed, and when the last rank of the next one joined."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self._poll()
            joins, fails = self._read()
            if len(joins.get(attempt + 1, {})) == ranks:
                if attempt in fails:
                    return fails[attempt], max(joins[attempt + 1].values())
                # Its log went with its pod before it was read: it failed --fail-after seconds
                # after it joined (it looks at the clock at every step, a few ms apart).
                failing = str(ranks - 1)
                if failing in joins.get(attempt, {}):
                    self.estimated += 1
                    failed = joins[attempt][failing] + datetime.timedelta(seconds=self.fail_after)
                    return failed, max(joins[attempt + 1].values())
            time.sleep(0.2)
        raise TimeoutError(f"no restart of {self.name} from attempt {attempt} within {timeout:.0f}s")

    def started(self, attempt: int, failed_at: datetime.datetime) -> datetime.datetime | None:
        """When the last pod's main container of ``attempt`` started (after ``failed_at``, to the
        second); None if one was not seen running."""
        since = failed_at.replace(microsecond=0)
        firsts = [
            min((t for a, t in seen if a == attempt and t >= since), default=None)
            for seen in self.starts.values()
        ]
        if not firsts or None in firsts:
            return None
        return max(t for t in firsts if t is not None)

    def _poll(self) -> None:
        # {namespace}_{pod}_{uid}/{container}/{restart count}.log on every real node
        for node in self.c.real_nodes:
            for path in (node.dir / "pod-logs").glob(f"{NAMESPACE}_{self.name}-*/*/*.log"):
                pod, container = path.parent.parent.name.split("_")[1], path.parent.name
                if container not in (naming.AGENT, naming.BARRIER) and _mtime(path) >= self._since:
                    self.lines.setdefault(pod, set()).update(_cri_lines(path))
        if time.monotonic() >= self._pods_due:  # an attempt runs for --fail-after seconds
            self._pods_due = time.monotonic() + 1.0
            self._poll_pods()

    def _poll_pods(self) -> None:
        for pod in _pods(self.c, self.name):
            name = pod["metadata"]["name"]
            main = pod["spec"]["containers"][0]["name"]
            for c in (pod.get("status") or {}).get("containerStatuses") or ():
                running = (c.get("state") or {}).get("running")
                if c["name"] == main and running and running.get("startedAt"):
                    attempt = int(pod["metadata"]["labels"].get(naming.ATTEMPT, "0"))
                    at = datetime.datetime.fromisoformat(running["startedAt"].replace("Z", "+00:00"))
                    self.starts.setdefault(name, set()).add((attempt, at))

    def _read(self) -> tuple[dict[int, dict[str, datetime.datetime]], dict[int, datetime.datetime]]:
        joins: dict[int, dict[str, datetime.datetime]] = {}
        fails: dict[int, datetime.datetime] = {}
        self.stale = 0
        for lines in self.lines.values():
            joined: dict[str, datetime.datetime] = {}
            last: dict[str, int] = {}  # rank -> the attempt it last joined
            current: int | None = None
            for line in sorted(lines, key=_stamp):
                if found := JOINED.search(line):
                    joined[found.group(1)] = _stamp(line)
                elif (found := ATTEMPT.search(line)) and found.group(1) in joined:
                    rank, said = found.group(1), int(found.group(2))
                    # A rank joins once per attempt: one that says an attempt it has joined
                    # already was given the env of the attempt before (lifecycle.md, "Not yet").
                    current = said if said > last.get(rank, -1) else last[rank] + 1
                    self.stale += current != said
                    last[rank] = current
                    joins.setdefault(current, {})[rank] = joined[rank]
                elif FAILS in line and current is not None:
                    fails.setdefault(current, _stamp(line))
        return joins, fails


def _pods(c: devcluster.Cluster, name: str) -> list[dict[str, Any]]:
    selector = f"training.kubetrain.dev/job-name={name}"
    items: list[dict[str, Any]] = json.loads(
        c.kubectl("get", "pods", "-n", NAMESPACE, "-l", selector, "-o", "json").stdout
    )["items"]
    return items


def _mtime(path: pathlib.Path) -> float:
    try:
        return path.stat().st_mtime
    except FileNotFoundError:
        return 0.0


def _cri_lines(path: pathlib.Path) -> list[str]:
    """``{timestamp} {line}`` for each line of a kubelet's container log file (CRI format:
    ``{timestamp} {stream} {P|F} {text}``), as ``kubectl logs --timestamps`` prints them."""
    try:
        text = path.read_text(errors="replace")
    except FileNotFoundError:  # its pod went while it was listed
        return []
    out = []
    for line in text.splitlines():
        stamp, _, rest = line.partition(" ")
        out.append(f"{stamp} {rest.split(' ', 2)[-1]}")
    return out


def _stamp(line: str) -> datetime.datetime:
    """The RFC 3339 timestamp ``kubectl logs --timestamps`` puts first (nanoseconds cut to micro)."""
    text = line.split(" ", 1)[0].rstrip("Z")
    whole, _, fraction = text.partition(".")
    return datetime.datetime.fromisoformat(f"{whole}.{(fraction + '000000')[:6]}+00:00")


def report(figures: dict[str, list[dict[str, float]]], *, as_json: bool) -> None:
    def summary(key: str) -> dict[str, dict[str, float]]:
        return {
            fw: {k: round(v, 2) for k, v in stats.percentiles([f[key] for f in runs if key in f]).items()}
            for fw, runs in figures.items()
        }

    seconds, containers = summary("seconds"), summary("containers")
    if as_json:
        print(json.dumps({"restarts": figures, "seconds": seconds, "containers": containers}))
        return
    print("Restarts on 2 real nodes (scope Job), recreated or in place: seconds from a rank's failure")
    print("to every rank of the next attempt in the rendezvous, and (containers) to every main")
    print("container of it running, to the second")
    print(f"  {'framework, method':20} {'count':>5} {'p50':>7} {'p95':>7} {'max':>7} {'containers p50':>15}")
    for fw, s in seconds.items():
        print(
            f"  {fw:20} {s.get('count', 0):>5} {s.get('p50', 0):>7} {s.get('p95', 0):>7} {s.get('max', 0):>7}"
            f" {containers[fw].get('p50', '-'):>15}"
        )
