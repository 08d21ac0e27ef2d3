"""The State column is derived from all conditions, never from whichever was written last."""

import datetime

import pytest
from hypothesis import given
from testkit import strategies

from kubetrain.api import meta, v1beta1

T = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)


def cond(ctype: str, status: str = "True") -> meta.Condition:
    return meta.Condition(
        type=ctype, status=meta.ConditionStatus(status), reason="Test", last_transition_time=T
    )


@pytest.mark.parametrize(
    ("conditions", "state"),
    [
        ((), v1beta1.JobState.PENDING),
        ((cond("Created"),), v1beta1.JobState.CREATED),
        ((cond("Created"), cond("Running")), v1beta1.JobState.RUNNING),
        # The Kubeflow bug: Running written after Succeeded showed "Running".
        ((cond("Succeeded"), cond("Running")), v1beta1.JobState.SUCCEEDED),
        ((cond("Running"), cond("Restarting")), v1beta1.JobState.RESTARTING),
        ((cond("Running"), cond("Suspended")), v1beta1.JobState.SUSPENDED),
        ((cond("Running", "False"), cond("Created")), v1beta1.JobState.CREATED),
        ((cond("Failed"), cond("Succeeded")), v1beta1.JobState.FAILED),
    ],
)
def test_state_of(conditions: tuple[meta.Condition, ...], state: v1beta1.JobState) -> None:
    assert v1beta1.state_of(conditions) is state


@given(strategies.conditions)
def test_finished_jobs_never_show_as_active(conditions: tuple[meta.Condition, ...]) -> None:
    true = {c.type for c in conditions if c.is_true()}
    state = v1beta1.state_of(conditions)
    if true & {"Succeeded", "Failed"}:
        assert state in (v1beta1.JobState.SUCCEEDED, v1beta1.JobState.FAILED)
    assert v1beta1.state_of(tuple(reversed(conditions))) is state
