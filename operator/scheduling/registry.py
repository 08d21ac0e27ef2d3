"""The operator's ``--gang-scheduler``: which backend places a job's pods together.

``auto`` (the default) asks the cluster, once at start, and takes the first backend it
serves: Kubernetes' own PodGroup (``v1beta1``, else ``v1alpha2``), then scheduler-plugins'
Coscheduling, then Volcano, else ``none``. The operator's process asks
(:func:`kubetrain.operator.main.detect`): this module, like all of scheduling, is pure. A
backend named outright is used whether or not it is served (``native`` in the version the
cluster serves, if it serves one): a job then finds out on its first create — its PodGroup is
refused, and its ``ReplicaFailure`` condition says the cluster does not serve it and what to
install — instead of pods left Pending for ever.
"""

from __future__ import annotations

from kubetrain.operator.policies import refusal
from kubetrain.operator.scheduling import backend, coscheduling, native, volcano

__all__ = ["AUTO", "CHOICES", "NOT_SERVED", "get", "not_served"]

AUTO = "auto"
CHOICES = (AUTO, "native", "coscheduling", "volcano", "none")
NOT_SERVED = refusal.NOT_SERVED


def get(name: str, *, scheduler_name: str = coscheduling.SCHEDULER_NAME) -> backend.Backend:
    """The backend called ``name`` (not ``auto``: see :func:`kubetrain.operator.main.detect`)."""
    backends = {
        "native": native.BACKEND,
        "coscheduling": coscheduling.make(scheduler_name),
        "volcano": volcano.BACKEND,
        "none": backend.NONE,
    }
    if name not in backends:
        raise ValueError(f"unknown gang scheduler {name!r}: expected one of {', '.join(CHOICES)}")
    return backends[name]


def not_served(b: backend.Backend) -> str:
    """What a job shows when the cluster refuses ``b``'s group object as unknown."""
    assert b.resource is not None
    return (
        f"{b.resource.kind} {b.resource.api_version} {NOT_SERVED} (gang scheduler {b.name!r}: "
        f"install {b.install}, or start the operator with another --gang-scheduler)"
    )
