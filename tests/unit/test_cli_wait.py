"""`kubetrain wait`: durations as people type them, and exit 0 met, 1 failed, 2 timed out."""

from __future__ import annotations

import argparse
import io
from typing import Any, cast

import pytest
from testkit.builders import a_job
from testkit.statuses import ago, cond, with_status

from kubetrain import client
from kubetrain.api import v1beta1
from kubetrain.cli import errors, wait

C = v1beta1.ConditionType


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("90", 90),
        ("90s", 90),
        ("10m", 600),
        ("1h", 3600),
        ("1h30m", 5400),
        ("1.5h", 5400),
        ("500ms", 0.5),
        ("0", 0),
    ],
)
def test_a_timeout_is_seconds_or_a_duration(text: str, seconds: float) -> None:
    assert wait.duration(text) == seconds


@pytest.mark.parametrize("text", ["", "ten", "10x", "m", "-5", "5m-", "1h 30m", "nan", "inf"])
def test_a_timeout_that_is_not_one_is_refused_with_examples(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="invalid duration"):
        wait.duration(text)


def test_conditions_are_named_in_any_letter_case() -> None:
    assert wait.condition("succeeded") == "Succeeded"
    assert wait.condition("condition=running") == "Running"
    with pytest.raises(
        argparse.ArgumentTypeError, match="unknown condition 'Done': expected one of Created, "
    ):
        wait.condition("Done")


def job(*conditions: Any, failures: tuple[v1beta1.FailureRecord, ...] = ()) -> v1beta1.TrainingJob:
    return with_status(a_job("pt").replicas("Worker", 2).build(), conditions=conditions, failures=failures)


SUCCEEDED = job(
    cond(C.CREATED, True, "TrainingJobCreated"),
    cond(C.SUCCEEDED, True, "SuccessPolicyMet", "Worker 0 succeeded"),
)
LAST = v1beta1.FailureRecord(
    time=ago(5),
    replica_type="Worker",
    index=1,
    pod="pt-worker-1",
    node="node-b",
    exit_code=3,
    failure_class=v1beta1.FailureClass.USER_CODE,
    rule="fatal",
    action=v1beta1.FailureAction.FAIL_JOB,
)
FAILED = job(
    cond(C.CREATED, True, "TrainingJobCreated"),
    cond(C.FAILED, True, "Rule:fatal", "Worker 1 (pt-worker-1) failed: exit code 3"),
    failures=(LAST,),
)
RUNNING = job(
    cond(C.CREATED, True, "TrainingJobCreated"), cond(C.RUNNING, True, "Running", "every replica is running")
)


class Waits:
    """A client whose wait ends as told."""

    def __init__(self, end: v1beta1.TrainingJob | Exception) -> None:
        self.end = end

    def wait(
        self, name: str, until: str, *, timeout: float | None, namespace: str | None
    ) -> v1beta1.TrainingJob:
        if isinstance(self.end, Exception):
            raise self.end
        return self.end


def outcome(
    end: v1beta1.TrainingJob | Exception, until: str = "Succeeded"
) -> tuple[int | errors.CommandError, str]:
    out = io.StringIO()
    try:
        code: int | errors.CommandError = wait.outcome(
            cast(client.Client, Waits(end)), "pt", until, 60, None, out
        )
    except errors.CommandError as e:
        code = e
    return code, out.getvalue()


def test_a_met_condition_exits_0_with_the_state_line() -> None:
    assert outcome(SUCCEEDED) == (0, "trainingjob.training.kubetrain.dev/pt Succeeded: Worker 0 succeeded\n")


def test_a_failed_job_exits_1_with_its_reason_and_last_failure() -> None:
    error, out = outcome(client.JobFailed(FAILED, "Rule:fatal", "Worker 1 (pt-worker-1) failed: exit code 3"))
    assert out == "trainingjob.training.kubetrain.dev/pt Failed: Worker 1 (pt-worker-1) failed: exit code 3\n"
    assert isinstance(error, errors.CommandError)
    assert error.code == 1
    assert str(error).splitlines() == [
        "TrainingJob 'pt' failed: Rule:fatal: Worker 1 (pt-worker-1) failed: exit code 3",
        "last failure: 2026-11-24T11:59:55Z Worker/1 (pod pt-worker-1 on node-b): exit code 3, UserCode, rule fatal -> FailJob",
    ]
    assert error.hint == "kubetrain logs pt --replica Worker/1"


def test_a_job_that_succeeded_while_waiting_for_failure_exits_1() -> None:
    error, out = outcome(client.JobFinished(SUCCEEDED, "Failed"), until="Failed")
    assert isinstance(error, errors.CommandError)
    assert (error.code, str(error)) == (1, "TrainingJob 'pt' succeeded; it will never be Failed")
    assert out.startswith("trainingjob.training.kubetrain.dev/pt Succeeded")


def test_a_timeout_exits_2_and_says_what_the_job_is_doing() -> None:
    error, out = outcome(client.WaitTimeout(RUNNING, "Succeeded", 60))
    assert isinstance(error, errors.CommandError)
    assert error.code == 2
    assert str(error) == "timed out after 60s waiting for TrainingJob 'pt' to be Succeeded (it is Running)"
    assert error.hint == "kubetrain logs pt -f"
    assert out == ""
