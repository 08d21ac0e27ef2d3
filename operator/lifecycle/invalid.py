"""A job that cannot be read or run: it fails once, with every reason, and is left alone after.

The step's first door (:func:`~.step.step` hands it an :class:`~.values.Invalid`): a spec that
does not decode, or that the framework refuses, is a status condition and one Event the user
sees, never a retry.
"""

from __future__ import annotations

import attrs

from kubetrain.api import v1beta1
from kubetrain.operator import conditions
from kubetrain.operator.lifecycle.values import Decision, Event, Invalid

__all__ = ["reject"]

C = v1beta1.ConditionType


def reject(inp: Invalid) -> Decision:
    """A job that cannot be read or run fails once, with every reason, and is left alone after.

    Its pods are left as they are: which of them the clean-up policy would stop cannot be read
    from a spec that does not read.
    """
    prev = inp.status.conditions
    if conditions.is_true(prev, C.FAILED) or conditions.is_true(prev, C.SUCCEEDED):
        return Decision(status=inp.status)
    message = "; ".join(str(e) for e in inp.errors)[:4096]
    now, generation = inp.now, inp.generation
    changed = prev
    for ctype in (C.RUNNING, C.RESTARTING):
        if conditions.is_true(changed, ctype):
            changed = conditions.set_status(changed, ctype, False, "InvalidSpec", message, now, generation)
    changed = conditions.set_status(changed, C.FAILED, True, "InvalidSpec", message, now, generation)
    status = attrs.evolve(
        inp.status, conditions=changed, state=v1beta1.state_of(changed), completion_time=now
    )
    return Decision(status=status, events=(Event(type="Warning", reason="InvalidSpec", message=message),))
