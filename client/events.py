"""The Events of a job and of its pods, oldest first: what the operator, the scheduler and
the kubelets said about it.

Events name the object they are about, not its owner, so the job's are found by its name
and kind, and its pods' by the pod names the job gives its replicas; both in one list of
the namespace's Events (a field selector cannot say "this job or these pods").
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any

import attrs

from kubetrain.api import naming, v1beta1, wire
from kubetrain.client import connection

__all__ = ["Event", "list_events"]


@attrs.frozen(kw_only=True)
class Event:
    time: datetime.datetime | None
    type: str
    reason: str
    message: str
    object: str  # TrainingJob/x, Pod/x-worker-0
    count: int = 1


async def list_events(c: connection.Connection, job: v1beta1.TrainingJob) -> list[Event]:
    name = job.metadata.name or ""
    pods = {
        naming.replica_name(name, t, i)
        for t, spec in job.spec.replica_specs.items()
        for i in range(spec.replicas)
    }
    items = (await c.request("GET", connection.EVENTS, job.metadata.namespace))["items"]
    mine = [
        e
        for e in items
        if (e["involvedObject"].get("kind"), e["involvedObject"].get("name"))
        in {(v1beta1.KIND, name), *(("Pod", p) for p in pods)}
    ]
    events = [_event(e) for e in mine]
    oldest = datetime.datetime.min.replace(tzinfo=datetime.UTC)
    return sorted(events, key=lambda e: e.time or oldest)


def _event(e: Mapping[str, Any]) -> Event:
    obj = e["involvedObject"]
    stamp = e.get("lastTimestamp") or e.get("eventTime") or e.get("firstTimestamp")
    series = e.get("series") or {}
    return Event(
        time=wire.parse_time(stamp) if stamp else None,
        type=e.get("type") or "Normal",
        reason=e.get("reason") or "",
        message=e.get("message") or "",
        object=f"{obj.get('kind')}/{obj.get('name')}",
        count=int(series.get("count") or e.get("count") or 1),
    )
