"""Jobs as the operator leaves them, for tests of what people read: conditions of a given
age, a status with the state the conditions imply, a creation time.

All times count back from :data:`NOW`, so a test's expected ages are fixed.
"""

from __future__ import annotations

import datetime
from typing import Any

import attrs

from kubetrain.api import meta, v1beta1

NOW = datetime.datetime(2026, 11, 24, 12, 0, 0, tzinfo=datetime.UTC)


def ago(seconds: float) -> datetime.datetime:
    return NOW - datetime.timedelta(seconds=seconds)


def cond(ctype: str, status: bool, reason: str, message: str = "", age: float = 60) -> meta.Condition:
    return meta.Condition(
        type=ctype,
        status=meta.ConditionStatus.TRUE if status else meta.ConditionStatus.FALSE,
        reason=reason,
        message=message,
        last_transition_time=ago(age),
    )


def with_status(job: v1beta1.TrainingJob, *, created: float = 300, **status: Any) -> v1beta1.TrainingJob:
    """``job`` created ``created`` seconds ago, with this status; its state follows the conditions."""
    conditions = tuple(status.pop("conditions", ()))
    return attrs.evolve(
        job,
        metadata=attrs.evolve(job.metadata, creation_timestamp=ago(created), uid="u-1"),
        status=v1beta1.TrainingJobStatus(
            state=v1beta1.state_of(conditions) if conditions else None, conditions=conditions, **status
        ),
    )
