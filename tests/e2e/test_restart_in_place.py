"""Restarts in place on kwok: pods are moved, and fall back to being made again when nothing restarts them.

kwok's nodes declare ``RestartAllContainersOnContainerExits``, as a 1.36 kubelet does, so the
operator makes an ``InPlace`` job's pods with their agent and barrier and the scheduler places
them; but kwok runs no containers, so a moved pod keeps running. The job's restart then moves
the pods that ran (same UIDs, the new attempt's label and restart env), makes the failed one
again, and once the moved ones have not stopped in time makes them again too: the restart
completes as a recreate, charged once. The restart in place itself runs on real nodes
(tests/node/test_restart_in_place.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from testkit import operator
from testkit.jobs import ATTEMPT, create, events, pods, running_pods, sample, status, summary, wait_state
from testkit.kube import eventually

from kubetrain.api import naming
from kubetrain.devcluster import cluster as devcluster
from kubetrain.devcluster import kwok
from kubetrain.operator.policies import inplace


@pytest.fixture(scope="module", autouse=True)
def running_operator(cluster: devcluster.Cluster) -> Iterator[None]:
    op = operator.start(cluster, None)
    yield
    op.stop()


def test_moved_pods_that_never_stop_are_made_again_and_the_restart_is_charged_once(
    cluster: devcluster.Cluster, namespace: str
) -> None:
    name = create(cluster, namespace, in_place_ddp("inplace"))
    first = running_pods(cluster, namespace, name, 3)
    wait_state(cluster, namespace, name, "Running")
    master = first[f"{name}-master-0"]
    init = [c["name"] for c in master["spec"]["initContainers"]]
    assert init[:2] == [naming.AGENT, naming.BARRIER]
    assert master["metadata"]["annotations"][naming.OPENED] == "0"

    kwok.finish_pod(cluster, namespace, f"{name}-worker-1", 137)
    moved = eventually(
        "the pods that ran to be moved to attempt 1",
        lambda: _moved(cluster, namespace, name, first),
        timeout=30,
        evidence=lambda: summary(cluster, namespace, name),
    )
    assert moved[f"{name}-master-0"]["metadata"]["annotations"][naming.RESTARTS] == "1"
    assert moved[f"{name}-master-0"]["metadata"]["annotations"][naming.OPENED] == "0", "not opened: it runs"
    s = status(cluster, namespace, name)
    assert s["state"] == "Restarting"
    assert s["failures"][-1]["restart"] == "InPlace"

    # Nothing restarts them (kwok), so past the stop timeout they are made again.
    eventually(
        "every pod to be made again in attempt 1",
        lambda: _all_new(cluster, namespace, name, first),
        timeout=inplace.STOP_TIMEOUT_SECONDS + 60,
        evidence=lambda: summary(cluster, namespace, name),
    )
    s = wait_state(cluster, namespace, name, "Running")
    assert s["restarts"] == {"userCode": 1}, "the fall-back is the same restart"
    reasons = [e["reason"] for e in events(cluster, namespace, name)]
    assert reasons.count("InPlaceRestartFellBack") == 2, reasons


def test_a_move_never_touches_a_pod_made_again_under_its_name(
    cluster: devcluster.Cluster, namespace: str
) -> None:
    # The operator moves a pod by a patch carrying its UID: the apiserver refuses it for another pod.
    name = create(cluster, namespace, in_place_ddp("uid"))
    running = running_pods(cluster, namespace, name, 3)
    pod = f"{name}-worker-0"
    patch = f'{{"metadata": {{"uid": "not-its-uid", "labels": {{"{ATTEMPT}": "9"}}}}}}'
    r = cluster.kubectl("patch", "pod", pod, "-n", namespace, "--type=merge", "-p", patch, check=False)
    assert r.returncode != 0
    assert "Precondition failed" in r.stderr or "uid" in r.stderr.lower(), r.stderr
    assert pods(cluster, namespace, name)[pod]["metadata"]["labels"][ATTEMPT] == "0"
    assert pods(cluster, namespace, name)[pod]["metadata"]["uid"] == running[pod]["metadata"]["uid"]


def in_place_ddp(name: str) -> dict[str, Any]:
    """The DDP sample (1 Master, 2 Workers), named ``name``, restarted in place."""
    job = sample("pytorch-ddp", failurePolicy__restartMethod="InPlace")
    job["metadata"]["name"] = name
    return job


def _moved(c: devcluster.Cluster, namespace: str, name: str, first: dict) -> dict | None:
    now = pods(c, namespace, name)
    kept = [f"{name}-master-0", f"{name}-worker-0"]
    ok = all(
        n in now
        and now[n]["metadata"]["uid"] == first[n]["metadata"]["uid"]
        and now[n]["metadata"]["labels"][ATTEMPT] == "1"
        for n in kept
    )
    return now if ok else None


def _all_new(c: devcluster.Cluster, namespace: str, name: str, first: dict) -> bool:
    now = pods(c, namespace, name)
    old = {p["metadata"]["uid"] for p in first.values()}
    return len(now) == 3 and all(
        p["metadata"]["uid"] not in old
        and p["status"].get("phase") == "Running"
        and "deletionTimestamp" not in p["metadata"]
        for p in now.values()
    )
