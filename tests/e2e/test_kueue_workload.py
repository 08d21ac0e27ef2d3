"""TrainingJobs in a Kueue queue as their own Workload (the operator's default ``--kueue=workload``),
against real Kueue (the release hack/build-schedulers.sh builds).

The operator makes one Workload per job — a pod set per replica type — and makes no pod until
Kueue admits it; the pods then carry the admission's node selector. Here a ClusterQueue holds cpu
for one job: the second job waits suspended, with no pod at all, and runs once the first one's
end finishes its Workload. A higher-priority job preempts a running one whole: the victim stops,
is charged nothing, gives its quota back and runs again later. An admission check (as a
ProvisioningRequest's would be) holds a job with quota reserved until the check is Ready, and its
node selector reaches the pods. An elastic job is admitted with the Workers the quota holds.

Kueue runs as a local process for this module only (:mod:`kubetrain.devcluster.kueue`); the
operator runs as users get it. Kueue's names are spelled out here, not taken from the operator.
"""

from __future__ import annotations

import datetime
import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from testkit import queues
from testkit.jobs import condition, create, pods, running_pods, sample, status, wait_state
from testkit.kube import eventually
from testkit.queues import CPU, PODS, finish_all, queued_job, reserved_cpu, true

from kubetrain.devcluster import cluster as devcluster
from kubetrain.devcluster import kueue, kwok

JOB_LABEL = "training.kubetrain.dev/job-name"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
FLAVOR_LABELS = {"type": "kwok"}  # every kwok node has it


@pytest.fixture(scope="module", autouse=True)
def running_operator(cluster: devcluster.Cluster) -> Iterator[None]:
    with queues.kueue_and_operator(cluster):
        yield


@pytest.fixture
def queue(cluster: devcluster.Cluster, namespace: str) -> Iterator[str]:
    yield from queues.local_queue(cluster, namespace, flavor_spec={"nodeLabels": FLAVOR_LABELS})


@pytest.fixture
def preempting_queue(cluster: devcluster.Cluster, namespace: str) -> Iterator[str]:
    yield from queues.local_queue(cluster, namespace, preemption=True)


def workload(c: devcluster.Cluster, namespace: str, job: str) -> dict[str, Any] | None:
    """The job's Workload, found by the job's label (its name has a hash of the job's UID)."""
    out = c.kubectl(
        "get", "workloads.kueue.x-k8s.io", "-n", namespace, "-l", f"{JOB_LABEL}={job}", "-o", "json"
    )
    items = json.loads(out.stdout)["items"]
    assert len(items) <= 1, f"{job} has {len(items)} Workloads"
    return items[0] if items else None


def workload_with(c: devcluster.Cluster, namespace: str, job: str, ctype: str) -> dict[str, Any]:
    """The job's Workload, once its condition ``ctype`` is True."""

    def probe() -> dict[str, Any] | None:
        w = workload(c, namespace, job)
        return w if true(w, ctype) else None

    return eventually(f"{job}'s Workload to be {ctype}", probe, timeout=60)


def suspended(c: devcluster.Cluster, namespace: str, job: str, reason: str) -> dict[str, Any]:
    """The job's Suspended condition, once it is True for ``reason``."""

    def probe() -> dict[str, Any] | None:
        s = status(c, namespace, job)
        cond = next((x for x in s.get("conditions", []) if x["type"] == "Suspended"), None)
        return cond if cond and cond["status"] == "True" and cond["reason"] == reason else None

    return eventually(f"{job} to be suspended ({reason})", probe, timeout=60)


def no_pods(c: devcluster.Cluster, namespace: str, job: str) -> bool:
    return not {
        n: p for n, p in pods(c, namespace, job).items() if not p["metadata"].get("deletionTimestamp")
    }


def test_a_job_runs_once_its_workload_is_admitted_and_a_second_waits_without_pods(
    cluster: devcluster.Cluster, namespace: str, queue: str
) -> None:
    first = create(cluster, namespace, queued_job("first", queue))
    wl = workload_with(cluster, namespace, first, "Admitted")
    assert wl["metadata"]["ownerReferences"][0]["kind"] == "TrainingJob"
    assert wl["spec"]["queueName"] == queue
    sets = {p["name"]: p for p in wl["spec"]["podSets"]}
    assert {n: p["count"] for n, p in sets.items()} == {"master": 1, "worker": 2}
    assert sets["worker"]["template"]["spec"]["containers"][0]["resources"]["requests"] == {"cpu": str(CPU)}
    running = running_pods(cluster, namespace, first, PODS)
    s = wait_state(cluster, namespace, first, "Running")
    assert condition(s, "Suspended")["reason"] == "Admitted"
    for pod in running.values():
        assert pod["spec"]["nodeSelector"] == FLAVOR_LABELS, "the flavor's node labels"
        assert QUEUE_LABEL not in pod["metadata"]["labels"], "no pod group: the Workload is the job's"
        assert not pod["spec"].get("schedulingGates")
    eventually("the quota to be reserved", lambda: reserved_cpu(cluster, queue) == PODS * CPU, timeout=30)

    # The second does not fit: it waits suspended, with its Workload pending and no pod at all.
    second = create(cluster, namespace, queued_job("second", queue))
    suspended(cluster, namespace, second, "Queued")
    pending = eventually("second's Workload", lambda: workload(cluster, namespace, second))
    # The condition first says the Workload is being created, then names it once the operator has
    # seen it: the next pass's, which a loaded machine may not have made yet.
    waiting = f"waiting in Kueue LocalQueue {queue} for Kueue to admit Workload {pending['metadata']['name']}"
    eventually(
        "the condition to name the Workload",
        lambda: condition(status(cluster, namespace, second), "Suspended")["message"] == waiting,
        timeout=30,
        evidence=lambda: condition(status(cluster, namespace, second), "Suspended"),
    )
    assert status(cluster, namespace, second)["state"] == "Suspended"
    queues.still("second waits with no pod", lambda: no_pods(cluster, namespace, second))
    assert not true(workload(cluster, namespace, second), "QuotaReserved")

    # The first ends: the operator finishes its Workload, and the quota goes to the second.
    finish_all(cluster, namespace, first)
    wait_state(cluster, namespace, first, "Succeeded")
    succeeded_at = time.monotonic()
    done = workload_with(cluster, namespace, first, "Finished")
    assert next(c for c in done["status"]["conditions"] if c["type"] == "Finished")["reason"] == "Succeeded"
    running_pods(cluster, namespace, second, PODS)
    wait_state(cluster, namespace, second, "Running")
    print(f"\nsecond job running {time.monotonic() - succeeded_at:.1f}s after the first succeeded")
    finish_all(cluster, namespace, second)
    wait_state(cluster, namespace, second, "Succeeded")
    eventually("the quota to be free", lambda: reserved_cpu(cluster, queue) == 0, timeout=30)


def test_a_higher_priority_job_preempts_a_running_one_whole_which_is_charged_nothing_and_runs_after(
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
        assert workload(cluster, namespace, victim)["spec"]["priority"] == 100  # type: ignore[index]

        created_at = time.monotonic()
        urgent = create(cluster, namespace, queued_job("urgent", queue, priority_class=high))
        # Kueue evicts the victim's Workload; the job stops whole, and says why.
        cond = suspended(cluster, namespace, victim, "Evicted")
        assert "Preempted" in cond["message"], cond
        running_pods(cluster, namespace, urgent, PODS)
        preempted_in = time.monotonic() - created_at
        wait_state(cluster, namespace, urgent, "Running")
        eventually("the victim's pods to be gone", lambda: not pods(cluster, namespace, victim), timeout=60)
        # Once its pods are gone the operator gives the quota back: Kueue queues it again.
        back = workload_with(cluster, namespace, victim, "Requeued")
        assert not true(back, "QuotaReserved")
        assert not back["status"].get("admission")
        s = status(cluster, namespace, victim)
        assert not s.get("restarts") or not any(s["restarts"].values()), "an eviction is not charged"
        assert not s.get("failures")

        finish_all(cluster, namespace, urgent)
        wait_state(cluster, namespace, urgent, "Succeeded")
        succeeded_at = time.monotonic()
        running_pods(cluster, namespace, victim, PODS)
        resumed_in = time.monotonic() - succeeded_at
        wait_state(cluster, namespace, victim, "Running")
        finish_all(cluster, namespace, victim)
        s = wait_state(cluster, namespace, victim, "Succeeded")
        assert not s.get("restarts") or not any(s["restarts"].values()), s["restarts"]
        eventually("the quota to be free", lambda: reserved_cpu(cluster, queue) == 0, timeout=30)
        print(
            f"\nurgent job running {preempted_in:.1f}s after its creation (victim preempted); "
            f"victim running again {resumed_in:.1f}s after the urgent job succeeded"
        )
    finally:
        next(classes, None)


def test_an_admission_check_holds_a_job_with_quota_until_ready_and_its_node_selector_reaches_the_pods(
    cluster: devcluster.Cluster, namespace: str
) -> None:
    check = f"{namespace}-provisioning"
    queues.apply(
        cluster,
        {
            "apiVersion": kueue.API_VERSION,
            "kind": "AdmissionCheck",
            "metadata": {"name": check},
            "spec": {"controllerName": "kubetrain.dev/test-provisioning"},
        },
    )
    # No controller runs it: the test is its controller, and says it is active.
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    active = {
        "type": "Active",
        "status": "True",
        "reason": "ByTest",
        "message": "",
        "lastTransitionTime": stamp,
    }
    cluster.kubectl(
        "patch",
        "admissionchecks.kueue.x-k8s.io",
        check,
        "--subresource=status",
        "--type=merge",
        "-p",
        json.dumps({"status": {"conditions": [active]}}),
    )
    q = queues.local_queue(cluster, namespace, checks=(check,))
    queue = next(q)
    try:
        job = create(cluster, namespace, queued_job("held", queue))
        wl = workload_with(cluster, namespace, job, "QuotaReserved")
        assert not true(wl, "Admitted")
        suspended(cluster, namespace, job, "Queued")
        queues.still("the job waits for its admission check", lambda: no_pods(cluster, namespace, job))

        # The check is Ready, asking the workers onto one node (as a provisioned node pool would).
        node = cluster.kubectl(
            "get", "nodes", "-l", "type=kwok", "-o", "jsonpath={.items[0].metadata.name}"
        ).stdout
        ready = {
            "name": check,
            "state": "Ready",
            "message": "provisioned",
            "lastTransitionTime": stamp,
            "podSetUpdates": [{"name": "worker", "nodeSelector": {"kubernetes.io/hostname": node}}],
        }
        cluster.kubectl(
            "patch",
            "workloads.kueue.x-k8s.io",
            wl["metadata"]["name"],
            "-n",
            namespace,
            "--subresource=status",
            "--type=merge",
            "-p",
            json.dumps({"status": {"admissionChecks": [ready]}}),
        )
        running = running_pods(cluster, namespace, job, PODS)
        wait_state(cluster, namespace, job, "Running")
        workers = [p for n, p in running.items() if "-worker-" in n]
        assert {p["spec"]["nodeName"] for p in workers} == {node}
        assert all(p["spec"]["nodeSelector"] == {"kubernetes.io/hostname": node} for p in workers)
        finish_all(cluster, namespace, job)
        wait_state(cluster, namespace, job, "Succeeded")
    finally:
        next(q, None)
        cluster.kubectl("delete", "admissionchecks.kueue.x-k8s.io", check, "--ignore-not-found", check=False)


def test_an_elastic_job_is_admitted_with_the_workers_the_quota_holds(
    cluster: devcluster.Cluster, namespace: str
) -> None:
    q = queues.local_queue(cluster, namespace, cpu=3)
    queue = next(q)
    try:
        job = sample("pytorch-elastic", runPolicy__schedulingPolicy={"queue": queue})
        job["spec"]["framework"]["pytorch"]["elastic"] |= {"minReplicas": 2, "maxReplicas": 4}
        job["spec"]["replicaSpecs"]["Worker"]["replicas"] = 4
        job["spec"]["replicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["resources"] = {
            "requests": {"cpu": str(CPU)}
        }
        del job["spec"]["progress"]
        name = create(cluster, namespace, job)
        wl = workload_with(cluster, namespace, name, "Admitted")
        assert wl["spec"]["podSets"][0] | {"template": None} == {
            "name": "worker",
            "count": 4,
            "minCount": 2,
            "template": None,
        }
        assert wl["status"]["admission"]["podSetAssignments"][0]["count"] == 3
        running = running_pods(cluster, namespace, name, 3)
        assert sorted(running) == [f"{name}-worker-{i}" for i in range(3)]
        wait_state(cluster, namespace, name, "Running")
        queues.still("no fourth worker", lambda: len(pods(cluster, namespace, name)) == 3)
    finally:
        next(q, None)


def test_a_topology_request_puts_the_workers_in_one_block_and_the_flavor_tolerates_its_nodes(
    cluster: devcluster.Cluster, namespace: str
) -> None:
    # Two blocks of kwok nodes, tainted so that no other test's pod lands there: block a has two
    # nodes, block b one, and a worker (20 of a node's 32 cpus) takes a node of its own.
    block, pool = "kubetrain.dev/test-block", "kubetrain.dev/test-pool"
    taint = {"key": pool, "value": namespace, "effect": "NoSchedule"}
    nodes = {f"{namespace}-a0": "a", f"{namespace}-a1": "a", f"{namespace}-b0": "b"}
    for node, b in nodes.items():
        kwok.add_node(cluster, node, labels={block: b, pool: namespace}, taints=[taint])
    topology = f"{namespace}-topology"
    queues.apply(
        cluster,
        {
            "apiVersion": kueue.API_VERSION,
            "kind": "Topology",
            "metadata": {"name": topology},
            "spec": {"levels": [{"nodeLabel": block}, {"nodeLabel": "kubernetes.io/hostname"}]},
        },
    )
    toleration = {"key": pool, "operator": "Equal", "value": namespace, "effect": "NoSchedule"}
    flavor = {"nodeLabels": {pool: namespace}, "topologyName": topology, "tolerations": [toleration]}
    q = queues.local_queue(cluster, namespace, cpu=64, flavor_spec=flavor)
    queue = next(q)
    try:
        job = queued_job("tas", queue)
        workers = job["spec"]["replicaSpecs"]["Worker"]["template"]
        workers.setdefault("metadata", {})["annotations"] = {"kueue.x-k8s.io/podset-required-topology": block}
        workers["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "20"}}
        name = create(cluster, namespace, job)
        wl = workload_with(cluster, namespace, name, "Admitted")
        sets = {p["name"]: p for p in wl["spec"]["podSets"]}
        assert sets["worker"]["topologyRequest"] == {
            "required": block,
            "podIndexLabel": "training.kubetrain.dev/replica-index",
        }
        running = running_pods(cluster, namespace, name, PODS)
        wait_state(cluster, namespace, name, "Running")
        placed = {n: p["spec"]["nodeName"] for n, p in running.items()}
        assert {placed[f"{name}-worker-{i}"] for i in range(2)} == {f"{namespace}-a0", f"{namespace}-a1"}, (
            placed
        )
        assert set(placed.values()) <= set(nodes), "the flavor's nodes only"
        for pod in running.values():
            assert toleration in pod["spec"]["tolerations"], "the flavor's toleration"
            assert not pod["spec"].get("schedulingGates"), "Kueue ungated it"
        finish_all(cluster, namespace, name)
        wait_state(cluster, namespace, name, "Succeeded")
    finally:
        next(q, None)
        cluster.kubectl("delete", "topologies.kueue.x-k8s.io", topology, "--ignore-not-found", check=False)
        cluster.kubectl("delete", "nodes", *nodes, "--ignore-not-found", check=False)
