"""Whether a CRD may follow the last released one without breaking a rolling upgrade.

While a new operator rolls out, the old one still runs beside it, jobs written by either are
read by both, and a rollback must find the old operator able to read what the new one wrote.
So between released CRDs (``config/crd/released/``, refreshed at a release by ``kubetrain
manifests --release``) the rule of docs/deploy.md ("Upgrading") holds:

- a served version is never removed or unserved unless the released CRD marked it deprecated;
- the storage version never changes in one step: the new storage version was already served
  by the released CRD (so the old operator's CRD can still read what the new one stores);
- no field is removed or renamed, and no field's type (or format, or list/map type) changes;
  no subresource (status, scale) is removed or changed;
- no default is added, changed or removed (a schema default applies to every stored object
  whenever it is read; kubetrain gives its defaults once, at creation, in ``config/defaults``);
- no existing field becomes required;
- validation never tightens: no enum value removed (nor an enum put on a free field), no
  minimum/minLength/minItems/minProperties raised, no maximum/maxLength/maxItems/maxProperties
  lowered (nor one added), no pattern added or changed, no CEL rule added on an existing
  field, unknown fields no longer kept, no value made non-nullable.

Adding optional fields (with whatever validation they carry), new versions, and loosening
validation are all fine. :func:`changes` compares two whole CRDs (versions, storage, scope and
names, then each version both serve); :func:`schema_changes` compares two ``openAPIV3Schema``
trees. Both are pure and return every :class:`Finding`, as values, in the order of the tree.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

__all__ = ["Finding", "changes", "schema_changes"]

Schema = Mapping[str, Any]

# A bound that may only go down (the first) or up (the second): raising a lower bound, lowering an
# upper one, or adding either where there was none, refuses values the released CRD took.
_LOWER_BOUNDS = ("minimum", "minLength", "minItems", "minProperties")
_UPPER_BOUNDS = ("maximum", "maxLength", "maxItems", "maxProperties")
# Flags that tighten when they turn on (the first) or off (the second).
_TIGHTEN_WHEN_SET = ("exclusiveMinimum", "exclusiveMaximum", "uniqueItems")
_TIGHTEN_WHEN_UNSET = ("nullable", "x-kubernetes-preserve-unknown-fields")
# What a field is: any change of these is a change of type.
_SHAPE = (
    "type",
    "x-kubernetes-int-or-string",
    "x-kubernetes-list-type",
    "x-kubernetes-list-map-keys",
    "x-kubernetes-map-type",
    "x-kubernetes-embedded-resource",
)
# Validation that cannot be ordered: added or changed tightens (or may), removed loosens.
_OPAQUE = ("pattern", "format", "multipleOf", "anyOf", "oneOf", "allOf", "not")


@attrs.frozen(kw_only=True)
class Finding:
    """One change that breaks the rule: where (``path``) and what (``change``)."""

    path: str
    change: str

    def __str__(self) -> str:
        return f"{self.path}: {self.change}"


def changes(released: Mapping[str, Any], generated: Mapping[str, Any]) -> tuple[Finding, ...]:
    """What in ``generated`` breaks the rule against ``released`` (two whole CRDs of one name)."""
    name = str(released.get("metadata", {}).get("name", "?"))
    old, new = released.get("spec", {}), generated.get("spec", {})
    found: list[Finding] = []
    for key in ("group", "scope"):
        if old.get(key) != new.get(key):
            found.append(Finding(path=name, change=f"{key} changed from {old.get(key)} to {new.get(key)}"))
    for key in ("kind", "plural", "singular", "listKind"):
        was, now = old.get("names", {}).get(key), new.get("names", {}).get(key)
        if was != now:
            found.append(Finding(path=name, change=f"names.{key} changed from {was} to {now}"))
    old_versions = {v["name"]: v for v in old.get("versions", ())}
    new_versions = {v["name"]: v for v in new.get("versions", ())}
    for version, was in old_versions.items():
        if not was.get("served", False):
            continue
        now = new_versions.get(version)
        if was.get("deprecated", False):
            pass
        elif now is None:
            found.append(
                Finding(
                    path=f"{name} {version}", change="served version removed without a deprecation release"
                )
            )
        elif not now.get("served", False):
            found.append(
                Finding(
                    path=f"{name} {version}", change="version no longer served without a deprecation release"
                )
            )
    old_storage = _storage(old_versions)
    new_storage = _storage(new_versions)
    if old_storage != new_storage and not old_versions.get(new_storage or "", {}).get("served", False):
        found.append(
            Finding(
                path=name,
                change=f"storage version changed from {old_storage} to {new_storage} in one step: "
                f"serve {new_storage} in a release first",
            )
        )
    for version, was in old_versions.items():
        now = new_versions.get(version)
        if now is None:
            continue
        for sub in was.get("subresources") or {}:
            if sub not in (now.get("subresources") or {}):
                found.append(Finding(path=f"{name} {version}", change=f"subresource {sub} removed"))
            elif was["subresources"][sub] != now["subresources"][sub]:
                found.append(Finding(path=f"{name} {version}", change=f"subresource {sub} changed"))
        found.extend(
            schema_changes(
                was.get("schema", {}).get("openAPIV3Schema", {}),
                now.get("schema", {}).get("openAPIV3Schema", {}),
                path=f"{name} {version} ",
            )
        )
    return tuple(found)


def _storage(versions: Mapping[str, Mapping[str, Any]]) -> str | None:
    return next((name for name, v in versions.items() if v.get("storage", False)), None)


def schema_changes(released: Schema, generated: Schema, *, path: str = "") -> tuple[Finding, ...]:
    """What in the ``generated`` schema tree breaks the rule against the ``released`` one.

    ``path`` prefixes every finding's path; fields are joined with ``.``, a list's items are
    ``[]`` and a map's values ``{}``. Fields only ``generated`` has are not looked into: whatever
    validation a new optional field carries, no stored object has it yet.
    """
    return tuple(_walk(released, generated, path))


def _walk(old: Schema, new: Schema, path: str) -> list[Finding]:
    where = path.rstrip(". ") or "(root)"
    found: list[Finding] = []

    def add(change: str) -> None:
        found.append(Finding(path=where, change=change))

    for key in _SHAPE:
        if old.get(key) != new.get(key):
            add(f"{_name(key)} changed from {_show(old.get(key))} to {_show(new.get(key))}")
    if "default" in old or "default" in new:
        if "default" not in new:
            add(f"default {_show(old['default'])} removed")
        elif "default" not in old:
            add(f"default {_show(new['default'])} added")
        elif old["default"] != new["default"]:
            add(f"default changed from {_show(old['default'])} to {_show(new['default'])}")
    if "enum" in new:
        if "enum" not in old:
            add(f"enum {_show(new['enum'])} put on a field that took any value")
        else:
            gone = [v for v in old["enum"] if v not in new["enum"]]
            if gone:
                add(f"enum value(s) {_show(gone)} removed")
    for key in _LOWER_BOUNDS:
        if key in new and (key not in old or new[key] > old[key]):
            add(f"{key} raised from {_show(old.get(key))} to {new[key]}")
    for key in _UPPER_BOUNDS:
        if key in new and (key not in old or new[key] < old[key]):
            add(f"{key} lowered from {_show(old.get(key))} to {new[key]}")
    for key in _TIGHTEN_WHEN_SET:
        if new.get(key, False) and not old.get(key, False):
            add(f"{key} set")
    for key in _TIGHTEN_WHEN_UNSET:
        if old.get(key, False) and not new.get(key, False):
            add(f"{key} unset")
    for key in _OPAQUE:
        if key in new and old.get(key) != new[key]:
            verb = "added" if key not in old else "changed"
            add(f"{key} {verb}: {_show(new[key])}")
    old_rules = {r.get("rule") for r in old.get("x-kubernetes-validations", ())}
    for rule in new.get("x-kubernetes-validations", ()):
        if rule.get("rule") not in old_rules:
            add(f"new CEL rule on an existing field: {rule.get('rule')}")
    old_required = set(old.get("required", ()))
    for field in new.get("required", ()):
        if field not in old_required:
            found.append(Finding(path=f"{path}{field}", change="became required"))
    new_properties = new.get("properties", {})
    for field, child in old.get("properties", {}).items():
        if field not in new_properties:
            found.append(Finding(path=f"{path}{field}", change="removed"))
        else:
            found.extend(_walk(child, new_properties[field], f"{path}{field}."))
    for key, mark in (("items", "[]"), ("additionalProperties", "{}")):
        was, now = old.get(key), new.get(key)
        if isinstance(was, Mapping) and isinstance(now, Mapping):
            found.extend(_walk(was, now, f"{path.rstrip('.')}{mark}."))
        elif was not in (None, False) and now in (None, False):
            add(f"{key} removed")
    return found


def _name(key: str) -> str:
    return "type" if key == "type" else key.removeprefix("x-kubernetes-")


def _show(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, str):
        return value
    return repr(value)
