"""Setting a job's conditions the way metav1 does.

A condition's ``lastTransitionTime`` moves only when its status changes; its reason and
message follow the latest word. Conditions keep their order; new ones are appended.
Reasons must be CamelCase words, so a reason that comes from elsewhere (a pod's, a
rule's) is cleaned up by :func:`reason`.
"""

from __future__ import annotations

import datetime
import re

from kubetrain.api import meta

__all__ = ["is_true", "reason", "set_status", "transition_time"]

_NOT_REASON = re.compile(r"[^A-Za-z0-9_,:]")


def is_true(conditions: tuple[meta.Condition, ...], ctype: str) -> bool:
    return any(c.type == ctype and c.is_true() for c in conditions)


def transition_time(conditions: tuple[meta.Condition, ...], ctype: str) -> datetime.datetime | None:
    """When the condition of type ``ctype`` last changed status, if it is there."""
    return next((c.last_transition_time for c in conditions if c.type == ctype), None)


def reason(text: str) -> str:
    """``text`` as a valid condition reason."""
    cleaned = _NOT_REASON.sub("", text).rstrip(",:")
    return cleaned if cleaned[:1].isalpha() else f"R{cleaned}" if cleaned else "Unknown"


def set_status(
    conditions: tuple[meta.Condition, ...],
    ctype: str,
    status: bool,
    why: str,
    message: str,
    now: datetime.datetime,
    generation: int | None = None,
) -> tuple[meta.Condition, ...]:
    value = meta.ConditionStatus.TRUE if status else meta.ConditionStatus.FALSE
    old = next((c for c in conditions if c.type == ctype), None)
    new = meta.Condition(
        type=ctype,
        status=value,
        reason=reason(why),
        message=message,
        last_transition_time=old.last_transition_time if old is not None and old.status is value else now,
        observed_generation=generation,
    )
    if old is None:
        return (*conditions, new)
    return tuple(new if c is old else c for c in conditions)
