"""A local port to a job's TensorBoard, the way ``kubectl port-forward`` opens one.

The operator runs TensorBoard for a job whose spec asks for it (``spec.tensorboard``) as
a Deployment of its own; :func:`forward` finds that Deployment's running pod by its labels
and forwards a port on 127.0.0.1 to it through the apiserver, for as long as the caller
holds it open. Nothing listens beyond this host.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator

import kr8s.asyncio.objects
import kr8s.asyncio.portforward

from kubetrain.client import connection, errors, jobs
from kubetrain.operator import naming

__all__ = ["PORT", "forward"]

PORT = 6006


@contextlib.asynccontextmanager
async def forward(
    c: connection.Connection, name: str, namespace: str | None, local_port: int, timeout: float
) -> AsyncIterator[str]:
    ns = namespace or c.namespace
    job = await jobs.get(c, name, ns)
    if getattr(job.spec, "tensorboard", None) is None:
        raise errors.Error(
            f"TrainingJob {name!r} has no TensorBoard: add spec.tensorboard (see docs/tensorboard.md)"
        )
    pod = await _running_pod(c, name, ns, timeout)
    obj = await kr8s.asyncio.objects.Pod.get(pod, namespace=ns, api=c.kr8s)
    pf = kr8s.asyncio.portforward.PortForward(obj, PORT, local_port=local_port or "auto")
    port = await pf.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await pf.stop()


async def _running_pod(c: connection.Connection, job: str, ns: str, timeout: float) -> str:
    selector = f"{naming.JOB_NAME}={job},{naming.JOB_ROLE}=tensorboard"
    deadline = time.monotonic() + timeout
    why = "no pod yet"
    while True:
        items = (await c.request("GET", connection.PODS, ns, params={"labelSelector": selector}))["items"]
        for p in items:
            status = p.get("status") or {}
            ready = any(
                x.get("type") == "Ready" and x.get("status") == "True" for x in status.get("conditions") or []
            )
            if status.get("phase") == "Running" and ready and not p["metadata"].get("deletionTimestamp"):
                return str(p["metadata"]["name"])
            waiting = [
                (s.get("state") or {}).get("waiting", {}).get("reason")
                for s in status.get("containerStatuses") or []
            ]
            why = f"pod {p['metadata']['name']} is {status.get('phase', 'Pending')}" + (
                f" ({', '.join(w for w in waiting if w)})" if any(waiting) else ""
            )
        if time.monotonic() > deadline:
            raise errors.Error(f"TensorBoard of TrainingJob {job!r} is not ready after {timeout:g}s: {why}")
        await asyncio.sleep(1)
