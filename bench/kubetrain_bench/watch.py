"""List, then watch, one kind of object: the loop both the jobs benchmark and the hostile runner keep."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from kubetrain.operator.runtime import client

Obj = dict[str, Any]


def _nothing(_verb: str) -> None:
    pass


async def list_and_watch(
    api: client.Client,
    resource: client.Resource,
    *,
    namespace: str | None = None,
    listed: Callable[[list[Obj]], None],
    changed: Callable[[str, Obj], None],
    requested: Callable[[str], None] = _nothing,
    retry: float,
) -> None:
    """Forever: list ``resource`` (all namespaces unless ``namespace``), then watch it.

    ``listed(items)`` is called after each list, ``changed(type, object)`` for each ADDED,
    MODIFIED or DELETED the watch shows (bookmarks only move it on). A watch that ends is
    opened again where it was; one that fails (410 Gone, most likely), like any refused
    request, makes it list again after ``retry`` seconds. ``requested("LIST")`` and
    ``requested("WATCH")`` are told each request before it is sent.
    """
    while True:
        try:
            requested("LIST")
            got = await api.list(resource, namespace)
            listed(got["items"])
            rv = got["metadata"]["resourceVersion"]
            while True:
                requested("WATCH")
                params = {
                    "watch": "1",
                    "resourceVersion": rv,
                    "allowWatchBookmarks": "true",
                    "timeoutSeconds": "300",
                }
                async for ev in api.stream(resource, namespace=namespace, params=params, read_timeout=400):
                    if ev["type"] == "ERROR":  # 410 Gone, most likely: list again
                        raise client.ApiError(int(ev["object"].get("code", 0)), "Expired", "watch error")
                    rv = ev["object"]["metadata"]["resourceVersion"]
                    if ev["type"] != "BOOKMARK":
                        changed(ev["type"], ev["object"])
        except client.ApiError:
            await asyncio.sleep(retry)
