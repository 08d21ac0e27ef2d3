"""What kubetrain checks in a pod template before anything renders it.

A TrainingJob embeds one pod template per replica type. The CRD keeps templates as
free-form JSON (a full PodTemplateSpec schema would make the CRD several megabytes), so
the apiserver's own pod validation only runs when a pod is created. Two things must
therefore hold before that, here, in pure Python, for the webhook, the reconciler and
``kubetrain render`` alike:

- **Limits.** Nesting deeper than :data:`MAX_DEPTH` levels below the template, a string
  longer than :data:`MAX_STRING`, or a template larger than :data:`MAX_BYTES` encoded is
  refused with the path of the offending value. Nothing a real pod needs comes close; a
  template past them only exhausts memory, stacks and request limits downstream.
- **The shape of every field kubetrain reads or extends**: ``metadata.labels`` and
  ``annotations`` (string maps), ``spec.containers`` and ``initContainers`` (objects with
  a string ``name``), a container's ``image``, ``command``, ``args``, ``env``, ``ports``,
  ``resources`` (``limits`` and ``requests``: string or number values), ``volumeMounts``,
  and ``spec.volumes``. Renderers index into these, so a wrong type must stop at the door
  with a path, not deep inside a reconcile.

Everything else in a template is the apiserver's to judge; the admission webhook asks
it by a server-side dry run of the objects a job renders.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from kubetrain.api import validation, wire

__all__ = ["MAX_BYTES", "MAX_DEPTH", "MAX_STRING", "errors"]

MAX_DEPTH = 32
MAX_STRING = 64 * 1024
MAX_BYTES = 512 * 1024

Path = validation.Path
_E = validation.FieldError
Check = Callable[[Any, Path], Iterator[validation.FieldError]]

_STRING_MAPS = ("labels", "annotations")
_CONTAINER_LISTS = ("containers", "initContainers")
_STRING_LISTS = ("command", "args")
_OBJECT_LISTS = ("env", "ports", "volumeMounts")


def errors(template: Any, at: Path = ("template",)) -> list[validation.FieldError]:
    """Every reason ``template`` (found at path ``at``) cannot be rendered; empty if none."""
    found = list(_limits(template, at))
    if found:
        return found  # shapes of a value past the limits are not worth reading
    return list(_shape(template, at))


# --- limits -------------------------------------------------------------------------------


def _limits(template: Any, at: Path) -> Iterator[validation.FieldError]:
    # Iterative on purpose: a recursive walk is exactly what a deep template would break.
    stack: list[tuple[Any, Path]] = [(template, ())]
    too_long = False
    while stack:
        value, path = stack.pop()
        if len(path) > MAX_DEPTH:
            yield _E(path=at + path, message=f"nested deeper than {MAX_DEPTH} levels below the template")
            return
        if isinstance(value, str) and len(value) > MAX_STRING:
            too_long = True
            yield _E(path=at + path, message=f"must be at most {MAX_STRING} characters, got {len(value)}")
        elif isinstance(value, Mapping):
            stack.extend((v, (*path, str(k))) for k, v in reversed(list(value.items())))
        elif isinstance(value, list):
            stack.extend((v, (*path, i)) for i, v in reversed(list(enumerate(value))))
    size = 0 if too_long else len(json.dumps(template, separators=(",", ":")))
    if size > MAX_BYTES:
        yield _E(path=at, message=f"must be at most {MAX_BYTES} bytes encoded, got {size}")


# --- shapes -------------------------------------------------------------------------------


def _shape(template: Any, at: Path) -> Iterator[validation.FieldError]:
    if not isinstance(template, Mapping):
        yield _E(path=at, message=f"expected object, got {_kind(template)}")
        return
    metadata = template.get("metadata")
    if metadata is not None:
        if _expect(metadata, dict):
            for key in _STRING_MAPS:
                yield from _string_map(metadata.get(key), (*at, "metadata", key))
        else:
            yield _wrong(metadata, dict, (*at, "metadata"))
    spec = template.get("spec")
    if not isinstance(spec, Mapping):
        yield _E(path=(*at, "spec"), message="a pod template needs a spec")
        return
    containers = spec.get("containers")
    if not isinstance(containers, list) or not containers:
        yield _E(path=(*at, "spec", "containers"), message="a pod template needs at least one container")
    for key in _CONTAINER_LISTS:
        yield from _each(spec.get(key), (*at, "spec", key), _container)
    yield from _each(spec.get("volumes"), (*at, "spec", "volumes"), _named_object)


def _container(c: Any, where: Path) -> Iterator[validation.FieldError]:
    if not isinstance(c, Mapping):
        yield _wrong(c, dict, where)
        return
    if not isinstance(c.get("name"), str):
        yield _E(path=(*where, "name"), message="every container needs a name")
    if "image" in c and not isinstance(c["image"], str):
        yield _wrong(c["image"], str, (*where, "image"))
    for key in _STRING_LISTS:
        yield from _each(c.get(key), (*where, key), _string)
    for key in _OBJECT_LISTS:
        yield from _each(c.get(key), (*where, key), _named_object if key == "env" else _object)
    yield from _resources(c.get("resources"), (*where, "resources"))


def _resources(value: Any, path: Path) -> Iterator[validation.FieldError]:
    if value is None:
        return
    if not isinstance(value, Mapping):
        yield _wrong(value, dict, path)
        return
    for key in ("limits", "requests"):
        amounts = value.get(key)
        if amounts is None:
            continue
        if not isinstance(amounts, Mapping):
            yield _E(
                path=(*path, key), message=f"expected a map of resource quantities, got {_kind(amounts)}"
            )
            continue
        for name, amount in amounts.items():
            if isinstance(amount, bool) or not isinstance(amount, str | int | float):
                yield _E(path=(*path, key, str(name)), message=f"expected a quantity, got {_kind(amount)}")


def _string_map(value: Any, path: Path) -> Iterator[validation.FieldError]:
    if value is None:
        return
    if not isinstance(value, Mapping):
        yield _wrong(value, dict, path)
        return
    for k, v in value.items():
        yield from _string(v, (*path, str(k)))


def _each(value: Any, path: Path, item: Check) -> Iterator[validation.FieldError]:
    """An optional array: every entry checked by ``item``."""
    if value is None:
        return
    if not isinstance(value, list):
        yield _wrong(value, list, path)
        return
    for i, v in enumerate(value):
        yield from item(v, (*path, i))


def _string(value: Any, path: Path) -> Iterator[validation.FieldError]:
    if not isinstance(value, str):
        yield _wrong(value, str, path)


def _object(value: Any, path: Path) -> Iterator[validation.FieldError]:
    if not isinstance(value, Mapping):
        yield _wrong(value, dict, path)


def _named_object(value: Any, path: Path) -> Iterator[validation.FieldError]:
    yield from _object(value, path)
    if isinstance(value, Mapping) and not isinstance(value.get("name"), str):
        yield _E(path=(*path, "name"), message="required string")


# --- words --------------------------------------------------------------------------------

_kind = wire.json_name
_NAMES: dict[type, str] = {dict: "object", list: "array", str: "string"}


def _expect(value: Any, tp: type) -> bool:
    return isinstance(value, Mapping) if tp is dict else isinstance(value, tp)


def _wrong(value: Any, tp: type, path: Path) -> validation.FieldError:
    return _E(path=path, message=f"expected {_NAMES[tp]}, got {_kind(value)}")
