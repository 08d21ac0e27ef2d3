"""A local port to a job's TensorBoard, the way ``kubectl port-forward`` opens one.

The operator runs TensorBoard for a job whose spec asks for it (``spec.tensorboard``) as
a Deployment of its own; :func:`forward` finds that Deployment's running pod by its labels
and forwards a port on 127.0.0.1 to it through the apiserver, for as long as the caller
holds it open. Nothing listens beyond this host.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import time
from collections.abc import AsyncIterator

import kr8s.asyncio.objects
import kr8s.asyncio.portforward

from kubetrain.api import naming
from kubetrain.client import connection, errors, jobs

__all__ = ["PORT", "forward", "listening"]

PORT = 6006
BIND_ATTEMPTS = 5


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
    async with listening(obj, local_port) as port:
        yield f"http://127.0.0.1:{port}"


@contextlib.asynccontextmanager
async def listening(pod: kr8s.asyncio.objects.Pod, local_port: int) -> AsyncIterator[int]:
    """A forward to ``pod``'s TensorBoard listening on 127.0.0.1 at ``local_port``, or at a free
    port when it is 0; the port.

    Not kr8s's ``start()``: it hands back the port even when binding it failed, and the caller
    then waits on a port where nothing (or something else) answers. Nor its choice of port: a
    random one, which an outgoing connection on this host may hold. The system names a free
    port instead, and if another process takes it before the bind, the next one is tried.
    """
    async with contextlib.AsyncExitStack() as stack:
        for attempt in range(1, BIND_ATTEMPTS + 1):
            port = local_port or _free_port()
            forward = kr8s.asyncio.portforward.PortForward(pod, PORT, local_port=port)
            try:
                await stack.enter_async_context(forward)
                break
            except OSError as e:
                if local_port or attempt == BIND_ATTEMPTS:
                    raise errors.Error(f"cannot listen on 127.0.0.1:{port} for TensorBoard: {e}") from e
        yield port


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


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
