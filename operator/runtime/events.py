"""core/v1 Events, aggregated: a repeat bumps ``count`` instead of adding an Event.

An Event with the same object, type, reason and message as one sent in the last ten
minutes is patched (``count`` + 1, ``lastTimestamp`` now) rather than created again,
as the kubelet's and client-go's recorders do, so a failing job cannot flood etcd.
What it remembers for that is bounded: entries older than the window are dropped as new ones
come (oldest first), and never more than :data:`MAX_SEEN` are kept.
Recording never raises: an Event is worth less than the reconcile that sends it.
"""

from __future__ import annotations

import datetime
import logging
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from kubetrain.api import wire
from kubetrain.operator.runtime import client

__all__ = ["Recorder"]

log = logging.getLogger(__name__)

AGGREGATION_WINDOW = datetime.timedelta(minutes=10)
# The most Events remembered for aggregation; past it the oldest is forgotten (a repeat of it is
# then a new Event, as after the window).
MAX_SEEN = 10_000
# What the apiserver says when a namespace is being deleted (NamespaceLifecycle admission).
_TERMINATING = "because it is being terminated"


@attrs.define
class _Seen:
    name: str
    count: int
    last: datetime.datetime


class Recorder:
    def __init__(
        self,
        api: client.Client,
        component: str = "kubetrain-operator",
        clock: Callable[[], datetime.datetime] = lambda: datetime.datetime.now(datetime.UTC),
    ) -> None:
        self.api, self.component, self._clock = api, component, clock
        self._seen: dict[tuple[str, ...], _Seen] = {}

    async def event(self, obj: Mapping[str, Any], type_: str, reason: str, message: str) -> None:
        meta = obj["metadata"]
        namespace = meta.get("namespace", "default")
        key = (meta.get("uid", ""), namespace, meta["name"], type_, reason, message)
        now = self._clock()
        self._prune(now)
        seen = self._seen.pop(key, None)
        try:
            if seen is not None and now - seen.last < AGGREGATION_WINDOW:
                seen.count += 1
                seen.last = now
                self._seen[key] = seen  # the newest last: the map stays ordered by last use
                await self.api.merge_patch(
                    client.EVENTS,
                    seen.name,
                    {"count": seen.count, "lastTimestamp": wire.format_time(now)},
                    namespace,
                )
                return
            name = f"{meta['name']}.{int(now.timestamp() * 1e9):x}"
            await self.api.create(
                client.EVENTS,
                {
                    "metadata": {"name": name, "namespace": namespace},
                    "involvedObject": {
                        "apiVersion": obj.get("apiVersion"),
                        "kind": obj.get("kind"),
                        "name": meta["name"],
                        "namespace": namespace,
                        "uid": meta.get("uid"),
                        "resourceVersion": meta.get("resourceVersion"),
                    },
                    "type": type_,
                    "reason": reason,
                    "message": message,
                    "count": 1,
                    "firstTimestamp": wire.format_time(now),
                    "lastTimestamp": wire.format_time(now),
                    "source": {"component": self.component},
                    "reportingComponent": self.component,
                },
                namespace,
            )
            self._seen[key] = _Seen(name=name, count=1, last=now)
            if len(self._seen) > MAX_SEEN:
                del self._seen[next(iter(self._seen))]
        except (client.ApiError, client.NotLeaderError) as e:
            # A namespace being deleted takes its Events along: nobody will read this one.
            terminating = isinstance(e, client.ApiError) and e.status == 403 and _TERMINATING in e.message
            log.log(
                logging.DEBUG if terminating else logging.WARNING,
                "event %s/%s %s not recorded: %s",
                namespace,
                meta["name"],
                reason,
                e,
            )

    def _prune(self, now: datetime.datetime) -> None:
        """Forget the Events last sent longer ago than the window (the map is ordered by last use)."""
        while self._seen:
            key = next(iter(self._seen))
            if now - self._seen[key].last < AGGREGATION_WINDOW:
                return
            del self._seen[key]

    def forget(self, namespace: str, name: str) -> None:
        """The object ``namespace/name`` is gone: none of its Events will be aggregated."""
        for key in [k for k in self._seen if k[1:3] == (namespace, name)]:
            del self._seen[key]

    def __len__(self) -> int:
        """The Events it may still aggregate (those of the last window)."""
        self._prune(self._clock())
        return len(self._seen)
