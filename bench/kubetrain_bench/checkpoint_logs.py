"""What the first rank's own log says of a run stopped and resumed: its attempts, the steps each
reached and resumed from, and how much of the job's time went to steps that were kept.

``samples/scripts/ddp_train.py`` with ``--log-every=1`` prints, in rank 0's pod (the Master's):

- ``rank 0 attempt A after R restart(s), ...`` as an attempt begins (a *segment* of the log);
- ``rank 0 resumed at step S from ...`` when it loaded a checkpoint (S steps done);
- ``rank 0 step I loss L`` after every step (I from 0: I + 1 steps done);
- ``rank 0 saved a checkpoint at step S[, answering request N]``, and with
  ``--pause-after-answer``, ``rank 0 pauses ...`` and ``rank 0 goes on ...``;
- ``KUBETRAIN-RESULT {...}`` at the end.

A stop between two segments redid ``reached - resumed`` steps: the steps the first one had done
when it was stopped, less the step the next one resumed from. The goodput from the log is the
share of a wall-clock window spent in steps that were kept: each step line's time since the
line before it (the resume, or the end of a pause), counted productive if the next segment
resumed at or after it, redone otherwise.
"""

from __future__ import annotations

import datetime
import itertools
import re
from collections.abc import Iterable

import attrs

ATTEMPT = re.compile(r"^rank 0 attempt (\d+) after")
RESUMED = re.compile(r"^rank 0 resumed at step (\d+)")
STEP = re.compile(r"^rank 0 step (\d+) loss")
SAVED = re.compile(r"^rank 0 saved a checkpoint at step (\d+)(?:, answering request (\d+))?")
PAUSES = "rank 0 pauses "
GOES_ON = "rank 0 goes on"
RESULT = "KUBETRAIN-RESULT "


@attrs.define
class Segment:
    """One attempt of rank 0, as its log says it."""

    uid: str
    attempt: int
    began: datetime.datetime
    resumed: int = 0
    # The time the first step is counted from: the resume (or the attempt's start) and, after a
    # pause, its end.
    ready: datetime.datetime | None = None
    steps: list[tuple[int, datetime.datetime]] = attrs.field(factory=list)  # (steps done, when)
    # (step, the request it answered or None, when)
    saves: list[tuple[int, int | None, datetime.datetime]] = attrs.field(factory=list)
    pauses: list[datetime.datetime] = attrs.field(factory=list)
    resumes_after_pause: list[datetime.datetime] = attrs.field(factory=list)
    ended: datetime.datetime | None = None
    finished: bool = False

    @property
    def reached(self) -> int:
        """The steps done when it stopped (a checkpoint saved counts: the step was done)."""
        done = [n for n, _ in self.steps] + [s for s, _, _ in self.saves]
        return max(done, default=self.resumed)

    @property
    def last_step_at(self) -> datetime.datetime | None:
        return self.steps[-1][1] if self.steps else None

    def answer(self, request: int | None = None) -> tuple[int, int, datetime.datetime] | None:
        """The last save that answered a request (``request``, if given): step, request, when."""
        for step, asked, when in reversed(self.saves):
            if asked is not None and (request is None or asked == request):
                return step, asked, when
        return None

    def periodic_before(self, step: int) -> int:
        """The last periodic checkpoint (not asked for) at or before ``step``, or the resume."""
        return max((s for s, asked, _ in self.saves if asked is None and s <= step), default=self.resumed)


def segments(lines: Iterable[tuple[datetime.datetime, str, str]]) -> list[Segment]:
    """Rank 0's attempts from its lines ``(timestamp, pod uid, text)``, in the order they began."""
    out: list[Segment] = []
    by_uid: dict[str, list[tuple[datetime.datetime, str]]] = {}
    for when, uid, text in lines:
        by_uid.setdefault(uid, []).append((when, text))
    for uid, mine in by_uid.items():
        current: Segment | None = None
        for when, text in sorted(mine):
            if found := ATTEMPT.match(text):
                current = Segment(uid=uid, attempt=int(found.group(1)), began=when, ready=when)
                out.append(current)
                continue
            if current is None:
                continue  # the lines before rank 0 said its attempt (resolving, joining)
            current.ended = when
            if found := STEP.match(text):
                current.steps.append((int(found.group(1)) + 1, when))
            elif found := SAVED.match(text):
                asked = int(found.group(2)) if found.group(2) else None
                current.saves.append((int(found.group(1)), asked, when))
            elif found := RESUMED.match(text):
                current.resumed, current.ready = int(found.group(1)), when
            elif text.startswith(PAUSES):
                current.pauses.append(when)
            elif text.startswith(GOES_ON):
                current.resumes_after_pause.append(when)
            elif text.startswith(RESULT):
                current.finished = True
    return sorted(out, key=lambda s: s.began)


@attrs.frozen
class Stop:
    """What one stop cost, from the two segments around it."""

    reached: int  # steps done when the first was stopped
    resumed: int  # the step the next resumed from
    answered: int | None  # the step of the checkpoint saved for the request, if one was
    periodic: int  # the last periodic checkpoint before the stop

    @property
    def redone(self) -> int:
        return self.reached - self.resumed


def stops(segs: list[Segment]) -> list[Stop]:
    out = []
    for before, after in itertools.pairwise(segs):
        answer = before.answer()
        out.append(
            Stop(
                reached=before.reached,
                resumed=after.resumed,
                answered=answer[0] if answer is not None else None,
                periodic=before.periodic_before(before.reached),
            )
        )
    return out


@attrs.frozen
class Goodput:
    productive: float  # seconds in steps kept
    redone: float  # seconds in steps thrown away by a later resume
    wall: float  # the window's seconds

    @property
    def share(self) -> float:
        return self.productive / self.wall if self.wall > 0 else 0.0


def goodput(segs: list[Segment], start: datetime.datetime, end: datetime.datetime) -> Goodput:
    """Seconds of ``[start, end]`` spent in steps kept (productive) and thrown away (redone)."""
    productive = redone = 0.0
    for i, seg in enumerate(segs):
        kept_until = segs[i + 1].resumed if i + 1 < len(segs) else None
        marks = sorted(
            [(when, "step", n) for n, when in seg.steps]
            + [(when, "on", 0) for when in seg.resumes_after_pause]
        )
        since = seg.ready or seg.began
        for when, kind, n in marks:
            if kind == "step":
                seconds = _overlap(since, when, start, end)
                if kept_until is None or n <= kept_until:
                    productive += seconds
                else:
                    redone += seconds
            since = when  # a pause's end: the pause was no step
    return Goodput(productive=productive, redone=redone, wall=(end - start).total_seconds())


def _overlap(
    a: datetime.datetime, b: datetime.datetime, lo: datetime.datetime, hi: datetime.datetime
) -> float:
    return max(0.0, (min(b, hi) - max(a, lo)).total_seconds())
