"""The failure semantics of a TrainingJob, one policy per module, all pure.

``classify`` (infrastructure or user code), ``failure`` (rules and restart policies to
an action), ``budget`` (what each class may spend), ``backoff`` (delay between
restarts), ``inplace`` (which pods restart where they are, and when they go on), ``avoid``
(nodes new pods keep off), ``placement`` (what the scheduler says), ``refusal`` (creates the
apiserver refused), ``success``, ``deadline`` (active and termination deadlines), ``ttl``,
``cleanup``, ``pacing`` (when a changed status is written), ``vanished`` (pods gone while
nobody watched) and ``admission`` (Kueue's hold on a job of the Workload route). :mod:`kubetrain.operator.lifecycle` combines them into one step.
"""

from kubetrain.operator.policies import (
    admission,
    avoid,
    backoff,
    budget,
    classify,
    cleanup,
    deadline,
    failure,
    inplace,
    pacing,
    placement,
    refusal,
    success,
    ttl,
    vanished,
)

__all__ = [
    "admission",
    "avoid",
    "backoff",
    "budget",
    "classify",
    "cleanup",
    "deadline",
    "failure",
    "inplace",
    "pacing",
    "placement",
    "refusal",
    "success",
    "ttl",
    "vanished",
]
