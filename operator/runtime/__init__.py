"""What an operator needs beyond kr8s: a compact port of controller-runtime's ideas.

Modules: ``client`` (every request: timeouts, QPS/burst, patches, spans, write gate),
``cache`` (a kind's objects with indexes), ``informer`` (list then watch, resumable,
re-list on 410), ``workqueue`` and ``ratelimit`` (one worker per key, deduplication,
delays, backoff), ``reconcile`` (Reconciler, Result, TerminalError), ``controller``
(informers to queue to workers), ``events`` (aggregated Events), ``leaderelection``
(a Lease, with fencing),
``metrics``, ``servers`` (probes, metrics, webhooks), ``tracing``, ``logs``, and
``manager``, which runs them all.
"""

from kubetrain.operator.runtime import (
    cache,
    client,
    controller,
    events,
    informer,
    leaderelection,
    logs,
    manager,
    metrics,
    ratelimit,
    reconcile,
    servers,
    tracing,
    workqueue,
)

__all__ = [
    "cache",
    "client",
    "controller",
    "events",
    "informer",
    "leaderelection",
    "logs",
    "manager",
    "metrics",
    "ratelimit",
    "reconcile",
    "servers",
    "tracing",
    "workqueue",
]
