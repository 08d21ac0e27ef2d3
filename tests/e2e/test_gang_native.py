"""Kubernetes' own gang scheduling (the scheduling.k8s.io PodGroup: v1alpha2 on 1.36, v1beta1 on 1.37,
the version found at the operator's start), the operator's default wherever it is served — as it
is on every cluster tier here, on either version.

The deadlock scenario of :mod:`testkit.deadlock` with and without gangs; a job that can never be
placed, given up after ``scheduleTimeoutSeconds``; and a backend the cluster does not serve,
shown on the job instead of pods Pending for ever.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator
from typing import Any

import pytest
from testkit import deadlock, operator
from testkit.jobs import condition, create, pods, running_pods, sample, status, wait_state
from testkit.kube import eventually

from kubetrain.devcluster import cluster as devcluster
from kubetrain.devcluster import kwok


@pytest.fixture
def pool(cluster: devcluster.Cluster, request: pytest.FixtureRequest) -> Iterator[deadlock.Pool]:
    yield from deadlock.pool(cluster, f"native-{request.node.name[5:25].replace('_', '-').rstrip('-')}")


def run_operator(c: devcluster.Cluster, namespace: str, *flags: str) -> Iterator[None]:
    op = operator.start(c, namespace, *flags)
    try:
        yield
    finally:
        op.stop()


def test_without_gangs_both_jobs_start_partially(
    cluster: devcluster.Cluster, namespace: str, pool: deadlock.Pool
) -> None:
    for _ in run_operator(cluster, namespace, "--gang-scheduler=none"):
        names = deadlock.start_both(cluster, namespace, pool)
        counts = deadlock.placements(cluster, namespace, names)
        # 6 of 8 placed: at least one job holds nodes with pods that cannot all run.
        assert sum(counts) == 2 * deadlock.PODS_PER_JOB - 2, counts
        assert any(0 < n < deadlock.PODS_PER_JOB for n in counts), counts
        assert not cluster.kubectl("get", "podgroups.scheduling.k8s.io", "-n", namespace, "-o", "name").stdout


def test_with_gangs_one_job_runs_whole_and_the_other_waits_then_both_succeed(
    cluster: devcluster.Cluster, namespace: str, pool: deadlock.Pool
) -> None:
    for _ in run_operator(cluster, namespace):  # auto: native is served here
        names = deadlock.start_both(cluster, namespace, pool)
        wanted = frozenset(f"{n}-gang-0" for n in names)
        # The operator makes them on its first pass over each job, which a loaded machine delays.
        by_name = eventually(
            "both jobs' PodGroups", functools.partial(_podgroups, cluster, namespace, wanted)
        )
        assert set(by_name) == wanted
        assert all(
            g["spec"]["schedulingPolicy"]["gang"]["minCount"] == deadlock.PODS_PER_JOB
            for g in by_name.values()
        )
        for n in names:
            assert {
                p["spec"]["schedulingGroup"]["podGroupName"] for p in pods(cluster, namespace, n).values()
            } == {f"{n}-gang-0"}
        deadlock.assert_gang_placed_then_both_succeed(cluster, namespace, names)


def _podgroups(c: devcluster.Cluster, namespace: str, wanted: frozenset[str]) -> dict[str, Any] | None:
    """The namespace's PodGroups by name, once all of ``wanted`` are there."""
    listed = c.kubectl("get", "podgroups.scheduling.k8s.io", "-n", namespace, "-o", "json")
    found = {g["metadata"]["name"]: g for g in json.loads(listed.stdout)["items"]}
    return found if set(found) >= wanted else None


def test_a_gang_that_never_fits_fails_after_its_schedule_timeout(
    cluster: devcluster.Cluster, namespace: str, pool: deadlock.Pool
) -> None:
    for _ in run_operator(cluster, namespace):
        job = deadlock.job("too-big", pool, runPolicy={"schedulingPolicy": {"scheduleTimeoutSeconds": 8}})
        for rs in job["spec"]["replicaSpecs"].values():
            # One pod a node: two of four fit.
            rs["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "20"
        create(cluster, namespace, job)
        waiting = eventually(
            "too-big to say it cannot be placed",
            lambda: next(
                (
                    c
                    for c in status(cluster, namespace, "too-big").get("conditions", [])
                    if c["type"] == "Scheduled" and c["reason"] == "Unschedulable"
                ),
                None,
            ),
        )
        assert waiting["status"] == "False"
        assert deadlock.bound(cluster, namespace, "too-big") == 0
        failed = wait_state(cluster, namespace, "too-big", "Failed", timeout=40)
        reason = condition(failed, "Failed")
        assert reason["reason"] == "ScheduleTimeout", reason
        assert "scheduleTimeoutSeconds (8s)" in reason["message"]
        eventually("its pods to be deleted", lambda: not pods(cluster, namespace, "too-big"), timeout=30)
        described = cluster.kubectl("describe", "trainingjob", "too-big", "-n", namespace).stdout
        assert "ScheduleTimeout" in described
        assert "Unschedulable" in described


def test_a_backend_the_cluster_does_not_serve_is_shown_on_the_job(
    cluster: devcluster.Cluster, namespace: str, pool: deadlock.Pool
) -> None:
    for _ in run_operator(cluster, namespace, "--gang-scheduler=volcano"):
        create(cluster, namespace, deadlock.job("no-volcano", pool))
        shown = eventually(
            "no-volcano to show the missing backend",
            lambda: next(
                (
                    c
                    for c in status(cluster, namespace, "no-volcano").get("conditions", [])
                    if c["type"] == "ReplicaFailure" and c["status"] == "True"
                ),
                None,
            ),
        )
        assert shown["reason"] == "GangSchedulerNotServed", shown
        assert "scheduling.volcano.sh/v1beta1 is not served by this cluster" in shown["message"]
        # No pod is left Pending for a scheduler that is not there.
        assert not pods(cluster, namespace, "no-volcano")
        got = cluster.kubectl("get", "trainingjob", "no-volcano", "-n", namespace).stdout
        assert "Created" in got


def test_a_higher_priority_job_preempts_a_lower_one_whose_restart_is_infrastructures(
    cluster: devcluster.Cluster, namespace: str, pool: deadlock.Pool
) -> None:
    for value, name in ((1000, "kt-low"), (2000, "kt-high")):
        pc = {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": name},
            "value": value,
        }
        cluster.kubectl("apply", "-f", "-", input=json.dumps(pc))
    for _ in run_operator(cluster, namespace):
        # No rule for preemption (the sample has one): the infrastructure budget pays for it.
        low = deadlock.job(
            "low",
            pool,
            runPolicy={"schedulingPolicy": {"priorityClass": "kt-low"}},
            failurePolicy={"budgets": {"infrastructure": {"limit": 10}}},
        )
        create(cluster, namespace, low)
        wait_state(cluster, namespace, "low", "Running")
        assert {p["spec"]["priority"] for p in pods(cluster, namespace, "low").values()} == {1000}
        create(
            cluster,
            namespace,
            deadlock.job("high", pool, runPolicy={"schedulingPolicy": {"priorityClass": "kt-high"}}),
        )
        # The scheduler makes room for the whole high gang, preempting low's pods.
        wait_state(cluster, namespace, "high", "Running", timeout=90)
        charged = eventually(
            "low's restart to be charged",
            lambda: (s := status(cluster, namespace, "low")).get("restarts", {}).get("infrastructure") and s,
            timeout=60,
        )
        assert charged["restarts"].get("userCode", 0) == 0, charged["restarts"]
        record = charged["failures"][0]
        assert (record["class"], record["reason"]) == ("Infrastructure", "PreemptionByScheduler"), record
        # Low waits whole for the room high holds, then runs again and finishes.
        eventually(
            "low to wait, placed nowhere",
            lambda: (
                status(cluster, namespace, "low")
                .get("replicaStatuses", {})
                .get("Worker", {})
                .get("attempt", 0)
                >= 1
                and deadlock.bound(cluster, namespace, "low") == 0
            ),
            timeout=60,
        )
        deadlock.finish(cluster, namespace, "high", sorted(pods(cluster, namespace, "high")))
        wait_state(cluster, namespace, "low", "Running", timeout=90)
        done = deadlock.finish(cluster, namespace, "low", sorted(pods(cluster, namespace, "low")))
        assert done["restarts"].get("userCode", 0) == 0


def test_a_replacement_whose_gang_has_ended_is_placed_on_its_own(
    cluster: devcluster.Cluster, namespace: str
) -> None:
    # The workers of attempt 0 have succeeded; the master fails and is replaced alone (Pod
    # scope). In attempt 0's gang (minCount 3) it would wait for ever for members that ended.
    job = sample(
        "pytorch-ddp",
        restart_policy="ExitCode",
        replicaSpecs__Worker__replicas=2,
        failurePolicy={"restartScope": "Pod"},
    )
    op = operator.start(cluster, namespace)  # auto: native is served here
    try:
        name = create(cluster, namespace, job)
        first = running_pods(cluster, namespace, name, 3)
        assert {p["spec"]["schedulingGroup"]["podGroupName"] for p in first.values()} == {f"{name}-gang-0"}
        for worker in ("pytorch-ddp-worker-0", "pytorch-ddp-worker-1"):
            kwok.finish_pod(cluster, namespace, worker, 0)
        eventually(
            "the workers to succeed",
            lambda: all(
                pods(cluster, namespace, name)[w]["status"].get("phase") == "Succeeded"
                for w in ("pytorch-ddp-worker-0", "pytorch-ddp-worker-1")
            ),
            timeout=30,
        )
        kwok.finish_pod(cluster, namespace, "pytorch-ddp-master-0", 137)
        old = first["pytorch-ddp-master-0"]["metadata"]["uid"]
        replacement = eventually(
            "the replacement master to run",
            lambda: (
                (p := pods(cluster, namespace, name).get("pytorch-ddp-master-0"))
                and p["metadata"]["uid"] != old
                and p["status"].get("phase") == "Running"
                and p
            ),
            timeout=60,
        )
        assert "schedulingGroup" not in replacement["spec"], "alone: in no gang"
        kwok.finish_pod(cluster, namespace, "pytorch-ddp-master-0", 0)
        s = wait_state(cluster, namespace, name, "Succeeded")
        assert s["restarts"] == {"userCode": 1}
    finally:
        op.stop()
