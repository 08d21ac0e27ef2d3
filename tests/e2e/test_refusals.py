"""Objects the apiserver refuses to create show on the job, are retried with backoff, and
either clear when the cause goes away or fail the job after a bounded time.

The operator here runs without its admission webhook (as when only the CRD is installed),
so a pod the apiserver would refuse gets as far as the reconciler: the case admission
exists to prevent, and the reconciler's last line of defence.
"""

from __future__ import annotations

import datetime
import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from testkit import operator
from testkit.jobs import condition, create, events, pods, running_pods, sample, status, wait_state
from testkit.kube import eventually

from kubetrain.devcluster import cluster as devcluster
from kubetrain.devcluster import process

POD_SECURITY = "pod-security.kubernetes.io/enforce"


@pytest.fixture(scope="module", autouse=True)
def running_operator(cluster: devcluster.Cluster) -> Iterator[list[process.Process]]:
    """The operator, in a list: a test may restart it (the last one is stopped at the end)."""
    ops = [operator.start(cluster)]
    yield ops
    ops[-1].stop()


def job(name: str, **changes: Any) -> dict[str, Any]:
    out = sample("pytorch-ddp", **changes)
    out["metadata"]["name"] = name
    return out


def replica_failure(c: devcluster.Cluster, namespace: str, name: str, reason: str) -> dict[str, Any]:
    def shown() -> dict[str, Any] | None:
        s = status(c, namespace, name)
        cond = next((x for x in s.get("conditions", []) if x["type"] == "ReplicaFailure"), None)
        return cond if cond is not None and cond["status"] == "True" and cond["reason"] == reason else None

    return eventually(f"{name} to show ReplicaFailure {reason}", shown, timeout=30)


def failed_creates(c: devcluster.Cluster, namespace: str, name: str) -> int:
    return sum(e.get("count", 1) for e in events(c, namespace, name) if e["reason"] == "FailedCreate")


def apply(c: devcluster.Cluster, obj: dict[str, Any]) -> None:
    c.kubectl("apply", "--server-side", "--force-conflicts", "-f", "-", input=json.dumps(obj))


def test_a_used_up_quota_is_shown_waited_for_with_backoff_and_the_job_runs_once_it_frees(
    cluster: devcluster.Cluster, namespace: str
) -> None:
    quota = {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": "pods", "namespace": namespace},
        "spec": {"hard": {"pods": "2"}},
    }
    apply(cluster, quota)
    eventually(
        "the quota to be counted",
        lambda: (
            json.loads(cluster.kubectl("get", "resourcequota", "pods", "-n", namespace, "-o", "json").stdout)
            .get("status", {})
            .get("hard")
        ),
        timeout=30,
    )
    name = create(cluster, namespace, job("quota"))
    cond = replica_failure(cluster, namespace, name, "QuotaExceeded")
    assert "exceeded quota" in cond["message"]
    assert len(pods(cluster, namespace, name)) == 2
    assert status(cluster, namespace, name)["state"] == "Created"
    # Retried with backoff, not in a hot loop: a handful of tries in 12 s.
    time.sleep(12)
    tries = failed_creates(cluster, namespace, name)
    assert 2 <= tries <= 8, tries
    warning = next(e for e in events(cluster, namespace, name) if e["reason"] == "FailedCreate")
    assert warning["type"] == "Warning"
    assert "exceeded quota" in warning["message"]
    # The quota grows: the job goes on by itself, and the condition clears.
    apply(cluster, {**quota, "spec": {"hard": {"pods": "10"}}})
    running_pods(cluster, namespace, name, 3)
    s = wait_state(cluster, namespace, name, "Running", timeout=90)
    assert condition(s, "ReplicaFailure")["status"] == "False"


def test_a_missing_service_account_is_waited_for(cluster: devcluster.Cluster, namespace: str) -> None:
    spec = job("sa")
    for replica in spec["spec"]["replicaSpecs"].values():
        replica["template"]["spec"]["serviceAccountName"] = "trainer"
    name = create(cluster, namespace, spec)
    cond = replica_failure(cluster, namespace, name, "ServiceAccountMissing")
    assert 'serviceaccount "trainer" not found' in cond["message"]
    # The pass whose creates were refused still sent its Events.
    assert {"FailedCreate", "ServiceAccountMissing"} <= {
        e["reason"] for e in events(cluster, namespace, name)
    }
    cluster.kubectl("create", "serviceaccount", "trainer", "-n", namespace)
    running_pods(cluster, namespace, name, 3)
    wait_state(cluster, namespace, name, "Running", timeout=90)


def test_a_pod_the_apiserver_finds_invalid_fails_the_job_after_the_grace_period(
    cluster: devcluster.Cluster, namespace: str
) -> None:
    spec = job("invalid", failurePolicy__refusalGraceSeconds=4)
    del spec["spec"]["replicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["image"]
    name = create(cluster, namespace, spec)
    cond = replica_failure(cluster, namespace, name, "Invalid")
    assert "spec.containers[0].image: Required value" in cond["message"]
    s = wait_state(cluster, namespace, name, "Failed", timeout=30)
    failed = condition(s, "Failed")
    assert failed["reason"] == "CreateRefused"
    assert failed["message"].startswith("refused for longer than 4s: Pod invalid-worker-")
    assert "Required value" in failed["message"]


def test_an_operator_that_restarts_keeps_the_refusals_grace_and_backoff(
    cluster: devcluster.Cluster, namespace: str, running_operator: list[process.Process]
) -> None:
    grace = 20
    spec = job("again", failurePolicy__refusalGraceSeconds=grace)
    del spec["spec"]["replicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["image"]
    name = create(cluster, namespace, spec)
    began = replica_failure(cluster, namespace, name, "Invalid")["lastTransitionTime"]
    kept = eventually(
        "the refusal in the status", lambda: status(cluster, namespace, name).get("lastRefusal")
    )
    assert kept["code"] == 422
    assert "Required value" in kept["message"]
    for _ in range(3):  # an operator in a crash loop, within the grace
        running_operator[-1].stop()
        running_operator.append(operator.start(cluster))
    s = wait_state(cluster, namespace, name, "Failed", timeout=grace + 30)
    assert condition(s, "ReplicaFailure")["lastTransitionTime"] == began, "the grace began again"
    failed = condition(s, "Failed")
    assert failed["reason"] == "CreateRefused"
    took = _seconds(failed["lastTransitionTime"]) - _seconds(began)
    assert grace <= took <= grace + 5, f"failed {took} s after the first refusal"
    # Six tries of two Workers in 20 s (1, 2, 4, 8 s apart...), not one more at every restart.
    assert failed_creates(cluster, namespace, name) <= 14, "tried again at every restart, or in a hot loop"


def _seconds(stamp: str) -> float:
    return datetime.datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def test_a_pod_security_refusal_lets_the_job_go_on_once_the_namespace_allows_it(
    cluster: devcluster.Cluster, namespace: str
) -> None:
    cluster.kubectl("label", "namespace", namespace, f"{POD_SECURITY}=restricted")
    name = create(cluster, namespace, job("psa", failurePolicy__refusalGraceSeconds=120))
    cond = replica_failure(cluster, namespace, name, "PodSecurity")
    assert 'violates PodSecurity "restricted:latest"' in cond["message"]
    assert pods(cluster, namespace, name) == {}
    cluster.kubectl("label", "--overwrite", "namespace", namespace, f"{POD_SECURITY}=privileged")
    running_pods(cluster, namespace, name, 3)
    s = wait_state(cluster, namespace, name, "Running", timeout=90)
    assert condition(s, "ReplicaFailure")["status"] == "False"
    assert "Failed" not in {c["type"] for c in s["conditions"] if c["status"] == "True"}
