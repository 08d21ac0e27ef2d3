"""What the reconciler remembers of each job between passes: little, bounded, forgotten with it.

Whatever a decision rests on is in the job's status or in the caches, except what only this
process can know:

- its own last status write, until the job cache shows it: a pass in between would otherwise
  decide on the status before it;
- when it last wrote the job's status, from which :mod:`~.policies.pacing` counts its holds;
- what the apiserver refused at the last create pass, which the next step shows as the job's
  ``ReplicaFailure`` condition (and as ``FailedCreate`` Events, once);
- the gang groups the job has, which no cache holds (``None`` until this process has looked);
- what it created or deleted that the caches do not show yet (:class:`~.runtime.cache.Expectations`,
  one per kind).

Each is filed under the job's **UID**, never its name: a job deleted and made again under its
name is another job, and inherits nothing of its predecessor (not its gang groups, not what was
refused). :meth:`Memory.of` drops the entry of a predecessor the moment its successor is seen
under the same name, and :meth:`Memory.forget` drops all of a job once its name is gone;
expectations also lapse after five minutes. A restarted operator starts with none of it, and
loses nothing it needs: refusals are met again at the next create, gang groups are listed again,
and the rest only saves writes.
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
    """What this process remembers of one job (one UID)."""

    # (the resourceVersion our last status write replaced, the object it produced)
    written: tuple[str, Obj] | None = None
    last_write: datetime.datetime | None = None
    refused: tuple[v1beta1.Refusal, ...] | None = None  # at the last try; None before the first
    # The refusals of the last try not told yet as FailedCreate Events (the next step tells them).
    untold: tuple[v1beta1.Refusal, ...] = ()
    # The job's gang groups, by name; None until this process has listed or made them.
    groups: frozenset[str] | None = None


class Memory:
    """One :class:`Job` per job UID, the UID each job key names now, and the expectations of
    the kinds the caches hold (filed under the job's UID)."""

    KINDS = ("Pod", "Service")

    def __init__(self) -> None:
        self._jobs: dict[str, Job] = {}  # uid -> what is remembered
        self._uids: dict[str, str] = {}  # namespace/name -> the uid last seen under it
        self.expected = {kind: cache.Expectations() for kind in self.KINDS}

    def of(self, key: str, uid: str) -> Job:
        """The entry of the job ``uid`` named ``key``, made when first needed. A predecessor
        under the same name is forgotten here, whatever it left behind."""
        before = self._uids.get(key)
        if before is not None and before != uid:
            self._drop(before)
        self._uids[key] = uid
        found = self._jobs.get(uid)
        if found is None:
            found = self._jobs[uid] = Job()
        return found

    def get(self, key: str, uid: str) -> Job | None:
        """The entry of ``uid`` if it is the job named ``key`` now."""
        return self._jobs.get(uid) if self._uids.get(key) == uid else None

    def written(self, key: str) -> Job | None:
        """The entry of whichever job ``key`` names now, for reading its last write before the
        cache says which job that is."""
        uid = self._uids.get(key)
        return self._jobs.get(uid) if uid is not None else None

    def forget(self, key: str) -> None:
        """No job is named ``key`` any more: drop everything remembered of the last one."""
        uid = self._uids.pop(key, None)
        if uid is not None:
            self._drop(uid)

    def _drop(self, uid: str) -> None:
        self._jobs.pop(uid, None)
        for expectations in self.expected.values():
            expectations.forget(uid)

    def __len__(self) -> int:
        return len(self._jobs)

    def sizes(self) -> dict[str, int]:
        """How many entries each map holds (a churn test checks they empty with the jobs)."""
        return {
            "jobs": len(self._jobs),
            "names": len(self._uids),
            **{f"expected_{k.lower()}s": len(e) for k, e in self.expected.items()},
        }
