"""Validation errors that say where the problem is.

Every rule in the API — a type check while decoding, a bound declared on a field, a
cross-field rule on a class — reports a :class:`FieldError`: a wire path such as
``spec.replicaSpecs.Worker.replicas`` and a message. Errors raised deep inside a nested
value carry a path relative to that value; whoever catches them while walking outward
prefixes the path (see :func:`ValidationError.under`). Users therefore see the same
spelling that they wrote in their YAML, never a Python attribute name.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import attrs

__all__ = ["FieldError", "Path", "ValidationError", "constant", "cross_field", "format_path"]

Path = tuple[str | int, ...]


def format_path(path: Path) -> str:
    """Render ``("spec", "rules", 0, "name")`` as ``spec.rules[0].name``."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else part
    return out or "<root>"


@attrs.frozen(kw_only=True)
class FieldError:
    path: Path
    message: str

    def __str__(self) -> str:
        return f"{format_path(self.path)}: {self.message}"


class ValidationError(ValueError):
    """One or more field errors; ``str()`` lists them one per line."""

    def __init__(self, errors: Iterable[FieldError]) -> None:
        self.errors: tuple[FieldError, ...] = tuple(errors)
        super().__init__("\n".join(str(e) for e in self.errors))

    @classmethod
    def at(cls, path: Path | str, message: str) -> ValidationError:
        return cls([FieldError(path=(path,) if isinstance(path, str) else path, message=message)])

    def under(self, prefix: Path) -> ValidationError:
        """The same errors, seen from a value that holds this one at ``prefix``."""
        return ValidationError(attrs.evolve(e, path=prefix + e.path) for e in self.errors)


def constant(expected: str) -> Callable[[Any, Any, str], None]:
    """An attrs validator for a field that may hold one value only (apiVersion, kind)."""

    def check(_instance: Any, attribute: Any, value: str) -> None:
        if value != expected:
            wire = "apiVersion" if attribute.name == "api_version" else attribute.name
            raise ValidationError.at(wire, f"expected {expected}, got {value!r}")

    return check


C = TypeVar("C")


def cross_field(check: Callable[[C], None]) -> Callable[[C], None]:
    """Mark an ``__attrs_post_init__`` as a rule across fields.

    Like attrs' own validators it is skipped within ``attrs.validators.disabled()``: the
    conversion webhook decodes a stored object by its types alone, so that one written
    before a rule existed still converts (see :mod:`kubetrain.api.exact`).
    """

    @functools.wraps(check)
    def run(self: C) -> None:
        if not attrs.validators.get_disabled():
            check(self)

    return run
