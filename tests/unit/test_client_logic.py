"""The client's decisions that need no cluster: when a wait is over, which log lines are
wanted, how a pod and an Event read to a person."""

from __future__ import annotations

import datetime
from typing import Any

import attrs
import pytest
from testkit.builders import a_job

from kubetrain import client
from kubetrain.api import meta, naming, observed, v1beta1, validation
from kubetrain.client import events, jobs, logs, pods, waiting

NOW = datetime.datetime(2026, 11, 24, 12, 0, tzinfo=datetime.UTC)


def job_with(*true: tuple[str, str]) -> v1beta1.TrainingJob:
    job = a_job("train").replicas("Worker", 2).build()
    conditions = tuple(
        meta.Condition(
            type=t,
            status=meta.ConditionStatus.TRUE,
            reason=r,
            message=f"{t} because",
            last_transition_time=NOW,
        )
        for t, r in true
    )
    return attrs.evolve(job, status=attrs.evolve(job.status, conditions=conditions))


@pytest.mark.parametrize(
    ("true", "until", "met"),
    [
        ((), "Succeeded", False),
        ((("Created", "Created"), ("Running", "Running")), "Running", True),
        ((("Succeeded", "Succeeded"),), "Succeeded", True),
        # A job that already succeeded has run: waiting for Running must not hang.
        ((("Succeeded", "Succeeded"),), "Running", True),
        ((("Failed", "BackoffLimitExceeded"),), "Failed", True),
        ((("Scheduled", "Placed"),), "Scheduled", True),
    ],
)
def test_a_wait_is_met_by_the_condition_asked_for(
    true: tuple[tuple[str, str], ...], until: str, met: bool
) -> None:
    assert waiting.outcome(job_with(*true), until) is met


def test_a_failed_job_ends_any_other_wait_with_its_reason() -> None:
    with pytest.raises(client.JobFailed) as e:
        waiting.outcome(job_with(("Failed", "BackoffLimitExceeded")), "Succeeded")
    assert e.value.reason == "BackoffLimitExceeded"
    assert str(e.value) == "TrainingJob 'train' failed: BackoffLimitExceeded: Failed because"


def test_a_succeeded_job_ends_a_wait_for_what_can_no_longer_come() -> None:
    with pytest.raises(client.JobFinished, match="succeeded; it will never be Suspended"):
        waiting.outcome(job_with(("Succeeded", "Succeeded")), "Suspended")


def pod(rtype: str, index: int, attempt: int = 0, **status: Any) -> dict[str, Any]:
    return {
        "metadata": {
            "name": f"train-{rtype}-{index}",
            "uid": f"u-{rtype}-{index}-{attempt}",
            "labels": {
                naming.REPLICA_TYPE: rtype,
                naming.REPLICA_INDEX: str(index),
                naming.ATTEMPT: str(attempt),
            },
        },
        "spec": {"containers": [{"name": "main"}], "nodeName": "n1"},
        "status": status,
    }


@pytest.mark.parametrize(
    ("replica", "attempt", "wanted"),
    [
        (None, None, {"worker-0", "worker-1", "chief-0"}),
        ("Worker", None, {"worker-0", "worker-1"}),
        ("worker/1", None, {"worker-1"}),
        (None, 1, {"worker-1"}),
    ],
)
def test_a_selection_picks_replicas_by_type_index_and_attempt(
    replica: str | None, attempt: int | None, wanted: set[str]
) -> None:
    selection = logs.Selection.parse(replica, attempt)
    candidates = [pod("worker", 0), pod("worker", 1, attempt=1), pod("chief", 0)]
    assert {
        pods.replica_of(observed.Pod.of(p)) for p in candidates if selection.wants(observed.Pod.of(p))
    } == wanted


def test_a_selection_the_job_cannot_have_is_refused_with_what_it_has() -> None:
    job = a_job("train").replicas("Worker", 2).build()
    with pytest.raises(client.InvalidInput, match="numbered 0 to 1; there is no Worker/2"):
        logs.Selection.parse("Worker/2", None).check(job)
    with pytest.raises(client.InvalidInput, match="no replica type 'ps'; it has Worker"):
        logs.Selection.parse("PS", None).check(job)
    with pytest.raises(client.InvalidInput, match="expected TYPE or TYPE/INDEX"):
        logs.Selection.parse("Worker/x", None)


def test_a_pod_reads_with_its_replica_spelled_as_the_spec_and_why_it_waits() -> None:
    job = a_job("train").replicas("Worker", 2).build()
    unscheduled = pod(
        "worker",
        1,
        phase="Pending",
        conditions=[
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "0/2 nodes"}
        ],
    )
    info = pods.info(unscheduled, job)
    assert (info.replica, info.replica_type, info.index, info.phase) == ("worker-1", "Worker", 1, "Pending")
    assert info.reason == "Unschedulable: 0/2 nodes"
    crashed = pod(
        "worker",
        0,
        phase="Running",
        containerStatuses=[
            {
                "name": "main",
                "restartCount": 2,
                "state": {"waiting": {"reason": "CrashLoopBackOff"}},
                "lastState": {"terminated": {"exitCode": 3, "reason": "Error"}},
            }
        ],
    )
    info = pods.info(crashed, job)
    assert (info.restarts, info.reason, info.exit_code) == (2, "CrashLoopBackOff", 3)


def test_the_next_container_instance_is_read_only_once_it_started() -> None:
    def with_state(restarts: int, state: dict[str, Any], phase: str = "Running") -> dict[str, Any]:
        p = pod(
            "worker",
            0,
            phase=phase,
            containerStatuses=[{"name": "main", "restartCount": restarts, "state": state}],
        )
        return {**p, "_deleted": False}

    running = {"running": {}}
    assert logs._next_instance(None, with_state(0, running))
    assert not logs._next_instance(
        None, with_state(0, {"waiting": {"reason": "ContainerCreating"}}, "Pending")
    )
    # The container ended and waits to be restarted: nothing new to read yet.
    assert not logs._next_instance(0, with_state(0, {"terminated": {"exitCode": 3}}))
    assert logs._next_instance(0, with_state(1, running))
    assert logs._next_instance(0, with_state(0, {"terminated": {"exitCode": 0}}, "Succeeded"))


def test_an_event_reads_with_its_object_and_its_latest_time() -> None:
    e = events._event(
        {
            "involvedObject": {"kind": "Pod", "name": "train-worker-0"},
            "type": "Warning",
            "reason": "BackOff",
            "message": "Back-off restarting failed container",
            "firstTimestamp": "2026-11-24T11:00:00Z",
            "lastTimestamp": "2026-11-24T12:00:00Z",
            "count": 4,
        }
    )
    assert e == client.Event(
        time=NOW,
        type="Warning",
        reason="BackOff",
        message="Back-off restarting failed container",
        object="Pod/train-worker-0",
        count=4,
    )


def test_a_log_line_unpacks_as_replica_and_text() -> None:
    line = client.LogLine(
        replica="worker-1", replica_type="Worker", index=1, attempt=0, pod="p", text="hello"
    )
    replica, text = line
    assert (replica, text) == ("worker-1", "hello")


def stored_job(**spec: Any) -> dict[str, Any]:
    template = {"spec": {"containers": [{"name": "pytorch", "image": "x"}]}}
    return {
        "apiVersion": "training.kubetrain.dev/v1beta1",
        "kind": "TrainingJob",
        "metadata": {"name": "old", "namespace": "ml"},
        "spec": {
            "framework": {"name": "pytorch"},
            "replicaSpecs": {"Master": {"template": template}},
            **spec,
        },
    }


def test_a_stored_job_that_todays_rules_refuse_is_read_by_its_types_alone() -> None:
    # A TensorBoard rule has no CEL twin: without the webhook, the apiserver stores this job.
    bad = stored_job(tensorboard={"logDir": "/nowhere"})
    job = jobs.decode(bad)
    assert job.metadata.name == "old"
    assert job.spec.tensorboard is not None
    assert job.spec.tensorboard.log_dir == "/nowhere"
    # The rules are back on for everything after it.
    with pytest.raises(validation.ValidationError):
        jobs.hub_body(bad)


def test_a_stored_job_without_the_apis_shape_is_named_in_the_error() -> None:
    with pytest.raises(client.InvalidInput) as e:
        jobs.decode(stored_job(replicaSpecs={"Master": {"replicas": "many"}}))
    assert str(e.value).startswith("TrainingJob ml/old as stored cannot be read: ")
