"""What the reconciler remembers of each job between passes: little, bounded, forgotten with it.

Whatever a decision rests on is in the job's status or in the caches, except what only this
process can know:

- its own last status write, until the job cache shows it: a pass in between would otherwise
  decide on the status before it;
- when it last wrote the job's status, from which :mod:`~.policies.pacing` counts its holds;
- what the apiserver refused at the last create pass, which the next step shows as the job's
  ``ReplicaFailure`` condition;
- the gang groups it created, which no cache holds;
- what it created or deleted that the caches do not show yet (:class:`~.runtime.cache.Expectations`,
  one per kind).

Each is filed under the job's key, one entry per job, and :meth:`Memory.forget` drops all of it
when the job is gone; expectations also lapse after five minutes. A restarted operator starts
with none of it, and loses nothing it needs: refusals are met again at the next create, a group
that exists answers its create with 409, and the rest only saves writes.
"""

from __future__ import annotations

import datetime
from typing import Any

import attrs

from kubetrain.api import v1beta1
from kubetrain.operator.runtime import cache

__all__ = ["Job", "Memory"]

Obj = dict[str, Any]


@attrs.define(kw_only=True)
class Job:
    """What this process remembers of one job."""

    # (the resourceVersion our last status write replaced, the object it produced)
    written: tuple[str, Obj] | None = None
    last_write: datetime.datetime | None = None
    refused: tuple[v1beta1.Refusal, ...] | None = None  # at the last try; None before the first
    groups: set[str] = attrs.field(factory=set)


class Memory:
    """One :class:`Job` per job key, and the expectations of the kinds the caches hold."""

    KINDS = ("Pod", "Service")

    def __init__(self) -> None:
        self._jobs: dict[str, Job] = {}
        self.expected = {kind: cache.Expectations() for kind in self.KINDS}

    def of(self, key: str) -> Job:
        """The job's entry, made when first needed."""
        found = self._jobs.get(key)
        if found is None:
            found = self._jobs[key] = Job()
        return found

    def get(self, key: str) -> Job | None:
        return self._jobs.get(key)

    def forget(self, key: str) -> None:
        """The job is gone: drop everything remembered of it."""
        self._jobs.pop(key, None)
        for expectations in self.expected.values():
            expectations.forget(key)

    def __len__(self) -> int:
        return len(self._jobs)
