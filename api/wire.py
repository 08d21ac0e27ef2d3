"""The wire format: one cattrs Converter for every API type.

Python names are snake_case; the wire is camelCase (``replica_specs`` <->
``replicaSpecs``), as Kubernetes conventions want. Decoding is strict the way the
apiserver is strict: an integer field refuses ``"3"`` and ``true``, a list refuses a
string, and a key the type does not know is an error — never silently dropped. Every
problem is reported as a :class:`~kubetrain.api.validation.ValidationError` whose paths
use the wire spelling, e.g. ``spec.replicaSpecs.Worker.replicaz: unknown field``.
Encoding omits ``None`` and defaults, except ``apiVersion`` and ``kind``.

Free-form JSON (a pod template) is opaque here: it is taken and given back as it is,
never walked, so no nesting depth can exhaust the interpreter's stack while decoding,
converting or encoding a stored object. Encoded values share those objects with the
typed value they came from; treat both as read-only.
"""

from __future__ import annotations

import datetime
import enum
import typing
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, TypeVar

import attrs
import cattrs
from cattrs.errors import ClassValidationError, ForbiddenExtraKeysError, IterableValidationError
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override

from kubetrain.api import schema, validation

__all__ = ["format_time", "json_name", "parse_time", "structure", "unstructure"]

T = TypeVar("T")

_ALWAYS_EMITTED = frozenset({"api_version", "kind"})


class _MismatchError(TypeError):
    """A value of the wrong JSON type; the message is what the user sees."""


_JSON_NAMES = {
    bool: "boolean",
    int: "integer",
    float: "number",
    str: "string",
    list: "array",
    tuple: "array",
    dict: "object",
    type(None): "null",
}


def json_name(value: Any) -> str:
    """The JSON type of a decoded value, as users know it (``object``, ``array``, ...)."""
    return _JSON_NAMES.get(type(value), type(value).__name__)


def format_time(value: datetime.datetime) -> str:
    return value.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(value: str) -> datetime.datetime:
    """A timestamp as the apiserver writes it, in UTC to the second; ValueError if it is not one."""
    try:
        parsed = datetime.datetime.fromisoformat(value)
    except ValueError:
        raise ValueError(f"expected an RFC 3339 timestamp, got {value!r}") from None
    if parsed.tzinfo is None:
        raise ValueError(f"timestamp {value!r} has no time zone")
    return parsed.astimezone(datetime.UTC).replace(microsecond=0)


def _parse_time(value: Any, _: Any) -> datetime.datetime:
    if not isinstance(value, str):
        raise _MismatchError(f"expected an RFC 3339 timestamp, got {json_name(value)}")
    try:
        return parse_time(value)
    except ValueError as e:
        raise _MismatchError(str(e)) from None


def _strict(expected: type, label: str) -> Callable[[Any, Any], Any]:
    def hook(value: Any, _: Any) -> Any:
        # bool is an int in Python but never in JSON.
        if isinstance(value, bool) != (expected is bool) or not isinstance(value, expected):
            if expected is float and isinstance(value, int) and not isinstance(value, bool):
                return float(value)
            raise _MismatchError(f"expected {label}, got {json_name(value)}")
        return value

    return hook


def _structure_enum(value: Any, cls: type[enum.Enum]) -> Any:
    try:
        return cls(value)
    except ValueError:
        allowed = ", ".join(str(e.value) for e in cls)
        raise _MismatchError(f"{value!r} is not one of: {allowed}") from None


def _guard(check: type, label: str, inner: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    def hook(value: Any, tp: Any) -> Any:
        if not isinstance(value, check):
            raise _MismatchError(f"expected {label}, got {json_name(value)}")
        return inner(value, tp)

    return hook


def _is_tuple(tp: Any) -> bool:
    return typing.get_origin(tp) is tuple


def _is_mapping(tp: Any) -> bool:
    return typing.get_origin(tp) in (Mapping, dict)


def _make_converter() -> cattrs.Converter:
    c = cattrs.Converter(forbid_extra_keys=True)
    for tp, label in ((bool, "boolean"), (int, "integer"), (float, "number"), (str, "string")):
        c.register_structure_hook(tp, _strict(tp, label))
    # A StrEnum is also a str; registering its own class makes it the more specific match.
    c.register_structure_hook(enum.StrEnum, _structure_enum)
    c.register_structure_hook(enum.Enum, _structure_enum)
    # Plain strings on the wire, so that YAML writes them as JSON does.
    c.register_unstructure_hook(enum.StrEnum, lambda e: e.value)
    c.register_unstructure_hook(enum.Enum, lambda e: e.value)
    c.register_structure_hook(datetime.datetime, _parse_time)
    c.register_unstructure_hook(datetime.datetime, format_time)

    def tuple_factory(tp: Any) -> Callable[[Any, Any], Any]:
        item = typing.get_args(tp)[0]
        item_hook = c.get_structure_hook(item)

        def hook(value: Any, _: Any) -> Any:
            if not isinstance(value, list | tuple):
                raise _MismatchError(f"expected array, got {json_name(value)}")
            out: list[Any] = []
            errors: list[tuple[int | str, Exception]] = []
            for i, v in enumerate(value):
                try:
                    out.append(item_hook(v, item))
                except Exception as e:
                    errors.append((i, e))
            if errors:
                raise _ItemsError(errors)
            return tuple(out)

        return hook

    def mapping_factory(tp: Any) -> Callable[[Any, Any], Any]:
        key_t, value_t = typing.get_args(tp)
        key_hook = c.get_structure_hook(key_t)
        value_hook = c.get_structure_hook(value_t) if value_t is not Any else None

        def hook(value: Any, _: Any) -> Any:
            if not isinstance(value, dict):
                raise _MismatchError(f"expected object, got {json_name(value)}")
            out: dict[Any, Any] = {}
            errors: list[tuple[int | str, Exception]] = []
            for k, v in value.items():
                try:
                    out[key_hook(k, key_t)] = v if value_hook is None else value_hook(v, value_t)
                except Exception as e:
                    errors.append((str(k), e))
            if errors:
                raise _ItemsError(errors)
            return out

        return hook

    c.register_structure_hook_factory(_is_tuple, tuple_factory)
    c.register_structure_hook_factory(_is_mapping, mapping_factory)

    def attrs_structure(cls: type) -> Callable[[Any, Any], Any]:
        renames = {a.name: override(rename=schema.wire_name(a)) for a in attrs.fields(cls)}
        inner: Callable[[Any, Any], Any] = typing.cast(Any, make_dict_structure_fn)(
            cls, c, _cattrs_forbid_extra_keys=True, **renames
        )
        return _guard(dict, "object", inner)

    def attrs_unstructure(cls: type) -> Callable[[Any], Any]:
        overrides = {
            a.name: override(
                rename=schema.wire_name(a),
                omit_if_default=a.name not in _ALWAYS_EMITTED,
                unstruct_hook=_as_is if schema.is_json_object(a.type) else None,
            )
            for a in attrs.fields(cls)
        }
        inner: Callable[[Any], Any] = typing.cast(Any, make_dict_unstructure_fn)(
            cls, c, _cattrs_omit_if_default=True, **overrides
        )
        order = [schema.wire_name(a) for a in attrs.fields(cls)]

        def hook(value: Any) -> dict[str, Any]:
            # cattrs emits always-present keys first; keep declaration order for readers.
            out = inner(value)
            return {k: out[k] for k in order if k in out}

        return hook

    c.register_structure_hook_factory(attrs.has, attrs_structure)
    c.register_unstructure_hook_factory(attrs.has, attrs_unstructure)
    c.register_unstructure_hook_factory(_is_tuple, lambda _: lambda v: [c.unstructure(i) for i in v])
    return c


def _as_is(value: Any) -> Any:
    return value


class _ItemsError(Exception):
    """Errors of several entries of one list or map, keyed by index or key."""

    def __init__(self, errors: Sequence[tuple[int | str, Exception]]) -> None:
        super().__init__(f"{len(errors)} invalid entries")
        self.errors = errors


_converter = _make_converter()


def structure(data: Any, cls: type[T]) -> T:
    """Decode wire data into ``cls``; every problem becomes one ValidationError."""
    try:
        return _converter.structure(data, cls)
    except Exception as e:  # every failure of untrusted input is reported, none escapes
        raise validation.ValidationError(_walk(e, ())) from None


def unstructure(value: Any) -> Any:
    return _converter.unstructure(value)


def _walk(exc: BaseException, path: validation.Path) -> Iterator[validation.FieldError]:
    if isinstance(exc, validation.ValidationError):
        yield from exc.under(path).errors
    elif isinstance(exc, ForbiddenExtraKeysError):
        for extra in sorted(exc.extra_fields):
            yield validation.FieldError(path=(*path, extra), message="unknown field")
    elif isinstance(exc, _ItemsError):
        for key, sub in exc.errors:
            yield from _walk(sub, (*path, key))
    elif isinstance(exc, ClassValidationError):
        for sub in exc.exceptions:
            yield from _walk(sub, path + _attribute_path(exc.cl, sub))
    elif isinstance(exc, IterableValidationError):
        for sub in exc.exceptions:
            yield from _walk(sub, path)
    elif isinstance(exc, KeyError):
        yield validation.FieldError(path=path, message="required field is missing")
    else:
        yield validation.FieldError(path=path, message=str(exc))


def _attribute_path(cls: type, exc: BaseException) -> validation.Path:
    for note in getattr(exc, "__notes__", ()):
        name = getattr(note, "name", None)
        if isinstance(name, str):
            return (schema.wire_name(getattr(attrs.fields(cls), name)),)
    return ()
