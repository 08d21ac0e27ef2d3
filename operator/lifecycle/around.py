"""What a step decides around the job's own course: pure functions of its input and result.

:func:`elsewhere` is the whole decision for a job another controller manages (one MultiKueue
dispatches gets its Workload, nothing else); :func:`paced` holds a decision that would only
write the starting pods' counts (:mod:`~kubetrain.operator.policies.pacing`); :func:`outcome`
is what a finished job's Workload tells Kueue; :func:`groups` says which gang groups to create,
which to delete and whether to list them first.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from kubetrain.api import meta, observed, v1beta1
from kubetrain.operator import conditions
from kubetrain.operator.lifecycle import refusals
from kubetrain.operator.lifecycle.values import Decision, Finished, Input
from kubetrain.operator.policies import admission, pacing
from kubetrain.operator.scheduling import gang
from kubetrain.operator.scheduling import workload as workload_

__all__ = ["elsewhere", "groups", "outcome", "paced"]

C = v1beta1.ConditionType


def elsewhere(inp: Input) -> Decision:
    """A job another controller manages is not ours; one MultiKueue dispatches (on the manager
    cluster, waiting as its own Workload) gets its Workload made, and nothing else (a refused
    create of it is told, once)."""
    if inp.spec.manager != workload_.MULTIKUEUE or not inp.admission:
        return Decision(status=inp.status)
    act = admission.dispatched(inp.workload)
    return Decision(
        status=inp.status,
        workload=act,
        priority=inp.priority if act else None,
        events=refusals.told(inp.untold),
    )


def paced(inp: Input, decision: Decision) -> Decision:
    """``decision``, or nothing until later if it would only write the starting pods' counts."""
    if decision.acts:
        return decision
    hold = pacing.delay(inp.status, decision.status, inp.last_write, inp.now, due=decision.requeue_after)
    return Decision(status=inp.status, requeue_after=hold) if hold else decision


def outcome(conds: tuple[meta.Condition, ...]) -> Finished:
    """A finished job's outcome, for its Workload: the condition that ended it says it."""
    ctype = C.SUCCEEDED if conditions.is_true(conds, C.SUCCEEDED) else C.FAILED
    message = next((c.message for c in conds if c.type == ctype), "")
    return Finished(succeeded=ctype is C.SUCCEEDED, message=message or ctype.value)


def groups(
    inp: Input,
    *,
    creates: Collection[tuple[str, int]],
    attempts: Mapping[str, int],
    joining: Collection[str],
    live: Collection[observed.Pod],
    finished: bool,
) -> dict[str, Any]:
    """The gang groups to create (those the pods made now join and not known to exist), to delete
    (of attempts no pod joins any more), and whether to list the job's first: an operator that
    started after the job's first restart cannot know which groups of earlier attempts are left."""
    if not inp.gangs:
        return {}
    known = inp.groups or frozenset()
    wanted: frozenset[str] = frozenset()
    if creates:
        late = {k: k in inp.defaults.start_after for k in inp.spec.replica_specs}
        job = v1beta1.TrainingJob(
            metadata=meta.ObjectMeta(name=inp.name, namespace=inp.namespace),
            spec=inp.spec,
            status=v1beta1.TrainingJobStatus(
                replica_statuses={k: v1beta1.ReplicaStatus(attempt=a) for k, a in attempts.items()}
            ),
        )
        wanted = gang.wanted(job, creates, joining, late)
    joined = {p.gang for p in live if p.gang is not None}
    # Pods made that the caches do not show yet may join any group: none is deleted until they
    # show (then they are deleted too, or join it), or their creates are forgotten.
    stale = () if inp.made else gang.stale(inp.name, known - wanted, set(attempts.values()), joined)
    return {
        "groups": tuple(sorted(wanted - known)),
        "delete_groups": stale,
        "look_up_groups": inp.groups is None and any(attempts.values()) and not finished,
    }
