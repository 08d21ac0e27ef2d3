"""Progress: which rank is read, when, and what its line makes of ``status.progress``.

A job with ``spec.progress`` reports through its agents (:mod:`kubetrain.operator.agent`): each
prints the line its rank last wrote, ``progress step=120 total=1000 loss=0.53``. The operator
reads one rank, the first (:func:`source`: index 0 of the framework's choice, else of the type
that decides success), from the tail of its agent's log, at most once per interval, while the
job runs (:mod:`kubetrain.operator.progress_reader`, beside the reconcile workers). :func:`update` turns a reading into the status: a reading
that says nothing new changes nothing, so progress costs at most one status write per job per
interval, and none while the step stands still. The rate is smoothed over the readings that
moved; the estimate of the end is that rate applied to the steps left.
"""

from __future__ import annotations

import datetime
import math
from collections.abc import Iterable

import attrs

from kubetrain.api import observed, v1beta1
from kubetrain.api.v1beta1 import progress_types

__all__ = [
    "DEFAULT_INTERVAL_SECONDS",
    "TAIL_BYTES",
    "TAIL_LINES",
    "Reading",
    "finished",
    "parse",
    "source",
    "update",
]

# How often the operator reads a running job's progress by default (--progress-interval).
DEFAULT_INTERVAL_SECONDS = 60.0
# What of the agent's log is read: its last lines, and at most this many bytes of them.
TAIL_LINES = 5
TAIL_BYTES = 4096
_PREFIX = "progress "
# How much a new rate counts against the last one.
_SMOOTHING = 0.5


@attrs.frozen(kw_only=True)
class Reading:
    """One rank's last reported line, parsed."""

    pod: str
    step: int
    total: int | None = None
    metrics: tuple[tuple[str, str], ...] = ()
    checkpoint: int | None = None  # the step of the rank's last checkpoint
    answered: int | None = None  # the last checkpoint request it answered


def parse(pod: str, tail: str) -> Reading | None:
    """The last well-formed progress line of an agent's log ``tail``, if any."""
    for line in reversed(tail.splitlines()):
        if not line.startswith(_PREFIX):
            continue
        m = progress_types.LINE.match(line[len(_PREFIX) :])
        if m is None:
            continue
        step, total, rest = m.groups()
        metrics: dict[str, str] = {}
        counts: dict[str, int] = {}
        for pair in rest.split():
            name, _, value = pair.partition("=")
            if name in (progress_types.CHECKPOINT, progress_types.ANSWERED):
                if value.isdigit() and len(value) <= 18:  # a step or a number, never a metric
                    counts.setdefault(name, int(value))
                continue
            metrics.setdefault(name, _number(value))
        return Reading(
            pod=pod,
            step=int(step),
            total=int(total) if total and int(total) > 0 else None,
            metrics=tuple(sorted(metrics.items())[: progress_types.MAX_METRICS]),
            checkpoint=counts.get(progress_types.CHECKPOINT),
            answered=counts.get(progress_types.ANSWERED),
        )
    return None


def _number(value: str) -> str:
    return f"{float(value):.6g}"


def source(job: v1beta1.TrainingJob, pods: Iterable[observed.Pod], replica_type: str) -> observed.Pod | None:
    """The pod of index 0 of ``replica_type`` whose progress stands for the job's: while the job
    runs, that pod running; once it has finished, that pod as long as it is there (its agent's
    last line, printed as it stopped, is read once more). None without ``spec.progress``."""
    if job.spec.progress is None:
        return None
    lower = replica_type.lower()
    return next(
        (
            p
            for p in pods
            if p.replica_type == lower
            and p.index == 0
            and not p.gone
            and (finished(job.status) or (p.running and not p.deleting and not p.moving))
        ),
        None,
    )


def finished(status: v1beta1.TrainingJobStatus) -> bool:
    return status.state in (v1beta1.JobState.SUCCEEDED, v1beta1.JobState.FAILED)


def update(
    prev: v1beta1.ProgressStatus | None, reading: Reading, now: datetime.datetime
) -> v1beta1.ProgressStatus:
    """``status.progress`` after ``reading``; ``prev`` itself when it says nothing new."""
    metrics = dict(reading.metrics)
    if (
        prev is not None
        and prev.step == reading.step
        and prev.total_steps == reading.total
        and prev.metrics == metrics
        and prev.pod == reading.pod
        and (prev.checkpoint, prev.answered) == (reading.checkpoint, reading.answered)
    ):
        return prev
    moved = prev is None or prev.step != reading.step or prev.pod != reading.pod
    rate = _rate(prev, reading, now)
    eta = None
    if rate is not None and rate > 0 and reading.total is not None and reading.total > reading.step:
        eta = now + datetime.timedelta(seconds=math.ceil((reading.total - reading.step) / rate))
    return v1beta1.ProgressStatus(
        step=reading.step,
        total_steps=reading.total,
        metrics=metrics,
        pod=reading.pod,
        observed_time=now,
        last_moved_time=now if moved or prev is None else prev.last_moved_time,
        steps_per_second=None if rate is None else f"{rate:.4g}",
        estimated_completion_time=eta,
        checkpoint=reading.checkpoint,
        answered=reading.answered,
    )


def _rate(prev: v1beta1.ProgressStatus | None, reading: Reading, now: datetime.datetime) -> float | None:
    """Steps per second since the last reading that moved, smoothed; the last rate while the
    step stands still, and none after it went back (a restart resumed from a checkpoint)."""
    if prev is None or prev.pod != reading.pod or reading.step < prev.step:
        return None
    last = float(prev.steps_per_second) if prev.steps_per_second else None
    since = prev.last_moved_time or prev.observed_time
    if reading.step == prev.step or since is None:
        return last
    seconds = (now - since).total_seconds()
    if seconds <= 0:
        return last
    new = (reading.step - prev.step) / seconds
    return new if last is None else _SMOOTHING * new + (1 - _SMOOTHING) * last
