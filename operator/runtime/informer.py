"""List, then watch: an informer keeps a :class:`~.cache.Store` equal to the apiserver.

The loop, as client-go's reflector runs it:

1. **List** in pages (``limit``/``continue``), replace the store, and tell the handlers
   what changed since the store was last filled — so a re-list loses no event, deletions
   included. Then mark the informer synced.
2. **Watch** from the list's resourceVersion with ``allowWatchBookmarks``; every event
   moves the resourceVersion on, and bookmarks move it on without an object.
3. A watch that ends or breaks is **resumed from the last resourceVersion** after a
   backoff (0.5 s doubling to 30 s, reset by progress). A watch that stays **silent**
   longer than ``inactivity_timeout`` is dropped and resumed at once: a quiet cluster is no
   failure, and backing off there would leave the first event after a quiet spell (a pod
   failing in a long training run) unseen for up to the backoff's 30 s. **410 Gone** — the
   resourceVersion was compacted away — means going back to step 1.

Handlers are called in order, in the informer's task, with ``(event, new, old)`` where
event is ADDED, MODIFIED or DELETED; they must not block. Objects are stored after
``transform`` — by default :func:`strip_managed_fields`, which the operator never reads
and which is a large share of every object's size. The operator's informers go further:
each keeps only the fields the operator reads of its kind (:mod:`kubetrain.operator.projection`).
The transform runs before the store and the handlers see the object, and must keep what
they need: ``metadata.name``, ``namespace`` and ``resourceVersion`` at least.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping

from kubetrain.operator.runtime import cache, client

__all__ = ["Handler", "Informer", "strip_managed_fields"]

log = logging.getLogger(__name__)

Handler = Callable[[str, cache.Obj, cache.Obj | None], None]


def strip_managed_fields(obj: cache.Obj) -> cache.Obj:
    obj["metadata"].pop("managedFields", None)
    return obj


class Informer:
    def __init__(
        self,
        api: client.Client,
        resource: client.Resource,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        indexers: Mapping[str, cache.Indexer] | None = None,
        page_size: int = 500,
        watch_seconds: int = 300,
        inactivity_timeout: float = 60.0,
        backoff: tuple[float, float] = (0.5, 30.0),
        transform: Callable[[cache.Obj], cache.Obj] = strip_managed_fields,
        carry: Callable[[cache.Obj | None, cache.Obj], cache.Obj] | None = None,
    ) -> None:
        self.api, self.resource = api, resource
        self.namespace, self.label_selector = namespace, label_selector
        self.store = cache.Store(indexers)
        self.synced = asyncio.Event()
        self.resource_version = ""
        self.page_size, self.watch_seconds = page_size, watch_seconds
        self.inactivity_timeout = inactivity_timeout
        self._backoff_base, self._backoff_max = backoff
        self._handlers: list[Handler] = []
        self._transform = transform
        self._carry = carry
        self.relists = 0
        self.events = 0  # watch events and bookmarks received: the informer's progress

    def add_handler(self, handler: Handler) -> None:
        self._handlers.append(handler)

    async def run(self) -> None:
        """Run until cancelled."""
        must_list = True
        delay = self._backoff_base
        while True:
            before = self.events
            try:
                if must_list:
                    await self._list()
                    must_list = False
                await self._watch()
                delay = self._backoff_base
                continue
            except client.SilentWatchError:
                delay = self._backoff_base
                continue
            except (client.ApiError, ValueError, KeyError) as e:
                if isinstance(e, client.ApiError) and e.gone:
                    log.info(
                        "%s: resourceVersion %s is gone; listing again",
                        self.resource.plural,
                        self.resource_version,
                    )
                    must_list = True
                    continue
                if self.events != before:
                    delay = self._backoff_base  # the watch made progress before it broke
                if isinstance(e, client.ApiError):
                    log.warning("%s: %s; retrying in %.1fs", self.resource.plural, e, delay)
                else:
                    log.warning(
                        "%s: malformed response (%s); listing again in %.1fs", self.resource.plural, e, delay
                    )
                    must_list = True
            await asyncio.sleep(delay)
            delay = min(delay * 2, self._backoff_max)

    def _params(self) -> dict[str, str]:
        return {"labelSelector": self.label_selector} if self.label_selector else {}

    async def _list(self) -> None:
        items: list[cache.Obj] = []
        token = ""
        while True:
            params = {**self._params(), "limit": str(self.page_size)}
            if token:
                params["continue"] = token
            page = await self.api.list(self.resource, self.namespace, **params)
            kind = self.resource.kind
            for item in page.get("items", []):
                # List items carry no apiVersion/kind; watch events do. Make them alike.
                item.setdefault("apiVersion", self.resource.api_version)
                item.setdefault("kind", kind)
                items.append(self._transformed(item))
            token = page["metadata"].get("continue", "")
            if not token:
                break
        added, updated, removed = self.store.replace(items)
        self.resource_version = page["metadata"]["resourceVersion"]
        self.relists += 1
        for obj in added:
            self._notify("ADDED", obj, None)
        for old, obj in updated:
            self._notify("MODIFIED", obj, old)
        for obj in removed:
            self._notify("DELETED", obj, obj)
        self.synced.set()

    async def _watch(self) -> None:
        params = {
            **self._params(),
            "watch": "1",
            "allowWatchBookmarks": "true",
            "resourceVersion": self.resource_version,
            "timeoutSeconds": str(self.watch_seconds),
        }
        async for event in self.api.stream(
            self.resource, namespace=self.namespace, params=params, read_timeout=self.inactivity_timeout
        ):
            kind, obj = event["type"], event["object"]
            self.events += 1
            if kind == "ERROR":
                raise client.ApiError(
                    int(obj.get("code", 500)), str(obj.get("reason", "")), str(obj.get("message", ""))
                )
            self.resource_version = obj["metadata"]["resourceVersion"]
            if kind == "BOOKMARK":
                continue
            obj = self._transformed(obj)
            if kind == "DELETED":
                self.store.remove(cache.key_of(obj))
                self._notify("DELETED", obj, obj)
            else:
                old = self.store.upsert(obj)
                self._notify("ADDED" if old is None else "MODIFIED", obj, old)

    def _transformed(self, obj: cache.Obj) -> cache.Obj:
        """The object as stored: transformed, then given what ``carry`` keeps of the stored one."""
        obj = self._transform(obj)
        if self._carry is not None:
            obj = self._carry(self.store.get(cache.key_of(obj)), obj)
        return obj

    def _notify(self, event: str, obj: cache.Obj, old: cache.Obj | None) -> None:
        for handler in self._handlers:
            try:
                handler(event, obj, old)
            except Exception:
                log.exception("%s handler failed on %s %s", self.resource.plural, event, cache.key_of(obj))
