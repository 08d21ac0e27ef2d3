"""scheduler-plugins' Coscheduling (``--gang-scheduler=coscheduling``): the deadlock scenario of
:mod:`testkit.deadlock`, placed by a second scheduler.

The module runs scheduler-plugins' scheduler and controller (built by
``hack/build-schedulers.sh``) beside kube-scheduler on the session's cluster, with the CRDs
they read (:mod:`kubetrain.devcluster.coscheduling`), and the operator with
``--gang-scheduler=coscheduling``: each job gets a ``scheduling.x-k8s.io/v1alpha1``
PodGroup ``{job}-gang-0`` with ``minMember: 4`` and its pods name that group and that
scheduler. Two such jobs on nodes with room for 6 of their 8 pods: one is placed whole, the
other not at all — and says why — until the first succeeds; then it is placed and succeeds.
A missing binary fails the module, naming the script that builds it.
"""

from __future__ import annotations

import datetime
import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from testkit import deadlock, operator
from testkit.jobs import condition, pods, status
from testkit.kube import eventually

from kubetrain.devcluster import cluster as devcluster
from kubetrain.devcluster import coscheduling
from kubetrain.operator.scheduling.coscheduling import LABEL as POD_GROUP

# How long the waiting job is watched, to see it take no part of the room: the plugin's Permit
# wait, so a gang that reserved nodes and timed out would show (the shared scenario adds 5 s).
HOLD_SECONDS = coscheduling.PERMIT_WAITING_SECONDS


@pytest.fixture(scope="module")
def scheduler(cluster: devcluster.Cluster) -> Iterator[str]:
    """The Coscheduling scheduler and scheduler-plugins' controller, for this module only (their CRDs too)."""
    coscheduling.start(cluster)
    try:
        yield coscheduling.SCHEDULER_NAME
    finally:
        coscheduling.stop(cluster)


@pytest.fixture(scope="module")
def running_operator(cluster: devcluster.Cluster, scheduler: str) -> Iterator[None]:
    op = operator.start(cluster, None, "--gang-scheduler=coscheduling")
    try:
        yield
    finally:
        op.stop()


@pytest.fixture
def pool(cluster: devcluster.Cluster) -> Iterator[deadlock.Pool]:
    yield from deadlock.pool(cluster, "cosched")


def _time(stamp: str) -> datetime.datetime:
    return datetime.datetime.fromisoformat(stamp.replace("Z", "+00:00"))


def all_pods(c: devcluster.Cluster, namespace: str, name: str) -> dict[str, dict[str, Any]] | None:
    got = pods(c, namespace, name)
    return got if len(got) == deadlock.PODS_PER_JOB else None


def scheduled_by(c: devcluster.Cluster, namespace: str) -> set[str]:
    """Who reported that the namespace's pods were scheduled."""
    out = c.kubectl(
        "get", "events", "-n", namespace, "--field-selector", "reason=Scheduled", "-o", "json"
    ).stdout
    return {
        e.get("reportingComponent") or e["source"].get("component", "")
        for e in json.loads(out)["items"]
        if e["involvedObject"]["kind"] == "Pod"
    }


def test_two_gangs_that_fit_one_at_a_time_run_one_after_the_other(
    cluster: devcluster.Cluster, namespace: str, pool: deadlock.Pool, scheduler: str, running_operator: None
) -> None:
    names = deadlock.start_both(cluster, namespace, pool)
    for n in names:
        group: dict[str, Any] = eventually(
            f"PodGroup {n}-gang-0", lambda n=n: coscheduling.podgroup(cluster, namespace, f"{n}-gang-0")
        )
        assert group["spec"]["minMember"] == deadlock.PODS_PER_JOB, group["spec"]
        assert [o["name"] for o in group["metadata"]["ownerReferences"]] == [n]
        members = eventually(f"the pods of {n}", lambda n=n: all_pods(cluster, namespace, n))
        for pod in members.values():
            assert pod["metadata"]["labels"][POD_GROUP] == f"{n}-gang-0"
            assert pod["spec"]["schedulerName"] == scheduler

    counts = deadlock.placements(cluster, namespace, names)
    assert sorted(counts) == [0, deadlock.PODS_PER_JOB], f"placed per job: {counts}"
    running, waiting = names if counts[0] else names[::-1]
    deadline = time.monotonic() + HOLD_SECONDS
    while time.monotonic() < deadline:
        now = (deadlock.bound(cluster, namespace, running), deadlock.bound(cluster, namespace, waiting))
        assert now == (deadlock.PODS_PER_JOB, 0), f"placed ({running}, {waiting}): {now}"
        time.sleep(1)
    # scheduler-plugins' controller keeps the PodGroups' status (its updates wake the waiting gang up).
    eventually(
        f"the PodGroup of {running} to be Running",
        lambda: (
            (coscheduling.podgroup(cluster, namespace, f"{running}-gang-0") or {})
            .get("status", {})
            .get("phase")
            == "Running"
        ),
    )

    # The rest of the scenario, shared by every backend: Unschedulable shown, then both succeed.
    deadlock.assert_gang_placed_then_both_succeed(cluster, namespace, names)

    assert scheduled_by(cluster, namespace) == {scheduler}
    first_done = _time(condition(status(cluster, namespace, running), "Succeeded")["lastTransitionTime"])
    placed = [
        _time(cond["lastTransitionTime"])
        for pod in pods(cluster, namespace, waiting).values()
        for cond in pod["status"].get("conditions", [])
        if cond["type"] == "PodScheduled" and cond["status"] == "True"
    ]
    assert placed, f"no pod of {waiting} is left to show when it was placed"
    print(f"{waiting} placed {(max(placed) - first_done).total_seconds():.0f}s after {running} succeeded")
