"""The stops part of a step: a stop the operator sees coming waits for a checkpoint first.

Each stop the step foresees asks :func:`~kubetrain.operator.policies.checkpoint.before_stop`
before it acts (:meth:`Stops._checkpoint_first`): a user's suspend and Kueue taking the job's
admission back (before the pods are deleted), an elastic scale-down (before the surplus pods are),
a node a notice says will go (before the job moves off it: :meth:`Stops._leave_noticed_nodes`),
and ``activeDeadlineSeconds`` (asked one grace before it expires; the deadline itself does not
wait: :meth:`Stops._before_deadline`). While a stop waits its pods stay, and the step looks again
when the grace ends. A request whose stop is not coming any more (the job resumed meanwhile) is
dropped at the end of the step (:meth:`Stops._drop_unforeseen`).

:class:`Stops` is a part of the step's own class (:mod:`.step`), written apart to keep each
module one noun: it reads and writes the step's state (checkpoint status, dues, events).
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

import attrs

from kubetrain.api import observed, v1beta1
from kubetrain.operator.lifecycle.values import Event, Input
from kubetrain.operator.policies import checkpoint

__all__ = ["Stops"]

C = v1beta1.ConditionType
R = v1beta1.StopReason


class Stops:
    """The step's checkpoints before the stops it foresees (mixed into the step's class)."""

    inp: Input
    now: datetime.datetime
    spec: v1beta1.TrainingJobSpec
    events: list[Event]
    dues: list[datetime.datetime]
    attempts: dict[str, int]
    counts: v1beta1.RestartCounts
    checkpoint: v1beta1.CheckpointStatus | None
    # A request made now: its number, and the pods whose annotation says it.
    ask: tuple[int, tuple[str, ...]] | None
    foreseen: bool

    if TYPE_CHECKING:

        def _live(self) -> list[observed.Pod]: ...
        def _set(self, ctype: v1beta1.ConditionType, status: bool, why: str, message: str) -> None: ...
        def _new_attempt(self, keys: Mapping[str, int], *, in_place: bool = False) -> None: ...

    def _checkpoint_first(self, reason: v1beta1.StopReason, ending: Iterable[observed.Pod]) -> bool:
        """Whether the stop for ``reason``, which would end ``ending``, waits for a checkpoint now."""
        running = [p for p in ending if p.running and not p.deleting]
        if not running:
            return False  # nothing runs that could save anything
        self.foreseen = True
        every = [p for p in self._live() if not p.deleting]
        some = tuple(p.name for p in running) if len(running) < len(every) else ()
        before = self.checkpoint.timed_out if self.checkpoint is not None else 0
        self.checkpoint, hold = checkpoint.before_stop(
            self.spec.checkpoint, self.checkpoint, reason, self.now, some
        )
        if hold is None:
            if self.checkpoint is not None and self.checkpoint.timed_out > before:
                self.events.append(
                    Event(
                        type="Warning",
                        reason="CheckpointTimedOut",
                        message=f"no checkpoint was answered within {self._grace()}s: stopping ({reason})",
                    )
                )
            return False
        # Look again at the end of the grace, and every few seconds before it: each look has the
        # first rank's progress read soon (progress_reader), where the answer comes.
        self.dues.append(min(hold.until, self.now + datetime.timedelta(seconds=checkpoint.LOOK_SECONDS)))
        if hold.ask is not None:
            self.ask = (hold.ask, tuple(p.name for p in every))
            self.events.append(
                Event(
                    type="Normal",
                    reason="CheckpointRequested",
                    message=f"checkpoint {hold.ask} asked before the job stops ({reason}); "
                    f"it waits up to {self._grace()}s for the answer",
                )
            )
        return True

    def _before_deadline(self, until: datetime.datetime) -> None:
        """Ask for a checkpoint one grace before ``activeDeadlineSeconds`` expires at ``until``."""
        asks = checkpoint.deadline_asks(self.spec.checkpoint, until)
        if asks is None:
            return
        if self.now < asks:
            self.dues.append(asks)
            return
        self._checkpoint_first(R.DEADLINE, self._live())

    def _scaled_down_waits(self, surplus: list[observed.Pod]) -> bool:
        """Whether the pods of indexes scaled away stay this pass, for a checkpoint."""
        return bool(surplus) and self._checkpoint_first(R.SCALED_DOWN, surplus)

    def _leave_noticed_nodes(self) -> None:
        """Move the job off the nodes a notice says will go, once it has checkpointed: a new
        attempt, uncharged, its pods made again away from them (they are kept off as unhealthy)."""
        noticed = self.inp.noticed
        on_them = [p for p in self._live() if p.node in noticed and not p.deleting]
        if not on_them or self._checkpoint_first(R.NODE_NOTICE, on_them):
            return
        nodes = ", ".join(sorted({str(p.node) for p in on_them}))
        self._new_attempt(self.attempts)
        self.counts = attrs.evolve(self.counts, uncharged=self.counts.uncharged + 1)
        self._set(C.RESTARTING, True, R.NODE_NOTICE.value, f"moving off {nodes}, which a notice says will go")

    def _drop_unforeseen(self) -> None:
        """Forget a request whose stop is not coming any more."""
        if not self.foreseen:
            self.checkpoint = checkpoint.cancel(self.checkpoint)

    def _grace(self) -> int:
        return self.spec.checkpoint.grace_seconds if self.spec.checkpoint is not None else 0
