"""The operator's ``--gang-scheduler``: which backend places a job's pods together.

``auto`` (the default) asks the cluster, once at start, and takes the first backend it
serves: Kubernetes' own PodGroup, then scheduler-plugins' Coscheduling, then Volcano, else
``none``. A backend named outright is used whether or not it is served: a job then finds out
on its first create — its PodGroup is refused, and its ``ReplicaFailure`` condition says the
cluster does not serve it and what to install — instead of pods left Pending for ever.
"""

from __future__ import annotations

import logging

from kubetrain.operator.policies import refusal
from kubetrain.operator.runtime import client
from kubetrain.operator.scheduling import backend, coscheduling, native, volcano

__all__ = ["AUTO", "CHOICES", "NOT_SERVED", "detect", "get", "not_served", "served"]

log = logging.getLogger(__name__)

AUTO = "auto"
CHOICES = (AUTO, "native", "coscheduling", "volcano", "none")
NOT_SERVED = refusal.NOT_SERVED


def get(name: str, *, scheduler_name: str = coscheduling.SCHEDULER_NAME) -> backend.Backend:
    """The backend called ``name`` (not ``auto``: see :func:`detect`)."""
    backends = {
        "native": native.BACKEND,
        "coscheduling": coscheduling.make(scheduler_name),
        "volcano": volcano.BACKEND,
        "none": backend.NONE,
    }
    if name not in backends:
        raise ValueError(f"unknown gang scheduler {name!r}: expected one of {', '.join(CHOICES)}")
    return backends[name]


async def served(api: client.Client, resource: client.Resource, namespace: str | None = None) -> bool:
    """Whether the apiserver serves ``resource`` (a list of one item succeeds)."""
    try:
        await api.list(resource, namespace, limit="1")
    except client.ApiError as e:
        if e.not_found:
            return False
        raise
    return True


async def detect(
    api: client.Client, namespace: str | None = None, *, scheduler_name: str = coscheduling.SCHEDULER_NAME
) -> backend.Backend:
    """The first backend the cluster serves, in the order of :data:`CHOICES`."""
    for name in CHOICES[1:-1]:
        candidate = get(name, scheduler_name=scheduler_name)
        assert candidate.resource is not None
        if await served(api, candidate.resource, namespace):
            log.info("gang scheduling: %s (%s served)", name, candidate.resource.api_version)
            return candidate
    log.info("gang scheduling: none (no PodGroup API is served)")
    return backend.NONE


def not_served(b: backend.Backend) -> str:
    """What a job shows when the cluster refuses ``b``'s group object as unknown."""
    assert b.resource is not None
    return (
        f"{b.resource.kind} {b.resource.api_version} {NOT_SERVED} (gang scheduler {b.name!r}: "
        f"install {b.install}, or start the operator with another --gang-scheduler)"
    )
