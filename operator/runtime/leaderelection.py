"""Leader election on a coordination.k8s.io/v1 Lease, with client-go's timings and rules.

One candidate holds the Lease and renews it every ``retry_period`` (2 s). Others try to
take it every ``retry_period`` once it has not changed for ``lease_duration`` (15 s) —
measured on *their own* clock from when *they* last saw it change, never by trusting
the holder's timestamps. Every write carries the resourceVersion it read, so two
candidates can never both win.

A leader that cannot renew for ``renew_deadline`` (10 s) steps down: :attr:`leading`
turns false at that instant — before any other candidate can take over at 15 s — and
:meth:`may_write` says no from then on, so a leader that was paused, partitioned or
slow writes nothing after losing the Lease. A clean shutdown releases the Lease (holder
cleared) so the next leader starts at once.
"""

from __future__ import annotations

import asyncio
import datetime
import logging
import time
from collections.abc import Callable
from typing import Any

import attrs

from kubetrain.operator.runtime import client

__all__ = ["Config", "LeaderElector"]

log = logging.getLogger(__name__)


@attrs.frozen(kw_only=True)
class Config:
    name: str
    namespace: str
    identity: str
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0


def _micro_time(now: datetime.datetime) -> str:
    return now.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class LeaderElector:
    def __init__(
        self,
        api: client.Client,
        config: Config,
        *,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], datetime.datetime] = lambda: datetime.datetime.now(datetime.UTC),
    ) -> None:
        self.api, self.config = api, config
        self._clock, self._wall = clock, wall_clock
        self._observed: tuple[Any, ...] | None = None
        self._observed_at = 0.0
        self._renewed_at: float | None = None
        self.became_leader = asyncio.Event()
        self.lost = asyncio.Event()

    @property
    def leading(self) -> bool:
        return self._renewed_at is not None and self._clock() - self._renewed_at < self.config.renew_deadline

    def may_write(self) -> bool:
        """The write gate: true only while the Lease is ours and fresh."""
        return self.leading

    async def run(self) -> None:
        """Acquire, then renew until leadership is lost (then return) or the task is cancelled."""
        while not await self._try_acquire_or_renew():
            await asyncio.sleep(self.config.retry_period)
        log.info("%s became leader of %s/%s", self.config.identity, self.config.namespace, self.config.name)
        self.became_leader.set()
        while True:
            await asyncio.sleep(self.config.retry_period)
            renewed = await self._try_acquire_or_renew()
            if not renewed and not self.leading:
                log.warning("%s lost leadership of %s", self.config.identity, self.config.name)
                self._renewed_at = None
                self.lost.set()
                return

    async def release(self) -> None:
        """Give the Lease up, if it is ours, so a successor need not wait for it to expire."""
        if not self.leading:
            return
        self._renewed_at = None
        try:
            lease = await self.api.get(client.LEASES, self.config.name, self.config.namespace)
            if lease.get("spec", {}).get("holderIdentity") != self.config.identity:
                return
            await self.api.merge_patch(
                client.LEASES,
                self.config.name,
                {
                    "metadata": {"resourceVersion": lease["metadata"]["resourceVersion"]},
                    "spec": {
                        "holderIdentity": None,
                        "leaseDurationSeconds": 1,
                        "renewTime": _micro_time(self._wall()),
                    },
                },
                self.config.namespace,
            )
        except client.ApiError as e:
            log.warning("could not release lease %s: %s", self.config.name, e)

    async def _try_acquire_or_renew(self) -> bool:
        c = self.config
        now = self._wall()
        spec = {
            "holderIdentity": c.identity,
            "leaseDurationSeconds": int(c.lease_duration),
            "renewTime": _micro_time(now),
        }
        try:
            lease = await self.api.get(client.LEASES, c.name, c.namespace)
        except client.ApiError as e:
            if not e.not_found:
                log.info("lease %s: %s", c.name, e)
                return False
            return await self._write(
                self.api.create(
                    client.LEASES,
                    {
                        "apiVersion": "coordination.k8s.io/v1",
                        "kind": "Lease",
                        "metadata": {"name": c.name, "namespace": c.namespace},
                        "spec": {**spec, "acquireTime": _micro_time(now), "leaseTransitions": 0},
                    },
                    c.namespace,
                )
            )
        current = lease.get("spec", {})
        record = (current.get("holderIdentity"), current.get("renewTime"), current.get("leaseTransitions"))
        if record != self._observed:
            self._observed, self._observed_at = record, self._clock()
        holder = current.get("holderIdentity")
        held_by_other = bool(holder) and holder != c.identity
        duration = float(current.get("leaseDurationSeconds") or c.lease_duration)
        if held_by_other and self._clock() - self._observed_at < duration:
            return False
        if holder != c.identity:
            spec["acquireTime"] = _micro_time(now)
            spec["leaseTransitions"] = int(current.get("leaseTransitions") or 0) + (1 if holder else 0)
        return await self._write(
            self.api.merge_patch(
                client.LEASES,
                c.name,
                {
                    "metadata": {"resourceVersion": lease["metadata"]["resourceVersion"]},
                    "spec": spec,
                },
                c.namespace,
            )
        )

    async def _write(self, request: Any) -> bool:
        started = self._clock()
        try:
            await request
        except client.ApiError as e:
            log.info("lease %s not taken: %s", self.config.name, e)
            return False
        # Leadership counts from when the request was sent: the apiserver may have been slow.
        self._renewed_at = started
        return True
