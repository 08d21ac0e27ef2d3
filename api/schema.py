"""One declaration per rule: field constraints that both Python and the apiserver enforce.

A field of an API type is annotated with a :class:`Field` marker::

    replicas: Annotated[int, schema.Field(minimum=0, doc="Pods of this type.")] = 1

Classes built with ``field_transformer=schema.validated`` get an attrs validator for
each marker, so a value that breaks a bound can never be constructed. :func:`openapi`
turns the very same markers into the structural OpenAPI v3 schema of the CRD, so the
apiserver refuses the same bad input before it reaches the operator. Rules that relate
several fields are written twice on purpose — as Python in the class and as CEL in its
``cel_rules`` — because the apiserver only speaks CEL; both are tested.
"""

from __future__ import annotations

import datetime
import enum
import functools
import re
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from kubetrain.api import validation

__all__ = ["CUT", "Field", "JSONObject", "Rule", "cut", "is_json_object", "openapi", "validated", "wire_name"]

JSONObject = Mapping[str, Any]
"""A free-form JSON object kept as it is (for example a pod template)."""


def is_json_object(tp: Any) -> bool:
    """Whether a field's type is a free-form :data:`JSONObject` (optional or annotated)."""
    return bool(_unwrap(tp) == JSONObject)


# Compared by identity: markers live inside type annotations, which must stay hashable.
@attrs.frozen(kw_only=True, eq=False)
class Field:
    doc: str = ""
    wire: str | None = None
    minimum: int | None = None
    maximum: int | None = None
    min_length: int | None = None
    max_length: int | None = None
    pattern: str | None = None
    min_items: int | None = None
    max_items: int | None = None
    min_properties: int | None = None
    max_properties: int | None = None
    keys: Field | None = None
    items: Field | None = None
    list_map_keys: tuple[str, ...] = ()
    extra_schema: Mapping[str, Any] | None = None
    # Text from outside the API (the apiserver's words, a container's termination message): cut
    # to max_length, its end marked, where anything else longer is refused.
    truncate: bool = False


# What ends a text that was cut to its field's max_length.
CUT = "… [cut]"


@attrs.frozen(kw_only=True)
class Rule:
    """A CEL rule for the CRD, placed on the class it is declared on."""

    cel: str
    message: str
    field_path: str | None = None
    reason: str | None = None


def wire_name(attribute: attrs.Attribute[Any]) -> str:
    marker = _marker(attribute.type)
    if marker is not None and marker.wire:
        return marker.wire
    head, *rest = attribute.name.rstrip("_").split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


# --- validators ---------------------------------------------------------------------------


def validated(cls: type, fields: list[attrs.Attribute[Any]]) -> list[attrs.Attribute[Any]]:
    """attrs field transformer: add a validator for every :class:`Field` marker."""
    out = []
    for f in fields:
        marker = _marker(f.type)
        if marker is not None and _has_checks(marker):
            check = _checker(wire_name(f), marker)
            validator = check if f.validator is None else attrs.validators.and_(f.validator, check)
            f = f.evolve(validator=validator)
        if marker is not None and marker.truncate and marker.max_length is not None:
            assert f.converter is None, f"{cls.__name__}.{f.name}: a cut text has no other converter"
            f = f.evolve(converter=functools.partial(cut, limit=marker.max_length))
        out.append(f)
    return out


def cut(text: str, limit: int) -> str:
    """``text``, or its first characters and :data:`CUT` in ``limit`` characters."""
    return text if len(text) <= limit else text[: limit - len(CUT)] + CUT


def _has_checks(m: Field) -> bool:
    bounds = (
        m.minimum,
        m.maximum,
        m.min_length,
        m.max_length,
        m.pattern,
        m.min_items,
        m.max_items,
        m.min_properties,
        m.max_properties,
        m.keys,
        m.items,
    )
    return any(b is not None for b in bounds) or bool(m.list_map_keys)


def _checker(name: str, marker: Field) -> Callable[[Any, Any, Any], None]:
    def check(_instance: Any, _attribute: Any, value: Any) -> None:
        errors = list(violations(marker, value, (name,)))
        if errors:
            raise validation.ValidationError(errors)

    return check


def violations(m: Field, value: Any, path: validation.Path) -> typing.Iterator[validation.FieldError]:
    """Every way ``value`` breaks the constraints of ``m``; ``None`` breaks none."""
    if value is None:
        return

    def err(message: str) -> validation.FieldError:
        return validation.FieldError(path=path, message=message)

    if isinstance(value, int) and not isinstance(value, bool):
        if m.minimum is not None and value < m.minimum:
            yield err(f"must be at least {m.minimum}, got {value}")
        if m.maximum is not None and value > m.maximum:
            yield err(f"must be at most {m.maximum}, got {value}")
    if isinstance(value, str):
        if m.min_length is not None and len(value) < m.min_length:
            yield err(f"must be at least {m.min_length} characters long")
        if m.max_length is not None and len(value) > m.max_length:
            yield err(f"must be at most {m.max_length} characters long, got {len(value)}")
        if m.pattern is not None and not re.search(m.pattern, value):
            yield err(f"{value!r} does not match {m.pattern}")
    if isinstance(value, tuple):
        if m.min_items is not None and len(value) < m.min_items:
            yield err(f"must have at least {m.min_items} item(s)")
        if m.max_items is not None and len(value) > m.max_items:
            yield err(f"must have at most {m.max_items} items, got {len(value)}")
        if m.items is not None:
            for i, item in enumerate(value):
                yield from violations(m.items, item, (*path, i))
        yield from _duplicate_keys(m.list_map_keys, value, path)
    if isinstance(value, Mapping):
        if m.min_properties is not None and len(value) < m.min_properties:
            yield err(f"must have at least {m.min_properties} entr{'y' if m.min_properties == 1 else 'ies'}")
        if m.max_properties is not None and len(value) > m.max_properties:
            yield err(f"must have at most {m.max_properties} entries, got {len(value)}")
        for key, item in value.items():
            if m.keys is not None:
                yield from violations(m.keys, key, (*path, key))
            if m.items is not None:
                yield from violations(m.items, item, (*path, key))


def _duplicate_keys(
    keys: Sequence[str], items: tuple[Any, ...], path: validation.Path
) -> typing.Iterator[validation.FieldError]:
    if not keys:
        return
    seen: dict[tuple[Any, ...], int] = {}
    for i, item in enumerate(items):
        by_wire = {wire_name(a): a.name for a in attrs.fields(type(item))}
        key = tuple(getattr(item, by_wire[k]) for k in keys)
        if key in seen:
            shown = ", ".join(str(k) for k in key)
            yield validation.FieldError(
                path=(*path, i), message=f"duplicate entry {shown} (also at [{seen[key]}])"
            )
        seen.setdefault(key, i)


# --- OpenAPI ------------------------------------------------------------------------------


def openapi(tp: Any) -> dict[str, Any]:
    """The structural OpenAPI v3 schema of an API type, for a CRD version."""
    marker = _marker(tp)
    tp = _unwrap(tp)
    origin = typing.get_origin(tp)
    out: dict[str, Any]
    if tp is Any:
        out = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    elif attrs.has(tp):
        out = _object(tp)
    elif isinstance(tp, type) and issubclass(tp, enum.Enum):
        out = {"type": "string", "enum": [e.value for e in tp]}
    elif tp is bool:
        out = {"type": "boolean"}
    elif tp is int:
        out = {"type": "integer", "format": "int32"}
    elif tp is float:
        out = {"type": "number"}
    elif tp is str:
        out = {"type": "string"}
    elif tp is datetime.datetime:
        out = {"type": "string", "format": "date-time"}
    elif origin is tuple:
        out = {"type": "array", "items": openapi(typing.get_args(tp)[0])}
    elif origin in (Mapping, dict, typing.Mapping):
        value_type = typing.get_args(tp)[1]
        if value_type is Any:
            out = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
        else:
            out = {"type": "object", "additionalProperties": openapi(value_type)}
    else:
        raise TypeError(f"no OpenAPI schema for {tp!r}")
    if marker is not None:
        _apply(marker, out)
    return out


def _object(cls: type) -> dict[str, Any]:
    props: dict[str, Any] = {}
    required = []
    hints = typing.get_type_hints(cls, include_extras=True)
    for a in attrs.fields(cls):
        name = wire_name(a)
        props[name] = openapi(hints[a.name])
        if a.default is attrs.NOTHING:
            required.append(name)
    out: dict[str, Any] = {"type": "object", "properties": props}
    doc = _first_paragraph(cls.__doc__)
    if doc:
        out = {"description": doc, **out}
    if required:
        out["required"] = required
    rules = getattr(cls, "cel_rules", ())
    if rules:
        out["x-kubernetes-validations"] = [_rule(r) for r in rules]
    return out


def _apply(m: Field, out: dict[str, Any]) -> None:
    if m.doc:
        out["description"] = m.doc
    simple = {
        "minimum": m.minimum,
        "maximum": m.maximum,
        "minLength": m.min_length,
        "maxLength": m.max_length,
        "pattern": m.pattern,
        "minItems": m.min_items,
        "maxItems": m.max_items,
        "minProperties": m.min_properties,
        "maxProperties": m.max_properties,
    }
    out.update({k: v for k, v in simple.items() if v is not None})
    if m.items is not None:
        target = out.get("items") or out.get("additionalProperties")
        if target is not None:
            _apply(attrs.evolve(m.items, doc=""), target)
    if m.keys is not None and m.keys.pattern is not None:
        out.setdefault("x-kubernetes-validations", []).append(
            {
                "rule": f"self.all(k, k.matches('{m.keys.pattern}'))",
                "message": f"keys must match {m.keys.pattern}",
            }
        )
    if m.list_map_keys:
        out["x-kubernetes-list-type"] = "map"
        out["x-kubernetes-list-map-keys"] = list(m.list_map_keys)
    if m.extra_schema:
        out.update(m.extra_schema)


def _rule(r: Rule) -> dict[str, Any]:
    out: dict[str, Any] = {"rule": r.cel, "message": r.message}
    if r.field_path:
        out["fieldPath"] = r.field_path
    if r.reason:
        out["reason"] = r.reason
    return out


def _first_paragraph(doc: str | None) -> str:
    if not doc:
        return ""
    return " ".join(doc.strip().split("\n\n")[0].split())


def _marker(tp: Any) -> Field | None:
    if typing.get_origin(tp) is typing.Annotated:
        for extra in tp.__metadata__:
            if isinstance(extra, Field):
                return extra
    if _is_optional(tp):
        return _marker(_non_none(tp))
    return None


def _unwrap(tp: Any) -> Any:
    while True:
        if typing.get_origin(tp) is typing.Annotated:
            tp = typing.get_args(tp)[0]
        elif _is_optional(tp):
            tp = _non_none(tp)
        else:
            return tp


def _is_optional(tp: Any) -> bool:
    origin = typing.get_origin(tp)
    return origin in (typing.Union, types.UnionType) and type(None) in typing.get_args(tp)


def _non_none(tp: Any) -> Any:
    args = [a for a in typing.get_args(tp) if a is not type(None)]
    if len(args) != 1:
        raise TypeError(f"only X | None unions are supported, got {tp!r}")
    return args[0]
