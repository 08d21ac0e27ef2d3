"""Checkpoint before a stop: whether a stop the operator sees coming waits, and what was saved.

A stop the operator foresees — a user's suspend, Kueue taking the job's admission back (eviction
or preemption), a scale-down of an elastic job, ``activeDeadlineSeconds`` about to expire, a node a
notice says will go — costs the work since the last checkpoint. With ``spec.checkpoint`` the step
asks :func:`before_stop` first:

- no request outstanding: ask one now (:class:`Hold` with ``ask``: the executor writes its number
  into every pod's :data:`~kubetrain.api.naming.CHECKPOINT_REQUEST` annotation) and wait;
- the first rank answered it (its progress line said ``answered=N`` with ``N`` at least the
  request's number, recorded by :func:`seen`): go;
- ``graceSeconds`` passed since the request: go all the same (counted in ``timedOut``);
- else: wait until the answer or the end of the grace, whichever comes first.

A job without ``spec.checkpoint`` is never asked and never waits. Going, the stop is what it was:
the pods are deleted, the job suspended or failed, the pods moved off the node.

:func:`seen` keeps every checkpoint the progress line reports, answered or the training's own
(the last :data:`~kubetrain.api.v1beta1.checkpoint_types.MAX_CHECKPOINTS`), and clears a request
once answered; :func:`resume_step` is the one the next attempt resumes from. :func:`deadline_asks`
says when ``activeDeadlineSeconds`` asks: one grace before it expires (the deadline itself does
not wait).
"""

from __future__ import annotations

import datetime

import attrs

from kubetrain.api import v1beta1
from kubetrain.api.v1beta1 import checkpoint_types

__all__ = ["LOOK_SECONDS", "Hold", "before_stop", "cancel", "deadline_asks", "resume_step", "seen"]

State = v1beta1.CheckpointStatus
# While a stop waits, the step looks this often (each look has the first rank read soon).
LOOK_SECONDS = 5


@attrs.frozen(kw_only=True)
class Hold:
    """The stop waits: until ``until`` at the latest; ``ask`` a request made now (its number)."""

    until: datetime.datetime
    ask: int | None = None


def before_stop(
    spec: v1beta1.CheckpointSpec | None,
    state: State | None,
    reason: v1beta1.StopReason,
    now: datetime.datetime,
    pods: tuple[str, ...] = (),
) -> tuple[State | None, Hold | None]:
    """Whether a stop for ``reason`` waits for a checkpoint (a :class:`Hold`) or goes (None), and
    the checkpoint status after. ``pods``: the pods that will go, when not all of them."""
    if spec is None:
        return state, None
    state = state or State()
    grace = datetime.timedelta(seconds=spec.grace_seconds)
    asked = state.requested
    if asked is None:
        number = state.requests + 1
        request = v1beta1.CheckpointRequest(number=number, reason=reason, time=now, pods=pods[:64])
        return attrs.evolve(state, requests=number, requested=request), Hold(until=now + grace, ask=number)
    if state.answered >= asked.number:
        return attrs.evolve(state, requested=None), None
    if now >= asked.time + grace:
        return attrs.evolve(state, requested=None, timed_out=state.timed_out + 1), None
    return state, Hold(until=asked.time + grace)


def cancel(state: State | None) -> State | None:
    """``state`` without its request: the stop it was asked for is not coming any more."""
    if state is None or state.requested is None:
        return state
    return attrs.evolve(state, requested=None)


def seen(
    state: State | None, progress: v1beta1.ProgressStatus | None, now: datetime.datetime
) -> State | None:
    """``state`` after the first rank's progress: a checkpoint it reports for the first time is
    recorded (as the answer to the request, if it answers it: the stop then goes, at
    :func:`before_stop`)."""
    if progress is None or progress.checkpoint is None:
        return state
    state = state or State()
    asked = state.requested
    answers = (
        asked is not None
        and progress.answered is not None
        and asked.number <= progress.answered
        and state.answered < asked.number
    )
    last = state.last
    if last is not None and last.step == progress.checkpoint and not answers:
        return state
    record = v1beta1.CheckpointRecord(
        step=progress.checkpoint, time=now, answered=asked.reason if answers and asked is not None else None
    )
    kept = state.checkpoints if last is None or last.step != record.step else state.checkpoints[:-1]
    return attrs.evolve(
        state,
        checkpoints=(*kept, record)[-checkpoint_types.MAX_CHECKPOINTS :],
        answered=asked.number if answers and asked is not None else state.answered,
    )


def resume_step(status: v1beta1.TrainingJobStatus) -> int | None:
    """The step of the last checkpoint seen: what the next attempt resumes from."""
    last = status.checkpoint.last if status.checkpoint is not None else None
    return None if last is None else last.step


def deadline_asks(spec: v1beta1.CheckpointSpec | None, until: datetime.datetime) -> datetime.datetime | None:
    """When ``activeDeadlineSeconds``, expiring at ``until``, asks for a checkpoint."""
    return None if spec is None else until - datetime.timedelta(seconds=spec.grace_seconds)
