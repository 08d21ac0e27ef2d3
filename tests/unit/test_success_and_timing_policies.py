"""Success, deadlines, TTL, restart backoff and cleanup: small pure policies."""

import datetime

import pytest

from kubetrain.api import observed, v1beta1
from kubetrain.operator.policies import backoff, cleanup, deadline, success, ttl

T = datetime.datetime(2026, 11, 21, 12, 0, tzinfo=datetime.UTC)
ALL, ANY = v1beta1.SuccessOperator.ALL, v1beta1.SuccessOperator.ANY


def policy(op: v1beta1.SuccessOperator, *targets: tuple[str, int | None]) -> v1beta1.SuccessPolicy:
    return v1beta1.SuccessPolicy(
        operator=op, targets=tuple(v1beta1.SuccessTarget(replica_type=t, index=i) for t, i in targets)
    )


def test_success_targets_one_replica_or_every_replica_of_a_type() -> None:
    replicas = {"Chief": 1, "Worker": 2}
    assert success.met(policy(ALL, ("Chief", 0)), {("Chief", 0)}, replicas) == "Chief 0 succeeded"
    assert success.met(policy(ALL, ("Worker", None)), {("Worker", 0)}, replicas) is None
    assert success.met(policy(ALL, ("Worker", None)), {("Worker", 0), ("Worker", 1)}, replicas) == (
        "all 2 Worker replicas succeeded"
    )
    both = policy(ALL, ("Chief", 0), ("Worker", 1))
    assert success.met(both, {("Chief", 0)}, replicas) is None
    assert (
        success.met(policy(ANY, ("Chief", 0), ("Worker", 1)), {("Worker", 1)}, replicas)
        == "Worker 1 succeeded"
    )
    assert success.met(policy(ALL, ("Worker", None)), set(), {"Worker": 0}) is None


def test_the_active_deadline_counts_from_the_start() -> None:
    assert deadline.active_until(None, 10) is None
    assert deadline.active_until(T, None) is None
    assert deadline.active_until(T, 10) == T + datetime.timedelta(seconds=10)


def test_the_termination_deadline_counts_from_the_end_of_the_grace_period() -> None:
    pod = observed.Pod(name="p", uid="u", replica_type="w", index=0, deleted=T)
    assert deadline.force_delete_at(pod, 5) == T + datetime.timedelta(seconds=5)
    assert deadline.force_delete_at(pod, None) == T + datetime.timedelta(
        seconds=deadline.DEFAULT_TERMINATION_DEADLINE
    )
    assert deadline.force_delete_at(observed.Pod(name="p", uid="u", replica_type="w", index=0), 5) is None


def test_ttl_counts_from_completion() -> None:
    assert ttl.expires_at(T, 0) == T
    assert ttl.expires_at(None, 5) is None
    assert ttl.expires_at(T, None) is None


@pytest.mark.parametrize(("n", "seconds"), [(0, 0), (1, 10), (2, 20), (3, 40), (4, 60), (99, 60)])
def test_backoff_doubles_up_to_its_cap(n: int, seconds: float) -> None:
    assert backoff.delay(v1beta1.RestartBackoff(initial_seconds=10, max_seconds=60), n) == seconds
    assert backoff.delay(None, n) == 0


def test_clean_pod_policy_picks_the_pods_to_delete() -> None:
    pods = [
        observed.Pod(
            name=name, uid=name, replica_type="w", index=i, phase=phase, deleted=T if name == "d" else None
        )
        for i, (name, phase) in enumerate(
            [("r", "Running"), ("p", "Pending"), ("s", "Succeeded"), ("f", "Failed"), ("d", "Running")]
        )
    ]
    names = lambda policy: sorted(p.name for p in cleanup.to_delete(policy, pods))  # noqa: E731
    assert names(None) == names(v1beta1.CleanPodPolicy.RUNNING) == ["p", "r"]
    assert names(v1beta1.CleanPodPolicy.ALL) == ["f", "p", "r", "s"]
    assert names(v1beta1.CleanPodPolicy.NONE) == []
