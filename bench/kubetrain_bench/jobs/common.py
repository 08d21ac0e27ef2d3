"""Names and types every part of the jobs benchmark shares."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any

from kubetrain.api import naming
from kubetrain.operator.runtime import client

LABEL = naming.JOB_NAME
PLAIN_NAMESPACE = "bench-plain"
JOBS_NAMESPACE = "bench"
OPERATOR_USER = "kubetrain-bench-operator"
BENCH_USER = "kubetrain-bench"
CLIENT_GO_LIMITS = (20.0, 30)  # client-go's default QPS and burst, which many operators keep
NAMESPACES = client.Resource("", "v1", "namespaces", "Namespace", namespaced=False)
SERVICEACCOUNTS = client.Resource("", "v1", "serviceaccounts", "ServiceAccount")
# What the benchmark's pod watch calls a Pending pod that kube-scheduler has bound to a node.
BOUND = "Bound"

Obj = dict[str, Any]
RowKey = tuple[str, str, str, str]  # verb, group, resource, subresource (as apiserver_request_total has them)


class BenchTimeoutError(RuntimeError):
    """Not everything reached its state in time; ``partial`` holds how far it got."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.partial: dict[str, Any] = {}


def run_phase(phase: Coroutine[Any, Any, None], result: dict[str, Any]) -> None:
    """Run ``phase`` to its end; at a timeout, how far it got goes into ``result`` before the error goes on."""
    try:
        asyncio.run(phase)
    except BenchTimeoutError as e:
        result.update(e.partial)
        raise
