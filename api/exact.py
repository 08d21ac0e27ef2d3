"""Exact conversion of wire objects: an object read back in the version it was written in
is the object as it was written.

The typed conversion (:mod:`kubetrain.api.conversion` and the spokes) is lossless in
*meaning*, but not in *form*: decoding forgets what JSON said only for show. Two things
are lost that way. v1alpha1 keeps its ``replicaSpecs`` (and ``replicaStatuses``) list in
one canonical order, so ``MASTER, WORKER, PS`` comes back as ``MASTER, PS, WORKER``; and
the encoder omits defaults, so a ``replicas: 1``, a ``failurePolicy: {}`` or a ``null``
that the user wrote is gone. Map keys are not lost (the apiserver stores JSON objects
with sorted keys anyway), and neither is anything opaque, such as a pod template.

:func:`convert` restores both, at the unstructured layer and without knowing a single
field of either version. Converting an object ``A`` of version *a* to version *b*, it
also converts the result back to *a* — the way the apiserver will when ``A`` is read in
*a* — and compares that with ``A``:

- a list of objects keyed by ``replicaType`` that came back in another order has its
  written order recorded;
- a key that ``A`` has and the round trip does not (an explicit default) has its path
  and value recorded. List entries are named by their ``replicaType`` where they have
  one, else by their index.

That record travels with the converted object in the annotation :data:`FORM_DATA`,
only when it is not empty, so an object written in canonical form needs none (an
object born v1alpha1 in canonical form carries no annotation in the hub). Converting
back applies it: a list is put back in the recorded order when it still holds exactly
the recorded types, and a recorded value is put back only where its parent still exists
and its key is absent, so whatever was edited in the other version wins. What no longer
applies is ignored, and a record that is stale or corrupt can never make a conversion
fail. Nor can it change what an object means: when restoring changed anything, the
restored object must decode to the very object the typed conversion gave, or the record
is dropped. A record is therefore form only — the worst a bad one does is lose it.

What this does not restore: a value that the types *normalise* rather than omit (a
timestamp with a UTC offset or fractions of a second comes back as ``...Z`` to the
second), and a key the round trip adds that ``A`` did not have (``kind``). Every walk
here is iterative, so an object as deep as the apiserver accepts never hits Python's
recursion limit.

:func:`types_only` is the other half of "conversion never fails on a stored object":
within it, attrs validators do not run, so decoding checks JSON types (which the CRD's
schema guarantees for a stored object) but not the rules an object may have been stored
before, or without — field rules and cross-field rules (``validation.cross_field``) alike.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Collection, Iterator, Mapping
from typing import Any

import attrs

from kubetrain.api import naming

__all__ = ["FORM_DATA", "Form", "convert", "restore", "types_only"]

FORM_DATA = naming.PREFIX + "conversion-form"
"""The annotation that holds a :class:`Form` as compact JSON."""

LIST_KEY = "replicaType"
"""Entries of a list of objects are named by this key when every entry has a distinct one."""

Segment = str | int
Path = tuple[Segment, ...]
Plain = Callable[[Mapping[str, Any], str], dict[str, Any]]
"""Typed conversion of wire data to a version, metadata carried over (scheme's)."""
Meaning = Callable[[Mapping[str, Any]], object]
"""Wire data to what it means: two objects mean the same when these compare equal."""


@attrs.frozen
class Form:
    """What a round trip through another version would not give back."""

    orders: tuple[tuple[Path, tuple[str, ...]], ...] = ()
    explicit: tuple[tuple[Path, Any], ...] = ()

    def __bool__(self) -> bool:
        return bool(self.orders or self.explicit)

    def dumps(self) -> str:
        data: dict[str, Any] = {}
        if self.orders:
            data["order"] = [[list(p), list(o)] for p, o in self.orders]
        if self.explicit:
            data["explicit"] = [[list(p), v] for p, v in self.explicit]
        return json.dumps(data, sort_keys=True, separators=(",", ":"))

    @classmethod
    def loads(cls, raw: object) -> Form:
        """The form in ``raw``; whatever is not a well-formed entry is left out."""
        try:
            data = json.loads(raw) if isinstance(raw, str) else None
        except (ValueError, RecursionError):
            data = None
        if not isinstance(data, dict):
            return cls()
        orders = []
        for entry in _entries(data.get("order")):
            path, order = _path(entry[0]), entry[1]
            if path is not None and isinstance(order, list) and all(isinstance(t, str) for t in order):
                orders.append((path, tuple(order)))
        explicit = []
        for entry in _entries(data.get("explicit")):
            path = _path(entry[0])
            if path and isinstance(path[-1], str):
                explicit.append((path, entry[1]))
        return cls(orders=tuple(orders), explicit=tuple(explicit))


@contextlib.contextmanager
def types_only() -> Iterator[None]:
    """Run attrs validators nowhere within; the previous setting is restored after.

    The switch is process-wide: use it only around synchronous code, as the operator's
    single event loop runs a conversion.
    """
    previous = attrs.validators.get_disabled()
    attrs.validators.set_disabled(True)
    try:
        yield
    finally:
        attrs.validators.set_disabled(previous)


def convert(
    data: Mapping[str, Any],
    api_version: str,
    *,
    plain: Plain,
    meaning: Meaning,
    derived: Collection[str] = (),
) -> dict[str, Any]:
    """``plain(data, api_version)``, in the form recorded for ``api_version`` if any.

    The result carries a new record for the way back, so that converting it back to
    ``data``'s version gives ``data`` as written. ``derived`` names annotations that the
    typed conversion writes itself (the spoke's stash): like :data:`FORM_DATA`, they are
    no part of an object's form. Errors are ``plain``'s; the record adds none.
    """
    if not isinstance(data, Mapping) or data.get("apiVersion") == api_version:
        return plain(data, api_version)
    source = str(data.get("apiVersion"))
    record = Form.loads(_annotations(data).get(FORM_DATA))
    written = _without(data, {FORM_DATA})
    converted = plain(written, api_version)
    if record:
        converted = restore(converted, record, meaning)
    try:
        back = plain(converted, source)
        form = diff(_without(written, derived), _without(back, {FORM_DATA, *derived}))
        dumped = form.dumps() if form else None
    except Exception:  # converting back is the reader's to fail, not this write's: only the form is lost
        return converted
    return converted if dumped is None else _with_annotation(converted, FORM_DATA, dumped)


def restore(data: dict[str, Any], form: Form, meaning: Meaning) -> dict[str, Any]:
    """``data`` put back in ``form`` as far as it applies, never meaning anything else."""
    out = data
    for path, order in form.orders:
        node = _get(out, path) if path else None
        keys = _keys(node) if isinstance(node, list) else None
        if keys is None or sorted(keys) != sorted(order) or keys == list(order):
            continue
        assert isinstance(node, list)
        by_key = dict(zip(keys, node, strict=True))
        out, parent = _writable(out, path[:-1])
        _set(parent, path[-1], [by_key[k] for k in order])
    for path, value in form.explicit:
        parent = _get(out, path[:-1])
        if not isinstance(parent, dict) or path[-1] in parent:
            continue
        out, parent = _writable(out, path[:-1])
        parent[path[-1]] = value
    if out is data:
        return data
    try:
        same = meaning(out) == meaning(data)
    except Exception:  # e.g. a corrupt record's value of the wrong type: drop the record
        same = False
    return out if same else data


def diff(written: Mapping[str, Any], back: Mapping[str, Any]) -> Form:
    """What ``back`` (a round trip of ``written``) lost of ``written``'s form."""
    orders: list[tuple[Path, tuple[str, ...]]] = []
    explicit: list[tuple[Path, Any]] = []
    stack: list[tuple[Path, Any, Any]] = [((), written, back)]
    while stack:
        path, a, b = stack.pop()
        if isinstance(a, Mapping) and isinstance(b, Mapping):
            for k, v in a.items():
                if k not in b:
                    explicit.append(((*path, k), v))
                else:
                    stack.append(((*path, k), v, b[k]))
        elif isinstance(a, list) and isinstance(b, list):
            ka, kb = _keys(a), _keys(b)
            if ka is not None and kb is not None and sorted(ka) == sorted(kb):
                if ka != kb:
                    orders.append((path, tuple(ka)))
                by_key = dict(zip(kb, b, strict=True))
                stack.extend(((*path, k), item, by_key[k]) for k, item in zip(ka, a, strict=True))
            elif len(a) == len(b):
                stack.extend(((*path, i), x, y) for i, (x, y) in enumerate(zip(a, b, strict=True)))
    return Form(orders=tuple(sorted(orders, key=_sort_key)), explicit=tuple(sorted(explicit, key=_sort_key)))


# --- helpers ------------------------------------------------------------------------------


def _sort_key(entry: tuple[Path, Any]) -> list[tuple[int, str]]:
    return [(isinstance(s, int), str(s)) for s in entry[0]]


def _keys(items: list[Any]) -> list[str] | None:
    """The ``replicaType`` of every entry, when every entry is an object with its own."""
    keys = [item.get(LIST_KEY) for item in items if isinstance(item, dict)]
    named = [k for k in keys if isinstance(k, str)]
    return named if len(named) == len(items) and len(set(named)) == len(named) else None


def _entries(raw: object) -> Iterator[list[Any]]:
    if isinstance(raw, list):
        for entry in raw:
            if isinstance(entry, list) and len(entry) == 2:
                yield entry


def _path(raw: object) -> Path | None:
    if not isinstance(raw, list) or not all(
        isinstance(s, str | int) and not isinstance(s, bool) for s in raw
    ):
        return None
    return tuple(raw)


def _child(node: Any, segment: Segment) -> Any:
    if isinstance(node, dict) and isinstance(segment, str):
        return node.get(segment)
    if isinstance(node, list) and isinstance(segment, int):
        return node[segment] if 0 <= segment < len(node) else None
    if isinstance(node, list) and isinstance(segment, str):
        keys = _keys(node)
        return node[keys.index(segment)] if keys is not None and segment in keys else None
    return None


def _get(node: Any, path: Path) -> Any:
    for segment in path:
        node = _child(node, segment)
        if node is None:
            return None
    return node


def _set(parent: Any, segment: Segment, value: Any) -> None:
    if isinstance(parent, dict):
        parent[segment] = value
    else:
        keys = _keys(parent)
        parent[keys.index(segment) if isinstance(segment, str) and keys else segment] = value


def _writable(root: dict[str, Any], path: Path) -> tuple[dict[str, Any], Any]:
    """A copy of ``root`` whose containers along ``path`` are copies too, and the last one.

    Copying only along the path leaves the caller's data (which shares metadata and pod
    templates with the converted object) untouched.
    """
    out = dict(root)
    node: Any = out
    for segment in path:
        child = _child(node, segment)
        copy = dict(child) if isinstance(child, dict) else list(child)
        _set(node, segment, copy)
        node = copy
    return out, node


def _annotations(data: Mapping[str, Any]) -> Mapping[str, Any]:
    metadata = data.get("metadata")
    annotations = metadata.get("annotations") if isinstance(metadata, Mapping) else None
    return annotations if isinstance(annotations, Mapping) else {}


def _without(data: Mapping[str, Any], keys: Collection[str]) -> dict[str, Any]:
    """``data`` without the annotations ``keys``, and without annotations if none are left."""
    annotations = _annotations(data)
    if not any(k in annotations for k in keys):
        return dict(data)
    metadata = dict(data["metadata"])
    rest = {k: v for k, v in annotations.items() if k not in keys}
    if rest:
        metadata["annotations"] = rest
    else:
        del metadata["annotations"]
    return {**data, "metadata": metadata}


def _with_annotation(data: dict[str, Any], key: str, value: str) -> dict[str, Any]:
    metadata = dict(data.get("metadata") or {})
    metadata["annotations"] = {**(metadata.get("annotations") or {}), key: value}
    return {**data, "metadata": metadata}
