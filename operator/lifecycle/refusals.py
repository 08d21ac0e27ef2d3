"""The refusals part of a step: what the apiserver refused at the last try, shown and timed.

Refused creates (:attr:`~.values.Input.refusals`, what the apiserver answered the last try) are
told once each as a ``FailedCreate`` Event, set ``ReplicaFailure`` with the apiserver's message
(or the operator's own verdict: a name taken or held, a kind not served), hold further tries back
(doubling, 1 s to 60 s), and fail the job with ``CreateRefused`` once a permanent refusal is older
than ``refusalGraceSeconds``. The last refusal is kept in ``status.lastRefusal``, so an operator
that restarts neither tries at once nor starts the grace again. A spec changed meanwhile is tried
at once, as a new attempt, so no pod of the old spec stays.

:class:`Refusals` is a part of the step's own class (:mod:`.step`), written apart to keep each
module one noun: it reads and writes the step's state (conditions, attempts, dues).
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING

import attrs

from kubetrain.api import meta, v1beta1
from kubetrain.operator import conditions
from kubetrain.operator.lifecycle.values import Event, Input
from kubetrain.operator.policies import refusal

__all__ = ["DEFAULT_REFUSAL_GRACE_SECONDS", "Refusals", "told"]

# failurePolicy.refusalGraceSeconds when the job does not say.
DEFAULT_REFUSAL_GRACE_SECONDS = 300

C = v1beta1.ConditionType


def told(refused: tuple[v1beta1.Refusal, ...]) -> tuple[Event, ...]:
    """The FailedCreate Events that tell ``refused``, one each."""
    return tuple(
        Event(type="Warning", reason="FailedCreate", message=f"{r.kind} {r.name}: {r.message}")
        for r in refused
    )


class Refusals:
    """The step's handling of refused creates (mixed into the step's class)."""

    inp: Input
    now: datetime.datetime
    spec: v1beta1.TrainingJobSpec
    conditions: tuple[meta.Condition, ...]
    attempts: dict[str, int]
    events: list[Event]
    dues: list[datetime.datetime]
    refused_since: datetime.datetime | None
    last_refusal: v1beta1.Refusal | None

    if TYPE_CHECKING:

        def _is(self, ctype: v1beta1.ConditionType) -> bool: ...
        def _set(self, ctype: v1beta1.ConditionType, status: bool, why: str, message: str) -> None: ...
        def _clear(self, *ctypes: v1beta1.ConditionType, why: str, message: str) -> None: ...
        def _finish(self, ctype: v1beta1.ConditionType, why: str, message: str) -> None: ...
        def _new_attempt(self, keys: Mapping[str, int], *, in_place: bool = False) -> None: ...

    def _tell_refusals(self) -> None:
        """Tell each refusal of the last try once, as a FailedCreate Event."""
        self.events.extend(told(self.inp.untold))

    def _refused_for_good(self, *, held: bool = False) -> bool:
        """Show refused creates; fail the job if a permanent one outlived its grace. ``held``: the
        job is held by Kueue, and what was refused is its Workload."""
        # Refusals of an older spec, or from before a suspension, say nothing about this one.
        resumed = not held and conditions.is_true(self.inp.status.conditions, C.SUSPENDED)
        tried = self.inp.refusals
        refused = [r for r in tried if r.observed_generation == self.inp.generation and not resumed]
        self.last_refusal = attrs.evolve(refused[0], time=max(r.time for r in refused)) if refused else None
        if not refused:
            mended = bool(tried) and self._is(C.REPLICA_FAILURE)
            if mended:
                # Refused under an older spec: start over with the new one, uncharged, so that
                # no pod of the old spec stays beside the new ones.
                self._new_attempt(self.attempts)
                self._clear(C.REPLICA_FAILURE, why="SpecChanged", message="the spec changed; creating again")
            else:
                self._clear(C.REPLICA_FAILURE, why="Created", message="every object of the job was created")
            return False
        first = refused[0]
        kind = refusal.classify(first.code, first.message, first.reason)
        what = f"{first.kind} {first.name}: {first.message}"
        self._set(C.REPLICA_FAILURE, True, kind.reason, what)
        since = conditions.transition_time(self.conditions, C.REPLICA_FAILURE) or self.now
        grace = self.spec.failure_policy.refusal_grace_seconds
        grace = DEFAULT_REFUSAL_GRACE_SECONDS if grace is None else grace
        give_up = since + datetime.timedelta(seconds=grace)
        if kind.permanent and self.now >= give_up:
            self._finish(C.FAILED, "CreateRefused", f"refused for longer than {grace}s: {what}")
            return True
        if kind.permanent:
            self.dues.append(give_up)
        self.refused_since = since
        return False

    def _refusal_waits(self) -> bool:
        """Whether the next try to create waits, the last one refused (and when to look again)."""
        if self.refused_since is None or self.last_refusal is None:
            return False
        tried = self.last_refusal.time
        again = tried + datetime.timedelta(
            seconds=refusal.backoff((tried - self.refused_since).total_seconds())
        )
        if self.now < again:
            self.dues.append(again)
            return True
        return False
