"""Waiting for a job to reach a state, and saying why it never will.

A wait watches the one job (a field selector on its name) and decides on every change.
What it waits for is a condition type; ``Succeeded``, ``Failed`` and ``Running`` are the
ones people ask for. It ends when that condition is True, and also when it no longer can
be:

- the job failed (and Failed was not what was asked): :class:`~kubetrain.client.errors.JobFailed`
  with the reason, the message and the failure history;
- the job succeeded, and what was asked is not Succeeded: ``Running`` counts as met (the job
  ran), anything else raises :class:`~kubetrain.client.errors.JobFinished`;
- the job was deleted: :class:`~kubetrain.client.errors.NotFound`;
- the time ran out: :class:`~kubetrain.client.errors.WaitTimeout` with the job as last seen.
"""

from __future__ import annotations

import asyncio
import contextlib

from kubetrain.api import v1beta1
from kubetrain.client import connection, errors, jobs, watch

__all__ = ["outcome", "wait"]

Job = v1beta1.TrainingJob
FAILED = v1beta1.ConditionType.FAILED
SUCCEEDED = v1beta1.ConditionType.SUCCEEDED
RUNNING = v1beta1.ConditionType.RUNNING


def outcome(job: Job, until: str) -> bool:
    """Whether ``until`` is met by ``job``; raises if it never will be."""
    true = {c.type: c for c in job.status.conditions if c.is_true()}
    if until in true or (until == RUNNING and SUCCEEDED in true):
        return True
    if FAILED in true:
        c = true[FAILED]
        raise errors.JobFailed(job, c.reason or "Failed", c.message or "")
    if SUCCEEDED in true:
        raise errors.JobFinished(job, until)
    return False


async def wait(
    c: connection.Connection, name: str, until: str, timeout: float | None, namespace: str | None
) -> Job:
    ns = namespace or c.namespace
    last = await jobs.get(c, name, ns)

    async def watched() -> Job:
        nonlocal last
        params = {"fieldSelector": f"metadata.name={name}"}
        async with contextlib.aclosing(watch.changes(c, connection.TRAININGJOBS, ns, params)) as changes:
            async for kind, obj in changes:
                if kind == "DELETED":
                    raise errors.NotFound(connection.TRAININGJOBS.name, name, ns)
                last = jobs.decode(obj)
                if outcome(last, until):
                    return last
        raise AssertionError("changes() never ends")

    if outcome(last, until):
        return last
    try:
        return await asyncio.wait_for(watched(), timeout)
    except TimeoutError:
        raise errors.WaitTimeout(last, until, timeout or 0) from None
