"""A list followed by a watch that never ends on its own: what the client's waits and
followed logs read the cluster through.

:func:`changes` yields ``(type, object)`` for everything that matches, first as ``ADDED``
from a list, then every change from a watch started at the list's version. When a watch
ends (its timeout, an expired version), it lists again and carries on; a client that
follows a job for hours never sees that seam, only — at worst — an object twice.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Mapping
from typing import Any

from kubetrain.client import connection

__all__ = ["changes"]

# The apiserver ends each watch after about this long; a fresh one starts at once.
WATCH_SECONDS = 60


async def changes(
    c: connection.Connection, kind: connection.Kind, namespace: str | None, params: Mapping[str, str]
) -> AsyncGenerator[tuple[str, dict[str, Any]], None]:
    while True:
        listed = await c.request("GET", kind, namespace, params=params)
        for item in listed["items"]:
            yield "ADDED", item
        version = listed["metadata"]["resourceVersion"]
        # A watch that ends quietly is started again from where it was.
        while version:
            watch = {
                **params,
                "watch": "true",
                "resourceVersion": version,
                "timeoutSeconds": str(WATCH_SECONDS),
            }
            async with c.stream(kind, namespace, params=watch) as lines:
                async for line in lines:
                    event = json.loads(line)
                    if event.get("type") == "ERROR":
                        version = ""  # expired: list again
                        break
                    version = event["object"]["metadata"].get("resourceVersion", version)
                    yield event["type"], event["object"]
