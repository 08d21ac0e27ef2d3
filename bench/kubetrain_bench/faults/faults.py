"""The faults, drawn by a seeded RNG and injected one after another while the jobs run.

=====================  ====================================================================
``node-lost``          a node dies: its kubelet, containerd, shims and containers SIGKILLed
                       (realnode.lose); ``--hold`` seconds later it boots again
                       (realnode.bring_back): containerd, then the kubelet
``containerd``         a node's containerd SIGKILLed and started again under running pods
``network-cut``        a node cut off for ``--hold`` seconds inside the node network
                       (network.NodeNetwork.cut): its pods, its InternalIP, its kubelet
``operator-kill``      the operator SIGKILLed at a random moment, started again 1-4 s later
``operator-mid-restart``  a pod of a job restarted in place evicted, and the operator
                       SIGKILLed as soon as a pod has moved to the new attempt and its barrier
                       is not open yet (its attempt label past its opened-attempt annotation),
                       or the job says Restarting; started again 1-4 s later
``apiserver``          kube-apiserver SIGKILLed; the cluster's supervisor starts it again
``evict``              a running pod of a running job evicted through the Eviction API
=====================  ====================================================================

After each fault the benchmark waits for every unfinished job to be back (Running, each of its
pods running, none going away): the recovery, in seconds from the fault's end. What each fault
may cost the jobs it touched (the jobs with a pod on the node, or the evicted pod's) is
:data:`MAY_CHARGE`: the classes of the failures it may cause.
"""

from __future__ import annotations

import os
import random
import signal
import time
from collections.abc import Callable, Sequence
from typing import Any

import attrs

from kubetrain.api import naming
from kubetrain.devcluster import cluster as devcluster
from kubetrain.devcluster import kwok, process, realnode
from kubetrain_bench import console
from kubetrain_bench.faults.observe import Observed

KINDS = (
    "node-lost",
    "containerd",
    "network-cut",
    "operator-kill",
    "operator-mid-restart",
    "apiserver",
    "evict",
)
# What a fault may cost the jobs it touched, by failure class. A lost or cut-off node's pods are
# disrupted (Infrastructure), and their peers elsewhere may crash first on the broken connection
# (UserCode: an exit code the operator cannot tell from a bug, and must not guess at). An evicted
# pod is disrupted. The other faults must cost nothing: the containers run on through them.
MAY_CHARGE: dict[str, frozenset[str]] = {
    "node-lost": frozenset({"Infrastructure", "UserCode"}),
    "network-cut": frozenset({"Infrastructure", "UserCode"}),
    "evict": frozenset({"Infrastructure", "UserCode"}),
    "operator-mid-restart": frozenset({"Infrastructure", "UserCode"}),
    "containerd": frozenset(),
    "operator-kill": frozenset(),
    "apiserver": frozenset(),
}
# Faults that must charge the job they touched at least once.
MUST_CHARGE = frozenset({"evict", "operator-mid-restart"})


@attrs.frozen(kw_only=True)
class Injected:
    """One fault: what, on what, which jobs it touched, and when (``time.time()``)."""

    kind: str
    target: str
    jobs: tuple[str, ...]
    start: float
    end: float
    recovered: float | None = None  # seconds from ``end`` to every job back; None: not back
    note: str = ""


class Operator:
    """The operator process, SIGKILLed and started again (its argv and probe port kept)."""

    def __init__(self, start: Callable[[], process.Process]) -> None:
        self._start = start
        self.proc = start()
        self.kills = 0

    def kill(self) -> None:
        assert self.proc.pid is not None
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.stop()  # reaped
        self.kills += 1

    def restart(self) -> None:
        self.proc = self._start()

    def stop(self) -> None:
        self.proc.stop()


class Injector:
    """Draws faults with ``rng`` and injects them into ``c``, its operator and its jobs."""

    def __init__(
        self,
        c: devcluster.Cluster,
        op: Operator,
        observed: Observed,
        namespace: str,
        rng: random.Random,
        *,
        hold: float,
        recover_timeout: float,
    ) -> None:
        self.c, self.op, self.observed, self.ns, self.rng = c, op, observed, namespace, rng
        self.hold, self.recover_timeout = hold, recover_timeout
        assert c.network is not None
        self.net = c.network

    def inject(self, kind: str, active: Sequence[str], in_place: Sequence[str]) -> Injected:
        """Inject ``kind`` now, into the jobs ``active`` (``in_place``: those restarted in place);
        wait for the jobs to be back."""
        start = time.time()
        target, jobs, note = getattr(self, "_" + kind.replace("-", "_"))(active, in_place)
        end = time.time()
        recovered = self._recovered(active, end)
        done = Injected(
            kind=kind, target=target, jobs=jobs, start=start, end=end, recovered=recovered, note=note
        )
        back = "not back" if recovered is None else f"back in {recovered:.1f} s"
        console.log(f"    {kind} on {target} (jobs {', '.join(jobs) or '-'}): {back}{note and '; ' + note}")
        return done

    # The faults: each returns its target, the jobs it touched and a note.

    def _node_lost(self, active: Sequence[str], _in_place: Sequence[str]) -> tuple[str, tuple[str, ...], str]:
        node = self.rng.choice(self.c.real_nodes)
        jobs = self._jobs_on(node.name, active)
        realnode.lose(node, self.net.slot)
        self.observed.wait(self.hold)
        realnode.bring_back(node)
        self._node_ready(node.name)
        return node.name, jobs, f"down {self.hold:.0f} s"

    def _containerd(
        self, active: Sequence[str], _in_place: Sequence[str]
    ) -> tuple[str, tuple[str, ...], str]:
        node = self.rng.choice(self.c.real_nodes)
        jobs = self._jobs_on(node.name, active)
        realnode.restart_containerd(node)
        return node.name, jobs, ""

    def _network_cut(
        self, active: Sequence[str], _in_place: Sequence[str]
    ) -> tuple[str, tuple[str, ...], str]:
        node = self.rng.choice(self.c.real_nodes)
        jobs = self._jobs_on(node.name, active)
        self.net.cut(node.index, realnode.kubelet_pid(node))
        try:
            self.observed.wait(self.hold)
        finally:
            self.net.restore(node.index)
        self._node_ready(node.name)
        return node.name, jobs, f"cut {self.hold:.0f} s"

    def _operator_kill(
        self, _active: Sequence[str], _in_place: Sequence[str]
    ) -> tuple[str, tuple[str, ...], str]:
        self.observed.wait(self.rng.uniform(0, 3))
        self.op.kill()
        down = self.rng.uniform(1, 4)
        self.observed.wait(down)
        self.op.restart()
        return "operator", (), f"down {down:.1f} s"

    def _operator_mid_restart(
        self, active: Sequence[str], in_place: Sequence[str]
    ) -> tuple[str, tuple[str, ...], str]:
        job = self.rng.choice(list(in_place) or list(active))
        pod = self._evict_pod(job)
        seen = self._mid_restart(job)
        self.op.kill()
        down = self.rng.uniform(1, 4)
        self.observed.wait(down)
        self.op.restart()
        return f"operator ({pod} evicted)", (job,), f"killed at: {seen}; down {down:.1f} s"

    def _apiserver(
        self, _active: Sequence[str], _in_place: Sequence[str]
    ) -> tuple[str, tuple[str, ...], str]:
        apiserver = next(p for p in self.c.processes if p.name == "kube-apiserver")
        assert apiserver.pid is not None
        os.killpg(apiserver.pid, signal.SIGKILL)
        started = time.monotonic()
        self.observed.wait(1)
        process.wait_until(
            "kube-apiserver back",
            lambda: self.c.kubectl("get", "--raw", "/readyz", check=False).returncode == 0,
            timeout=120,
            interval=0.5,
        )
        return "kube-apiserver", (), f"back in {time.monotonic() - started:.1f} s"

    def _evict(self, active: Sequence[str], _in_place: Sequence[str]) -> tuple[str, tuple[str, ...], str]:
        job = self.rng.choice(list(active))
        return self._evict_pod(job), (job,), ""

    # What they need.

    def _evict_pod(self, job: str) -> str:
        pods = [p for p in self._pods(job) if _running(p)]
        if not pods:
            return "-"
        pod = self.rng.choice(sorted(pods, key=lambda p: str(p["metadata"]["name"])))
        name = str(pod["metadata"]["name"])
        kwok.evict_pod(self.c, self.ns, name)
        return name

    def _mid_restart(self, job: str, timeout: float = 30) -> str:
        """Wait until a pod of ``job`` has moved to a new attempt whose barrier is not open yet, or the
        job says Restarting; what was seen."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for pod in self._pods(job):
                meta = pod["metadata"]
                moved = int(meta.get("labels", {}).get(naming.ATTEMPT, "0"))
                opened = meta.get("annotations", {}).get(naming.OPENED)
                if opened is not None and moved > int(opened):
                    return f"{meta['name']} moved to attempt {moved}, barrier at {opened}"
            if state(self.c, self.ns, job) == "Restarting":
                return "job Restarting"
            time.sleep(0.1)
        return "no restart seen"

    def _pods(self, job: str) -> list[dict[str, Any]]:
        return objects(self.c, "pods", self.ns, job, check=False)

    def _jobs_on(self, node: str, active: Sequence[str]) -> tuple[str, ...]:
        return tuple(j for j in active if any(p["spec"].get("nodeName") == node for p in self._pods(j)))

    def _node_ready(self, node: str) -> None:
        def ready() -> bool:
            got = self.c.get(f"/api/v1/nodes/{node}", check=False) or {}
            self.observed.poll()
            conditions = got.get("status", {}).get("conditions", [])
            return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)

        process.wait_until(f"{node} Ready again", ready, timeout=120, interval=1)

    def _recovered(self, active: Sequence[str], since: float) -> float | None:
        """Seconds from ``since`` until every job of ``active`` is finished or back running."""
        deadline = time.monotonic() + self.recover_timeout
        while time.monotonic() < deadline:
            if all(self.back(j) for j in active):
                return time.time() - since
            self.observed.wait(1)
        return None

    def back(self, job: str) -> bool:
        obj = self.c.trainingjob(self.ns, job)
        if obj is None:
            return False
        state = obj.get("status", {}).get("state")
        if state in ("Succeeded", "Failed"):
            return True
        want = sum(int(rs.get("replicas", 1)) for rs in obj["spec"]["replicaSpecs"].values())
        pods = self._pods(job)
        return state == "Running" and len(pods) == want and all(_running(p) for p in pods)


def _running(pod: dict[str, Any]) -> bool:
    if pod["metadata"].get("deletionTimestamp") or pod.get("status", {}).get("phase") != "Running":
        return False
    statuses = pod.get("status", {}).get("containerStatuses") or []
    return bool(statuses) and all("running" in (s.get("state") or {}) for s in statuses)


def draw(rng: random.Random, kinds: Sequence[str], count: int) -> list[str]:
    """``count`` faults of ``kinds``: each kind once first (as far as ``count`` goes), in a random
    order, then at random — so a short run still meets every kind it can."""
    first = list(kinds)
    rng.shuffle(first)
    return (first + [rng.choice(list(kinds)) for _ in range(max(0, count - len(first)))])[:count]


# The bench polls jobs and pods many times a second: through the API (devcluster's get), not a
# kubectl process per look (60 ms of CPU each, which the jobs under test lacked).
def state(c: devcluster.Cluster, namespace: str, name: str) -> str:
    """The job's ``status.state``; "" when unknown."""
    return str(((c.trainingjob(namespace, name) or {}).get("status") or {}).get("state", ""))


def objects(
    c: devcluster.Cluster, kind: str, namespace: str, job: str, *, check: bool = True
) -> list[dict[str, Any]]:
    """The pods or services of ``job``; without ``check``, none when the apiserver does not answer."""
    got = c.get(
        f"/api/v1/namespaces/{namespace}/{kind}", {"labelSelector": f"{naming.JOB_NAME}={job}"}, check=check
    )
    return list(got["items"]) if got is not None else []
