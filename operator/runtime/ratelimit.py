"""How long a key waits before its next try (client-go's workqueue rate limiters).

The controller default is the slower of two limiters: per-key exponential backoff
(5 ms doubling up to 1000 s, reset by :meth:`forget`) and an overall token bucket
(10 per second, bursts of 100), so one hot key backs off alone while a storm of keys is
smoothed out. Limiters take an injected clock, so tests control time.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable
from typing import Protocol

__all__ = [
    "BucketRateLimiter",
    "ItemExponentialRateLimiter",
    "MaxOfRateLimiter",
    "RateLimiter",
    "controller_default",
]

Clock = Callable[[], float]


class RateLimiter(Protocol):
    def when(self, key: Hashable) -> float:
        """Seconds to wait before ``key`` is tried again; counts as one retry."""

    def forget(self, key: Hashable) -> None:
        """``key`` succeeded: its backoff starts over."""

    def retries(self, key: Hashable) -> int: ...

    def __len__(self) -> int:
        """The keys it holds a count for (each goes with :meth:`forget`)."""


class ItemExponentialRateLimiter:
    def __init__(self, base: float = 0.005, maximum: float = 1000.0) -> None:
        self.base, self.maximum = base, maximum
        self._failures: dict[Hashable, int] = {}

    def when(self, key: Hashable) -> float:
        n = self._failures.get(key, 0)
        self._failures[key] = n + 1
        # Capping the exponent keeps 2**n finite for keys that fail forever.
        return float(min(self.base * 2 ** min(n, 64), self.maximum))

    def forget(self, key: Hashable) -> None:
        self._failures.pop(key, None)

    def __len__(self) -> int:
        return len(self._failures)

    def retries(self, key: Hashable) -> int:
        return self._failures.get(key, 0)


class BucketRateLimiter:
    """A token bucket shared by all keys: ``qps`` tokens a second, at most ``burst`` saved."""

    def __init__(self, qps: float = 10.0, burst: int = 100, clock: Clock = time.monotonic) -> None:
        self.qps, self.burst, self._clock = qps, burst, clock
        self._tokens = float(burst)
        self._last = clock()

    def when(self, key: Hashable) -> float:
        now = self._clock()
        self._tokens = min(self.burst, self._tokens + (now - self._last) * self.qps)
        self._last = now
        self._tokens -= 1  # reserve a token, possibly one not yet earned
        return 0.0 if self._tokens >= 0 else -self._tokens / self.qps

    def forget(self, key: Hashable) -> None:
        pass

    def retries(self, key: Hashable) -> int:
        return 0

    def __len__(self) -> int:
        return 0


class MaxOfRateLimiter:
    def __init__(self, *limiters: RateLimiter) -> None:
        self._limiters = limiters

    def when(self, key: Hashable) -> float:
        return max(limiter.when(key) for limiter in self._limiters)

    def forget(self, key: Hashable) -> None:
        for limiter in self._limiters:
            limiter.forget(key)

    def retries(self, key: Hashable) -> int:
        return max(limiter.retries(key) for limiter in self._limiters)

    def __len__(self) -> int:
        return max((len(limiter) for limiter in self._limiters), default=0)


def controller_default(clock: Clock = time.monotonic) -> RateLimiter:
    return MaxOfRateLimiter(ItemExponentialRateLimiter(0.005, 1000.0), BucketRateLimiter(10.0, 100, clock))
