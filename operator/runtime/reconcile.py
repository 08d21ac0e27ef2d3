"""The reconcile contract, as in controller-runtime.

A :class:`Reconciler` has one method: given a :class:`Request` (namespace and name), make
the world match the object and say when to look again. Return ``Result()`` when done,
``Result(requeue_after=s)`` to be called again in ``s`` seconds; raise to be retried
with per-key exponential backoff — except :class:`TerminalError`, which means no retry
will help (the error is recorded, the key is forgotten until the object changes).
"""

from __future__ import annotations

from typing import Protocol

import attrs

__all__ = ["Reconciler", "Request", "Result", "TerminalError"]


@attrs.frozen(order=True)
class Request:
    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}" if self.namespace else self.name


@attrs.frozen(kw_only=True)
class Result:
    requeue_after: float | None = None


class TerminalError(Exception):
    """A failure that retrying cannot fix; the controller does not requeue it."""


class Reconciler(Protocol):
    async def reconcile(self, request: Request) -> Result: ...
