"""What an operator needs beyond kr8s: a compact port of controller-runtime's ideas.

Modules: ``ratelimit`` (per-key backoff and a token bucket), ``workqueue`` (one worker
per key, deduplication, delays).
"""

from kubetrain.operator.runtime import ratelimit, workqueue

__all__ = ["ratelimit", "workqueue"]
