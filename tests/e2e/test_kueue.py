"""TrainingJobs in a Kueue queue as plain-pod groups (the operator's ``--kueue=pods``), against real
Kueue (the release hack/build-schedulers.sh builds); test_kueue_workload.py has the Workload route.

``runPolicy.schedulingPolicy.queue`` names a Kueue LocalQueue; the operator makes each gang a
Kueue plain-pod group. Here a ClusterQueue has cpu for exactly one job at a time: the second
job waits with its pods gated and says so (``Scheduled`` False, ``Queued``), and runs once the
first one's quota is released — which takes the operator marking a finished job's pods and
Kueue finishing the group's Workload. With preemption, a higher-priority job evicts a running
one: the victim's restart is the infrastructure's fault, and it waits in the queue again.

Both depend on Kueue letting go of pods: it holds every pod of a group (a finalizer) until
the group's Workload is finished, which takes all of its pods to have ended and one marked
``retriable-in-group: "false"``. So the operator marks the pods it is done with — a finished
job's unfinished ones, and all of an attempt a restart left behind — and a deleted pod must
end as on a kubelet (reported Failed before it goes), which kwok's pod-delete stage does.

Kueue runs as a local process for this module only, managing pods in namespaces labelled
for it (:mod:`kubetrain.devcluster.kueue`); the operator runs as users get it, with native
gangs: Kueue holds a gang back until its quota is reserved, then kube-scheduler places it whole. The label and annotation names are spelled out here,
not taken from the operator, so that they are checked against Kueue's own.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from testkit import queues
from testkit.jobs import condition, create, events, pods, running_pods, status, wait_state
from testkit.kube import eventually
from testkit.queues import CPU, PODS, finish_all, queued_job, reserved_cpu, true

from kubetrain.devcluster import cluster as devcluster

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
GROUP_LABEL = "kueue.x-k8s.io/pod-group-name"
TOTAL_COUNT = "kueue.x-k8s.io/pod-group-total-count"
GATE = "kueue.x-k8s.io/admission"


@pytest.fixture(scope="module", autouse=True)
def running_operator(cluster: devcluster.Cluster) -> Iterator[None]:
    with queues.kueue_and_operator(cluster, "--kueue=pods"):
        yield


@pytest.fixture
def queue(cluster: devcluster.Cluster, namespace: str) -> Iterator[str]:
    """A LocalQueue in ``namespace`` whose ClusterQueue holds cpu for one job; its name."""
    yield from queues.local_queue(cluster, namespace)


@pytest.fixture
def preempting_queue(cluster: devcluster.Cluster, namespace: str) -> Iterator[str]:
    """The same, with preemption ``withinClusterQueue: LowerPriority``."""
    yield from queues.local_queue(cluster, namespace, preemption=True)


def gated(pod: dict[str, Any]) -> bool:
    return bool(pod["spec"].get("schedulingGates")) and not pod["spec"].get("nodeName")


def gated_pods(
    c: devcluster.Cluster, namespace: str, name: str, timeout: float = 60
) -> dict[str, dict[str, Any]]:
    """The job's pods of its current attempt, once there are all of them and all are gated."""

    def probe() -> dict[str, dict[str, Any]] | None:
        live = {
            n: p for n, p in pods(c, namespace, name).items() if not p["metadata"].get("deletionTimestamp")
        }
        return live if len(live) == PODS and all(gated(p) for p in live.values()) else None

    return eventually(f"{PODS} gated pods of {name}", probe, timeout=timeout)


def queued(c: devcluster.Cluster, namespace: str, name: str, queue: str) -> dict[str, Any]:
    """The job's Scheduled condition once it says the job waits in ``queue``."""

    def probe() -> dict[str, Any] | None:
        cond = next(
            (x for x in status(c, namespace, name).get("conditions", []) if x["type"] == "Scheduled"), None
        )
        return cond if cond is not None and cond["status"] == "False" and cond["reason"] == "Queued" else None

    cond = eventually(f"{name} to show Scheduled False Queued", probe, timeout=30)
    assert f"queued in {queue}" in cond["message"], cond
    return cond


def workload(c: devcluster.Cluster, namespace: str, group: str) -> dict[str, Any] | None:
    """The Kueue Workload of a pod group (Kueue names it after the group)."""
    return queues.get(c, "workload", group, namespace)


def test_a_second_job_waits_in_the_queue_until_the_first_one_finishes(
    cluster: devcluster.Cluster, namespace: str, queue: str
) -> None:
    # The first job fits the quota: Kueue admits its group and lifts the gates.
    first = create(cluster, namespace, queued_job("first", queue))
    running = running_pods(cluster, namespace, first, PODS)
    wait_state(cluster, namespace, first, "Running")
    for pod in running.values():
        labels, annotations = pod["metadata"]["labels"], pod["metadata"]["annotations"]
        assert labels[QUEUE_LABEL] == queue
        assert labels[GROUP_LABEL] == "first-gang-0"
        assert annotations[TOTAL_COUNT] == str(PODS)
        assert not pod["spec"].get("schedulingGates")
    wl = eventually(
        "the first job's Workload to be admitted", lambda: _admitted(cluster, namespace, "first-gang-0")
    )
    assert sum(ps["count"] for ps in wl["spec"]["podSets"]) == PODS
    eventually("the quota to be reserved", lambda: reserved_cpu(cluster, queue) == PODS * CPU, timeout=30)

    # The second does not: its pods exist, gated, and the job says it waits in the queue.
    second = create(cluster, namespace, queued_job("second", queue))
    waiting = gated_pods(cluster, namespace, second)
    assert {p["spec"]["schedulingGates"][0]["name"] for p in waiting.values()} == {GATE}
    cond = queued(cluster, namespace, second, queue)
    assert cond["message"] == f"queued in {queue}: {PODS} of {PODS} pods wait for admission"
    assert status(cluster, namespace, second)["state"] not in ("Running", "Succeeded")
    pending = workload(cluster, namespace, "second-gang-0")
    assert pending is not None
    assert not true(pending, "QuotaReserved")
    # Still waiting a while later: nothing but the first job's end lets it in.
    time.sleep(3)
    assert all(gated(p) for p in pods(cluster, namespace, second).values())

    # The first ends: it succeeds, Kueue finishes its Workload and the quota goes to the second.
    finish_all(cluster, namespace, first)
    wait_state(cluster, namespace, first, "Succeeded")
    succeeded_at = time.monotonic()
    eventually(
        "the first job's Workload to finish",
        lambda: true(workload(cluster, namespace, "first-gang-0"), "Finished"),
        timeout=30,
    )
    running_pods(cluster, namespace, second, PODS)
    ungated_after = time.monotonic() - succeeded_at
    s = wait_state(cluster, namespace, second, "Running")
    assert condition(s, "Scheduled")["status"] == "True"
    eventually("the quota to be reserved", lambda: reserved_cpu(cluster, queue) == PODS * CPU, timeout=30)
    print(f"\nsecond job running {ungated_after:.1f}s after the first succeeded")

    finish_all(cluster, namespace, second)
    wait_state(cluster, namespace, second, "Succeeded")
    eventually("the quota to be free", lambda: reserved_cpu(cluster, queue) == 0, timeout=30)


def _admitted(c: devcluster.Cluster, namespace: str, group: str) -> dict[str, Any] | None:
    wl = workload(c, namespace, group)
    return wl if true(wl, "Admitted") else None


def test_a_higher_priority_job_preempts_a_running_one_which_waits_and_runs_after_it(
    cluster: devcluster.Cluster, namespace: str, preempting_queue: str
) -> None:
    queue = preempting_queue
    low, high = f"{namespace}-low", f"{namespace}-high"
    classes = queues.priority_classes(cluster, **{low: 100, high: 1000})
    next(classes)
    try:
        victim = create(cluster, namespace, queued_job("victim", queue, priority_class=low))
        running_pods(cluster, namespace, victim, PODS)
        wait_state(cluster, namespace, victim, "Running")

        # The higher-priority job preempts it: Kueue evicts the victim's group and admits its own.
        created_at = time.monotonic()
        urgent = create(cluster, namespace, queued_job("urgent", queue, priority_class=high))
        running_pods(cluster, namespace, urgent, PODS)
        preempted_in = time.monotonic() - created_at
        wait_state(cluster, namespace, urgent, "Running")
        said = {e["reason"] for e in events(cluster, namespace, "victim-gang-0")}
        assert {"Preempted", "EvictedDueToPreempted"} <= said, said

        # The victim's restart is the infrastructure's fault, and it waits in the queue again, as
        # a new group: the operator let go of the old one, so Kueue finished its Workload.
        s = eventually(
            "the victim to restart",
            lambda: (s := status(cluster, namespace, victim)).get("restarts", {}).get("infrastructure") and s,
            timeout=60,
        )
        assert s["restarts"].get("userCode", 0) == 0, s["restarts"]
        first = s["failures"][0]
        assert (first["class"], first["reason"], first["action"]) == (
            "Infrastructure",
            "WorkloadEvictedDueToPreempted",
            "Restart",
        ), first
        gated_pods(cluster, namespace, victim)
        cond = queued(cluster, namespace, victim, queue)
        assert cond["message"] == f"queued in {queue}: {PODS} of {PODS} pods wait for admission"
        groups = {p["metadata"]["labels"][GROUP_LABEL] for p in pods(cluster, namespace, victim).values()}
        assert groups == {"victim-gang-1"}, groups
        eventually(
            "the victim's first Workload to finish (or be collected with its pods)",
            lambda: (w := workload(cluster, namespace, "victim-gang-0")) is None or true(w, "Finished"),
        )

        # The urgent job ends; the victim is admitted again, runs and succeeds.
        finish_all(cluster, namespace, urgent)
        wait_state(cluster, namespace, urgent, "Succeeded")
        succeeded_at = time.monotonic()
        running_pods(cluster, namespace, victim, PODS)
        resumed_in = time.monotonic() - succeeded_at
        wait_state(cluster, namespace, victim, "Running")
        finish_all(cluster, namespace, victim)
        s = wait_state(cluster, namespace, victim, "Succeeded")
        assert s["restarts"].get("userCode", 0) == 0, s["restarts"]
        assert s["restarts"]["infrastructure"] == 1, s["restarts"]
        eventually("the quota to be free", lambda: reserved_cpu(cluster, queue) == 0, timeout=30)
        print(
            f"\nurgent job running {preempted_in:.1f}s after its creation (victim preempted); "
            f"victim running again {resumed_in:.1f}s after the urgent job succeeded"
        )
    finally:
        next(classes, None)
