"""core/v1 Events, aggregated: a repeat bumps ``count`` instead of adding an Event.

An Event with the same object, type, reason and message as one sent in the last ten
minutes is patched (``count`` + 1, ``lastTimestamp`` now) rather than created again,
as the kubelet's and client-go's recorders do, so a failing job cannot flood etcd.
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
        seen = self._seen.get(key)
        try:
            if seen is not None and now - seen.last < AGGREGATION_WINDOW:
                seen.count += 1
                seen.last = now
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
