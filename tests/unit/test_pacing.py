"""policies/pacing: a change of the starting pods' counts alone waits; anything else is written at once."""

from __future__ import annotations

import datetime

import attrs

from kubetrain.api import v1beta1
from kubetrain.operator import conditions
from kubetrain.operator.policies import pacing

T = datetime.datetime(2026, 11, 24, 8, 0, tzinfo=datetime.UTC)
S = datetime.timedelta(seconds=1)


def _status(active: int = 0, ready: int = 0, **changes: object) -> v1beta1.TrainingJobStatus:
    replicas = {
        "Master": v1beta1.ReplicaStatus(active=1, ready=1),
        "Worker": v1beta1.ReplicaStatus(active=active, ready=ready),
    }
    return attrs.evolve(v1beta1.TrainingJobStatus(replica_statuses=replicas), **changes)


def test_a_running_jobs_count_change_alone_waits_until_fifteen_seconds_after_the_last_write() -> None:
    running = v1beta1.JobState.RUNNING
    old, new = _status(active=1, state=running), _status(active=2, ready=1, state=running)
    assert pacing.counts_only(old, new)
    assert pacing.delay(old, new, last_write=T, now=T + 1.5 * S) == 13.5
    assert pacing.delay(old, new, last_write=T, now=T + 15.5 * S) == 0.0


def test_a_starting_jobs_count_change_alone_waits_for_its_next_real_change_or_five_minutes() -> None:
    old, new = (
        _status(active=1, state=v1beta1.JobState.CREATED),
        _status(active=4, state=v1beta1.JobState.CREATED),
    )
    assert pacing.delay(old, new, last_write=T, now=T + 60 * S) == 240.0
    assert pacing.delay(old, new, last_write=T, now=T + 301 * S) == 0.0


def test_a_hold_ends_when_the_step_wants_to_look_again() -> None:
    # A restarting job waits for its lost pod's termination deadline, due in 3 s; holding its
    # count change for the starting period would hold the forced delete, and the job, with it.
    restarting = v1beta1.JobState.RESTARTING
    old, new = _status(active=1, ready=1, state=restarting), _status(active=1, state=restarting)
    assert pacing.delay(old, new, last_write=T, now=T, due=3.0) == 3.0
    assert pacing.delay(old, new, last_write=T, now=T, due=None) == 300.0
    assert pacing.delay(old, new, last_write=T, now=T + 299 * S, due=3.0) == 1.0


def test_nothing_written_yet_by_this_process_is_written_at_once() -> None:
    assert pacing.delay(_status(active=1), _status(active=2), last_write=None, now=T) == 0.0


def test_what_says_what_happened_is_written_at_once_and_carries_the_counts() -> None:
    old = _status(active=2)
    running = conditions.set_status((), v1beta1.ConditionType.RUNNING, True, "Running", "", T)
    for new in (
        _status(active=3, conditions=running),
        _status(active=3, state=v1beta1.JobState.RUNNING),
        attrs.evolve(
            old, replica_statuses={**old.replica_statuses, "Worker": v1beta1.ReplicaStatus(failed=1)}
        ),
        attrs.evolve(
            old,
            replica_statuses={**old.replica_statuses, "Worker": v1beta1.ReplicaStatus(active=2, attempt=1)},
        ),
        attrs.evolve(old, restarts=v1beta1.RestartCounts(user_code=1)),
    ):
        assert not pacing.counts_only(old, new)
        assert pacing.delay(old, new, last_write=T, now=T) == 0.0


def test_no_change_is_not_a_count_change() -> None:
    assert not pacing.counts_only(_status(active=2), _status(active=2))
