"""Goodput: a job's wall time, split into productive time and time lost by cause.

Google's ML Productivity Goodput is the share of a job's time that makes training progress,
the product of three parts: *scheduling* goodput (the job holds the resources it wants),
*runtime* goodput (time not lost to start-up, restarts and steps redone since the last
checkpoint) and *program* goodput (how much of the hardware's speed each step uses). The
operator sees the first two — every change of the job's state goes through its status — and
nothing of the third, so ``status.goodput`` counts a running job whose step moves as productive
however fast it moves.

**What each second is.** Every pass charges the wall time since ``accountedTime`` to what the
job was doing during it, as the status the pass began with says (every change of state is a
status write, so one state held the whole interval):

================================================================  =========================
the status the interval began with                                the time is
================================================================  =========================
Succeeded or Failed                                               not counted: the clock
                                                                  stopped at the end
a checkpoint request outstanding (a stop waits for its answer)    ``checkpointing``
Suspended: Kueue holds or evicted it, or ``runPolicy.suspend``    ``queued``
(a queue suspends a job through it as a user does: the operator
cannot tell them apart)
Created or Pending, its pods gated in a queue (Scheduled=False,   ``queued``
reason Queued)
Restarting (until every replica runs again)                       ``restarting``
Created or Pending otherwise (scheduling, pulls, containers       ``starting``
starting, a resumed job's pods made again)
Running, with progress reports, before the attempt's step first  ``starting``
moves (the startup grace at most)
Running                                                           productive, less what
                                                                  follows
================================================================  =========================

**Hung.** With ``spec.progress.deadlineSeconds``, the time a running attempt's step stands
still after it has moved once is held back, not accounted, until the stall ends: if the pass
that ends it records a hang (``ProgressDeadlineExceeded``), the whole stall since the step last
moved is ``hung`` — not only what came after the deadline; if the step moves again, or the job
stops running for another reason, it was productive. A stall longer than the deadline, the
startup grace and :data:`HANG_SLACK` together is charged as hung without waiting for the
record. Without a deadline there are no hangs.

**Redone.** The steps an attempt threw away are owed (``redoOwedSeconds``) at the rate they were
first run at, and paid from the running time that follows — run again, they cost what they cost
the first time — never more than the productive time so far. A program that reports its
checkpoints says where a new attempt resumes from: as an attempt ends (the job leaves Running for
a restart, a suspend or a requeue), its steps since its last checkpoint and the time since its
step was last read are owed. Otherwise steps thrown away are seen only when a reading of the first
rank's step goes back: the running time since the last accounting was spent getting back and is
``redone``, and (step before - step now) ÷ (the rate before) is owed; what the attempt ran after
its last reading, and a way back quicker than one reading, are missed. Without progress reports,
running time is productive.

**When it is written.** The accounting rides on the status writes the step makes anyway —
any change but the starting pods' counts, which :mod:`.pacing` may hold — and is otherwise
brought up to date :func:`refresh` after it was last: a tenth of the wall time accounted, at
least :data:`REFRESH_MIN` and at most :data:`REFRESH_MAX`. So a job without progress reports
costs one more status write every 10 minutes in its first 100 minutes, one an hour after its
first 10 hours, and the stored share is never more than a tenth of the wall time behind
(``kubetrain describe`` adds the time not accounted yet). A job whose step moves is written
every progress interval anyway, and its accounting with it.
"""

from __future__ import annotations

import datetime
import enum
import math

import attrs

from kubetrain.api import meta, v1beta1
from kubetrain.api.v1beta1 import progress_types
from kubetrain.operator.policies import pacing

__all__ = [
    "HANG_SLACK",
    "LOST",
    "REFRESH_MAX",
    "REFRESH_MIN",
    "REFRESH_SHARE",
    "Accounting",
    "Cause",
    "account",
    "cause",
    "parts",
    "refresh",
]

# How often an accounting that no other change carries is brought up to date: a tenth of the
# wall time accounted, within these bounds.
REFRESH_MIN = datetime.timedelta(minutes=10)
REFRESH_MAX = datetime.timedelta(hours=1)
REFRESH_SHARE = 0.1
# Past the deadline and the startup grace, how long a stall waits for its hang to be recorded
# (the agent's exit, the kubelet, the watch) before it is charged as hung all the same.
HANG_SLACK = datetime.timedelta(minutes=5)

S = v1beta1.JobState
C = v1beta1.ConditionType
# The status's fields a pass may write besides the goodput.
_FIELDS = tuple(f.name for f in attrs.fields(v1beta1.TrainingJobStatus))


class Cause(enum.StrEnum):
    """What a second of a job's wall time went to (the metrics' ``cause`` label)."""

    PRODUCTIVE = "productive"
    QUEUED = "queued"
    STARTING = "starting"
    RESTARTING = "restarting"
    REDONE = "redone"
    HUNG = "hung"
    CHECKPOINTING = "checkpointing"


LOST = (Cause.QUEUED, Cause.STARTING, Cause.RESTARTING, Cause.REDONE, Cause.HUNG, Cause.CHECKPOINTING)


@attrs.frozen(kw_only=True)
class Accounting:
    """The goodput to store, and when to look again to bring it up to date."""

    status: v1beta1.GoodputStatus | None
    dues: tuple[datetime.datetime, ...] = ()


def cause(status: v1beta1.TrainingJobStatus, *, checkpointing: bool = False) -> Cause | None:
    """What the job does while ``status`` is its status; None once it has finished.

    ``checkpointing``: a checkpoint request is outstanding (a stop waits for its answer). Running
    time is productive here; :func:`account` tells its hung and redone parts.
    """
    state = v1beta1.state_of(status.conditions)
    if state in (S.SUCCEEDED, S.FAILED):
        return None
    if checkpointing:
        return Cause.CHECKPOINTING
    if state is S.SUSPENDED:
        return Cause.QUEUED
    if state is S.RESTARTING:
        return Cause.RESTARTING
    if state is S.RUNNING:
        return Cause.PRODUCTIVE
    scheduled = _condition(status, C.SCHEDULED)
    if scheduled is not None and not scheduled.is_true() and scheduled.reason == "Queued":
        return Cause.QUEUED
    return Cause.STARTING


def parts(g: v1beta1.GoodputStatus) -> dict[Cause, int]:
    """Seconds by cause, productive first."""
    lost = g.lost_seconds
    return {
        Cause.PRODUCTIVE: g.productive_seconds,
        Cause.QUEUED: lost.queued,
        Cause.STARTING: lost.starting,
        Cause.RESTARTING: lost.restarting,
        Cause.REDONE: lost.redone,
        Cause.HUNG: lost.hung,
        Cause.CHECKPOINTING: lost.checkpointing,
    }


def refresh(g: v1beta1.GoodputStatus) -> datetime.timedelta:
    """How long after ``accountedTime`` an accounting no other change carries is written."""
    share = datetime.timedelta(seconds=REFRESH_SHARE * g.wall_seconds)
    return min(REFRESH_MAX, max(REFRESH_MIN, share))


def account(
    prev: v1beta1.TrainingJobStatus,
    new: v1beta1.TrainingJobStatus,
    *,
    progress: v1beta1.ProgressSpec | None,
    created: datetime.datetime | None,
    now: datetime.datetime,
    checkpointing: bool = False,
) -> Accounting:
    """``status.goodput`` for a pass from ``prev`` (the status it began with) to ``new`` (what it
    decided, its goodput aside): the time since ``prev``'s accounting charged to what the job
    did meanwhile — if ``new`` is written anyway, or the accounting is :func:`refresh` old.

    ``created``: the job's creation, where its first accounting starts (a job seen before
    goodput existed starts at its first pass); ``checkpointing``: a checkpoint request was
    outstanding in ``prev`` (a stop waited for its answer).
    """
    now = meta.utc(now)
    old = prev.goodput
    fresh = old is None
    if old is None:
        if cause(prev) is None:
            return Accounting(status=None)  # finished before goodput was counted
        start = now if created is None or prev.conditions else min(meta.utc(created), now)
        old = v1beta1.GoodputStatus(accounted_time=start)
    doing = cause(prev, checkpointing=checkpointing)
    if doing is None:
        return Accounting(status=old)  # the clock stopped as the job finished
    t0 = old.accounted_time
    charged: dict[Cause, int] = {}
    until, stalled = now, None
    if now > t0:
        if doing is Cause.PRODUCTIVE:
            until, stalled = _running(prev, new, progress, t0, now, charged)
        else:
            charged[doing] = _seconds(t0, now)
    owed = _redo(prev, new, old, charged, now)
    out = _add(old, charged, until, owed)
    dues = tuple(d for d in (out.accounted_time + refresh(out), stalled) if d is not None)
    if fresh or now >= t0 + refresh(old) or _written_anyway(prev, new):
        return Accounting(status=out, dues=dues)
    return Accounting(status=old, dues=(t0 + refresh(old),))


def _running(
    prev: v1beta1.TrainingJobStatus,
    new: v1beta1.TrainingJobStatus,
    spec: v1beta1.ProgressSpec | None,
    t0: datetime.datetime,
    now: datetime.datetime,
    charged: dict[Cause, int],
) -> tuple[datetime.datetime, datetime.datetime | None]:
    """Charge a running interval: productive, the stall it ends hung, or the stall held back.
    The time accounted up to, and when a stall held back is charged as hung at the latest."""
    p = prev.progress
    moved_at = p.last_moved_time if p is not None else None
    since = min(now, max(t0, moved_at)) if moved_at is not None else t0  # the step last moved
    if _hang_recorded(prev, new):
        charged[Cause.PRODUCTIVE] = _seconds(t0, since)
        charged[Cause.HUNG] = _seconds(since, now)
        return now, None
    deadline = spec.deadline_seconds if spec is not None else None
    began = _attempt_began(prev)
    reported = moved_at is not None and began is not None and moved_at >= began
    if spec is not None and began is not None and not reported:
        # Start-up inside the containers (imports, the rendezvous, a checkpoint loaded) until the
        # attempt's step first moves, for the startup grace at most (a program may never report).
        first = new.progress.last_moved_time if new.progress is not None else None
        ready = first if first is not None and first >= began else began + _grace(spec)
        ready = min(now, max(t0, ready))
        charged[Cause.STARTING] = _seconds(t0, ready)
        charged[Cause.PRODUCTIVE] = _seconds(ready, now)
        return now, None
    moved = new.progress is not None and p is not None and new.progress.last_moved_time != moved_at
    still = v1beta1.state_of(new.conditions) is S.RUNNING
    if deadline is None or not reported or moved or not still:
        charged[Cause.PRODUCTIVE] = _seconds(t0, now)
        return now, None
    assert spec is not None
    limit = since + datetime.timedelta(seconds=deadline) + _grace(spec) + HANG_SLACK
    charged[Cause.PRODUCTIVE] = _seconds(t0, since)
    if now >= limit:
        charged[Cause.HUNG] = _seconds(since, now)
        return now, None
    return since, limit


def _attempt_began(status: v1beta1.TrainingJobStatus) -> datetime.datetime | None:
    """When the running attempt began running: the job turned Running, or its last restart
    ended (a restart, a move off a noticed node, leaves the Running condition as it was)."""
    running = _condition(status, C.RUNNING)
    if running is None:
        return None
    ends = (running, _condition(status, C.RESTARTING))
    return max(
        (c.last_transition_time for c in ends if c is not None and c.last_transition_time), default=None
    )


def _grace(spec: v1beta1.ProgressSpec) -> datetime.timedelta:
    return datetime.timedelta(seconds=spec.startup_grace)


def _hang_recorded(prev: v1beta1.TrainingJobStatus, new: v1beta1.TrainingJobStatus) -> bool:
    if new.failures == prev.failures:
        return False
    seen = set(prev.failures)
    return any(r.reason == progress_types.HUNG and r not in seen for r in new.failures)


def _redo(
    prev: v1beta1.TrainingJobStatus,
    new: v1beta1.TrainingJobStatus,
    old: v1beta1.GoodputStatus,
    charged: dict[Cause, int],
    now: datetime.datetime,
) -> int:
    """Move running time to redone: all of it when the step went back in this pass, else as much
    as was owed; then owe what this pass sees thrown away, to be paid as it is run again. What is
    owed after."""
    productive = charged.get(Cause.PRODUCTIVE, 0)
    owed = old.redo_owed_seconds
    a, b = prev.progress, new.progress
    back = a.step - b.step if a is not None and b is not None and b.step < a.step else 0
    if back:
        moved = productive
    else:
        moved = min(productive, owed)
        owed -= moved
    owed += _thrown_away(prev, new, now, back)
    if moved:
        charged[Cause.PRODUCTIVE] = productive - moved
        charged[Cause.REDONE] = charged.get(Cause.REDONE, 0) + moved
    return min(owed, old.productive_seconds + charged.get(Cause.PRODUCTIVE, 0))


def _thrown_away(
    prev: v1beta1.TrainingJobStatus, new: v1beta1.TrainingJobStatus, now: datetime.datetime, back: int
) -> int:
    """Seconds of running time this pass sees thrown away, at the rate the steps were run at;
    ``back``: the steps the first rank's reading went back in this pass (0 if it did not).

    A program that reports its checkpoints says where a new attempt resumes from: the running
    attempt's steps since its last checkpoint are thrown away when it ends (the job leaves Running
    for a restart, a suspend or a requeue), with the time since they were last read — charged then,
    once. Otherwise they are seen only when the step goes back, from the last reading to the first
    one after: what the attempt ran after its last reading, and the steps run again before the next
    reading, are missed (a stop at 10 steps a second: 0-1 s seen of 4-9 s thrown away)."""
    a = prev.progress
    rate = _rate(a.steps_per_second) if a is not None else None
    if a is None or rate is None:
        return 0
    if a.checkpoint is None or a.checkpoint > a.step:
        return math.ceil(back / rate)
    began = _attempt_began(prev)
    if began is None or a.observed_time is None or a.observed_time < began:
        return 0  # read in an attempt before this one: charged as that one ended
    ends = v1beta1.state_of(new.conditions) not in (S.RUNNING, S.SUCCEEDED, S.FAILED)
    if v1beta1.state_of(prev.conditions) is S.RUNNING and ends:
        since_read = max(0.0, (now - a.observed_time).total_seconds())
        return math.ceil((a.step - a.checkpoint) / rate + since_read)
    if back:  # a restart inside the attempt's containers
        return math.ceil((a.step - min(a.checkpoint, a.step - back)) / rate)
    return 0


def _rate(text: str | None) -> float | None:
    try:
        rate = float(text) if text else None
    except ValueError:
        return None
    return rate if rate is not None and math.isfinite(rate) and rate > 0 else None


def _add(
    old: v1beta1.GoodputStatus, charged: dict[Cause, int], until: datetime.datetime, owed: int
) -> v1beta1.GoodputStatus:
    total = {c: s + charged.get(c, 0) for c, s in parts(old).items()}
    wall = sum(total.values())
    return v1beta1.GoodputStatus(
        accounted_time=until,
        productive_seconds=total[Cause.PRODUCTIVE],
        lost_seconds=v1beta1.LostSeconds(**{c.value: total[c] for c in LOST}),
        share=f"{100 * total[Cause.PRODUCTIVE] // wall}%" if wall else None,
        redo_owed_seconds=owed,
    )


def _written_anyway(prev: v1beta1.TrainingJobStatus, new: v1beta1.TrainingJobStatus) -> bool:
    """Whether the pass writes ``new`` whatever its goodput: it changes more than the starting
    pods' counts, which pacing may hold."""
    if any(
        getattr(prev, f) != getattr(new, f)
        for f in _FIELDS
        if f not in ("goodput", "replica_statuses", "state")  # the state follows the conditions
    ):
        return True
    a, b = prev.replica_statuses, new.replica_statuses
    if a == b:
        return False
    return not pacing.counts_only(
        v1beta1.TrainingJobStatus(replica_statuses=a), v1beta1.TrainingJobStatus(replica_statuses=b)
    )


def _seconds(a: datetime.datetime, b: datetime.datetime) -> int:
    return max(0, int((b - a).total_seconds()))


def _condition(status: v1beta1.TrainingJobStatus, ctype: v1beta1.ConditionType) -> meta.Condition | None:
    return next((c for c in status.conditions if c.type == ctype), None)
