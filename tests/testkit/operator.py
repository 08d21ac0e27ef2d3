"""The operator as the tests run it: ``kubetrain-operator`` in its own process.

:func:`start` launches it against a cluster (optionally one namespace), waits until it
is ready — caches synced — and returns the :class:`~process.Process`; its log is in the
cluster's work directory and its tail is shown if it dies.
"""

from __future__ import annotations

import urllib.request
import uuid

from kubetrain.devcluster import cluster as devcluster
from kubetrain.devcluster import dev, process


def start(
    c: devcluster.Cluster, namespace: str | None = None, *extra: str, timeout: float = 60
) -> process.Process:
    """The operator against ``c`` (all namespaces, or ``namespace``), with ``extra`` flags last."""
    probes = process.free_port()
    flags = [
        f"--health-probe-bind-address=127.0.0.1:{probes}",
        "--metrics-bind-address=0",
        "--kube-api-qps=100",
        "--kube-api-burst=200",
    ]
    if namespace:
        flags.append(f"--namespace={namespace}")
    argv = dev.operator_argv(c, *flags, *extra)
    op = process.Process(
        "kubetrain-operator", argv, c.workdir / "logs" / f"operator-{uuid.uuid4().hex[:6]}.log"
    )
    op.start()
    process.wait_until("the operator to be ready", lambda: ready(probes), timeout=timeout, watch=[op])
    return op


def ready(port: int) -> bool:
    """Whether a process's /readyz on ``port`` answers 200."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as r:
            return r.status == 200
    except OSError:
        return False
