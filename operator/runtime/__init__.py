"""What an operator needs beyond kr8s: a compact port of controller-runtime's ideas.

Modules: ``client`` (every request: timeouts, QPS/burst, patches, spans), ``cache`` (a
kind's objects with indexes), ``informer`` (list then watch, resumable, re-list on 410),
``leaderelection`` (a Lease, with a write gate for fencing), ``ratelimit`` (per-key
backoff and a token bucket), ``workqueue`` (one worker per key,
deduplication, delays).
"""

from kubetrain.operator.runtime import cache, client, informer, leaderelection, ratelimit, workqueue

__all__ = ["cache", "client", "informer", "leaderelection", "ratelimit", "workqueue"]
