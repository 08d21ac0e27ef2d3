"""Classifying pod failures: infrastructure or user code, counted once each."""

import datetime

import attrs
import pytest

from kubetrain.api import observed, v1beta1
from kubetrain.operator.policies import classify

NOW = datetime.datetime(2026, 11, 21, 12, 0, tzinfo=datetime.UTC)
INFRA, USER = v1beta1.FailureClass.INFRASTRUCTURE, v1beta1.FailureClass.USER_CODE


def pod(**fields: object) -> observed.Pod:
    return observed.Pod(name="p", uid="u", replica_type="worker", index=0, **fields)  # type: ignore[arg-type]


def failures(p: observed.Pod, counted: int = 0, grace: int | None = None) -> list[classify.Failure]:
    return classify.new_failures(p, counted, container="main", now=NOW, image_pull_grace=grace)


@pytest.mark.parametrize(
    ("fields", "cls", "reason"),
    [
        ({"phase": "Failed", "exit_codes": {"main": 3}, "reasons": ("Error",)}, USER, "Error"),
        ({"phase": "Failed", "reasons": ("Evicted",)}, INFRA, "Evicted"),
        ({"phase": "Failed", "reasons": ("Shutdown",)}, INFRA, "Shutdown"),
        ({"phase": "Running", "disruption": "PreemptionByScheduler"}, INFRA, "PreemptionByScheduler"),
        (
            {"phase": "Failed", "exit_codes": {"main": 1}, "disruption": "DeletionByTaintManager"},
            INFRA,
            "DeletionByTaintManager",
        ),
        ({"phase": "Running", "node": "n", "node_exists": False}, INFRA, "NodeLost"),
        ({"phase": "Running", "gone": True}, INFRA, "PodDeleted"),
        # What a real kubelet reports between `kubectl delete pod` and the pod's removal.
        (
            {"phase": "Failed", "exit_codes": {"main": 137}, "reasons": ("Error",), "deleted": NOW},
            INFRA,
            "PodDeleted",
        ),
    ],
)
def test_each_pod_failure_gets_one_class(
    fields: dict[str, object], cls: v1beta1.FailureClass, reason: str
) -> None:
    (f,) = failures(pod(**fields))
    assert (f.failure_class, f.reason, f.in_place) == (cls, reason, False)


def test_healthy_and_succeeded_pods_have_not_failed() -> None:
    assert failures(pod(phase="Running")) == []
    assert failures(pod(phase="Succeeded", disruption="EvictionByEvictionAPI")) == []
    assert failures(pod(phase="Succeeded", gone=True)) == []


def test_each_container_restart_is_a_user_failure_and_counted_ones_are_skipped() -> None:
    p = pod(phase="Failed", restarts=2, exit_codes={"main": 137}, reasons=("OOMKilled",))
    got = failures(p)
    assert [(f.in_place, f.exit_code, f.reason) for f in got] == [
        (True, 137, "OOMKilled"),
        (True, 137, "OOMKilled"),
        (False, 137, "OOMKilled"),
    ]
    assert len(failures(p, counted=2)) == 1
    assert failures(p, counted=3) == []


def test_the_main_containers_exit_code_wins_unless_it_is_zero() -> None:
    assert classify.exit_code(pod(exit_codes={"main": 3, "side": 9}), "main") == 3
    assert classify.exit_code(pod(exit_codes={"main": 0, "side": 9}), "main") == 9
    assert classify.exit_code(pod(exit_codes={"side": 0}), "main") is None


def test_image_pull_errors_fail_the_pod_only_after_the_grace_period() -> None:
    stuck = pod(created=NOW - datetime.timedelta(seconds=59), waiting=frozenset({"ErrImagePull"}))
    assert failures(stuck, grace=60) == []
    assert classify.image_pull_due(stuck, 60) == NOW + datetime.timedelta(seconds=1)
    (f,) = failures(attrs.evolve(stuck, created=NOW - datetime.timedelta(seconds=60)), grace=60)
    assert (f.failure_class, f.reason) == (INFRA, "ErrImagePull")
    assert classify.image_pull_due(stuck, None) == stuck.created + datetime.timedelta(  # type: ignore[operator]
        seconds=classify.DEFAULT_IMAGE_PULL_GRACE
    )


def test_a_container_crashed_and_waiting_out_its_back_off_has_failed_already() -> None:
    # Its restart count goes up only when the kubelet starts it again, up to 5 minutes later.
    def seen(count: int, state: dict[str, object]) -> observed.Pod:
        status = {
            "name": "main",
            "restartCount": count,
            "state": state,
            "lastState": {"terminated": {"exitCode": 1}},
        }
        return observed.Pod.of(
            {
                "metadata": {"name": "p", "uid": "u"},
                "status": {"phase": "Running", "containerStatuses": [status]},
            }
        )

    crashed = seen(2, {"waiting": {"reason": "CrashLoopBackOff"}})
    assert (crashed.restarts, crashed.crashes) == (2, 3), "the restart count itself is the kubelet's"
    [f] = failures(crashed, counted=2)
    assert (f.in_place, f.exit_code) == (True, 1)
    restarted = seen(3, {"running": {}})
    assert failures(restarted, counted=3) == [], "counted once, when it crashed"
