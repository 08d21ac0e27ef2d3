"""The informer's in-memory copy of one kind, with indexes.

Objects are keyed ``namespace/name`` (or ``name`` when cluster-scoped). Indexers map an
object to the values it is filed under — :func:`by_owner` files pods, services and
config maps under the TrainingJob that controls them — so the reconciler finds a job's
children without listing anything. Reads return the stored dicts; treat them as frozen.
:func:`controller_of` is :func:`kubetrain.api.meta.controller_of`, re-exported: the client
reads whose a pod is the same way.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from kubetrain.api import v1beta1
from kubetrain.api.meta import controller_of

__all__ = ["Expectations", "Indexer", "Store", "Tombstones", "by_owner", "controller_of", "key_of"]

Obj = dict[str, Any]
Indexer = Callable[[Obj], Iterable[str]]


def key_of(obj: Mapping[str, Any]) -> str:
    meta = obj["metadata"]
    namespace = meta.get("namespace")
    return f"{namespace}/{meta['name']}" if namespace else str(meta["name"])


def by_owner(kind: str = v1beta1.KIND) -> Indexer:
    """Index by the ``namespace/name`` of the controlling owner of ``kind``."""

    def index(obj: Obj) -> list[str]:
        ref = controller_of(obj)
        if ref is None or ref.get("kind") != kind:
            return []
        return [f"{obj['metadata'].get('namespace', '')}/{ref['name']}"]

    return index


class Store:
    def __init__(self, indexers: Mapping[str, Indexer] | None = None) -> None:
        self._items: dict[str, Obj] = {}
        self._indexers = dict(indexers or {})
        self._indexes: dict[str, dict[str, set[str]]] = {name: {} for name in self._indexers}

    def __len__(self) -> int:
        return len(self._items)

    def get(self, key: str) -> Obj | None:
        return self._items.get(key)

    def objects(self) -> list[Obj]:
        return list(self._items.values())

    def keys(self) -> list[str]:
        return list(self._items)

    def by_index(self, index: str, value: str) -> list[Obj]:
        return [self._items[k] for k in sorted(self._indexes[index].get(value, ()))]

    def upsert(self, obj: Obj) -> Obj | None:
        """Store ``obj``; returns the version it replaced."""
        key = key_of(obj)
        old = self._items.get(key)
        if old is not None:
            self._unindex(key, old)
        self._items[key] = obj
        self._index(key, obj)
        return old

    def remove(self, key: str) -> Obj | None:
        old = self._items.pop(key, None)
        if old is not None:
            self._unindex(key, old)
        return old

    def replace(self, objs: Iterable[Obj]) -> tuple[list[Obj], list[tuple[Obj, Obj]], list[Obj]]:
        """Make the store hold exactly ``objs``: (added, updated as (old, new), removed)."""
        fresh = {key_of(o): o for o in objs}
        removed = [old for k in list(self._items) if k not in fresh and (old := self.remove(k)) is not None]
        added, updated = [], []
        for obj in fresh.values():
            old = self.upsert(obj)
            if old is None:
                added.append(obj)
            elif _rv(old) != _rv(obj):
                updated.append((old, obj))
        return added, updated, removed

    def _index(self, key: str, obj: Obj) -> None:
        for name, indexer in self._indexers.items():
            for value in indexer(obj):
                self._indexes[name].setdefault(value, set()).add(key)

    def _unindex(self, key: str, obj: Obj) -> None:
        for name, indexer in self._indexers.items():
            for value in indexer(obj):
                keys = self._indexes[name].get(value)
                if keys is not None:
                    keys.discard(key)
                    if not keys:
                        del self._indexes[name][value]


def _rv(obj: Obj) -> str:
    return str(obj["metadata"].get("resourceVersion", ""))


class Tombstones:
    """The last state of recently deleted objects, filed under their controlling owner.

    A pod can fail and be deleted between two reconciles of its job (an eviction, a
    user's ``kubectl delete``); its tombstone lets the reconciler still see — and count —
    that failure. Tombstones live ``ttl`` seconds; they are memory only, so a restarted
    operator sees only the pods that still exist.
    """

    def __init__(
        self, owner: Indexer, ttl: float = 600.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._owner, self._ttl, self._clock = owner, ttl, clock
        self._by_owner: dict[str, dict[str, tuple[float, Obj]]] = {}

    def handler(self, event: str, obj: Obj, _old: Obj | None) -> None:
        """An informer handler: remembers every DELETED object."""
        if event != "DELETED":
            return
        uid = obj["metadata"].get("uid", key_of(obj))
        for owner in self._owner(obj):
            self._by_owner.setdefault(owner, {})[uid] = (self._clock(), obj)

    def of(self, owner: str) -> list[Obj]:
        """The tombstones filed under ``owner`` that have not expired."""
        kept = self._by_owner.get(owner)
        if kept is None:
            return []
        oldest = self._clock() - self._ttl
        for uid in [u for u, (t, _) in kept.items() if t < oldest]:
            del kept[uid]
        if not kept:
            del self._by_owner[owner]
        return [obj for _, obj in kept.values()]

    def forget(self, owner: str) -> None:
        self._by_owner.pop(owner, None)

    def __len__(self) -> int:
        """The owners it files tombstones for."""
        return len(self._by_owner)


class Expectations:
    """Objects this process created or deleted that its cache does not show so yet.

    A create is answered before the watch delivers the object, and a reconcile in between
    sees it missing: created again, it is refused (409) — no harm, but a wasted write, and
    on a loaded apiserver watches lag tens of seconds behind the answers. A deleted object
    still in the cache would be taken as there, and not made again when wanted back. So a
    created object counts as there until the informer says anything of it, and a deleted
    one as gone until the informer says it went — or until ``ttl`` has passed (five minutes,
    as Kubernetes' own controllers wait), after which the cache is believed again. Each is
    filed under its owner (the job's key), and :meth:`forget` drops an owner's with it.
    """

    def __init__(self, ttl: float = 300.0, clock: Callable[[], float] = time.monotonic) -> None:
        self._ttl, self._clock = ttl, clock
        self._expected: dict[str, tuple[bool, float, str]] = {}  # key -> (there?, since, owner)
        self._owned: dict[str, set[str]] = {}  # owner -> keys

    def created(self, key: str, owner: str = "") -> None:
        self._set(key, True, owner)

    def deleted(self, key: str, owner: str = "") -> None:
        self._set(key, False, owner)

    def expected(self, key: str) -> bool | None:
        """Whether ``key`` is to be taken as there; ``None``: ask the cache."""
        entry = self._expected.get(key)
        if entry is None:
            return None
        if self._clock() - entry[1] > self._ttl:
            self._drop(key)
            return None
        return entry[0]

    def pending(self, owner: str) -> list[str]:
        """The keys made for ``owner`` that the cache does not show yet."""
        return [k for k in sorted(self._owned.get(owner, ())) if self.expected(k)]

    def forget(self, owner: str) -> None:
        """``owner`` is gone: nothing made or deleted for it is expected any more."""
        for key in self._owned.pop(owner, ()):
            self._expected.pop(key, None)

    def __len__(self) -> int:
        return len(self._expected)

    def handler(self, event: str, obj: Obj, _old: Obj | None) -> None:
        """An informer handler: a created object seen (or seen going), a deleted one seen going."""
        if not self._expected:
            return
        key = key_of(obj)
        entry = self._expected.get(key)
        if entry is not None and (entry[0] or event == "DELETED"):
            self._drop(key)

    def _set(self, key: str, there: bool, owner: str) -> None:
        self._drop(key)
        self._expected[key] = (there, self._clock(), owner)
        self._owned.setdefault(owner, set()).add(key)

    def _drop(self, key: str) -> None:
        entry = self._expected.pop(key, None)
        if entry is None:
            return
        keys = self._owned.get(entry[2])
        if keys is not None:
            keys.discard(key)
            if not keys:
                del self._owned[entry[2]]
