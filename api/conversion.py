"""Hub-and-spoke conversion between API versions, as in controller-runtime.

One version is the hub (:class:`Hub`); every other version is a spoke
(:class:`Spoke`) that converts to and from the hub. Spoke-to-spoke conversion goes
through the hub, so N versions need N-1 converters, not N². A :class:`Registry` holds
one hub and its spokes, refuses a second registration of any version, and
:meth:`Registry.check` proves every served version can be reached.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Generic, TypeVar

import attrs

__all__ = ["ConversionError", "Hub", "Registry", "Spoke", "api_version_of"]

H = TypeVar("H")
S = TypeVar("S")


class ConversionError(Exception):
    """A conversion that cannot be done; the message says why."""


def api_version_of(cls: type) -> str:
    """The apiVersion an API type declares as its default."""
    default = attrs.fields_dict(cls)["api_version"].default
    if not isinstance(default, str):
        raise TypeError(f"{cls.__name__} declares no default apiVersion")
    return default


@attrs.frozen
class Hub(Generic[H]):
    """Marks the hub type, the one every spoke converts through."""

    type: type[H]


@attrs.frozen(kw_only=True)
class Spoke(Generic[S, H]):
    """A non-hub type with its two conversion functions (Convertible)."""

    type: type[S]
    to_hub: Callable[[S], H]
    from_hub: Callable[[H], S]


class Registry:
    def __init__(self, hub: Hub[Any]) -> None:
        self._hub = hub
        self._types: dict[str, type] = {api_version_of(hub.type): hub.type}
        self._spokes: dict[str, Spoke[Any, Any]] = {}

    @property
    def hub_version(self) -> str:
        return api_version_of(self._hub.type)

    def register(self, spoke: Spoke[Any, Any]) -> None:
        version = api_version_of(spoke.type)
        if version in self._types:
            raise ValueError(f"a conversion for {version} is registered already")
        self._types[version] = spoke.type
        self._spokes[version] = spoke

    def check(self, served: Iterable[str]) -> None:
        """Fail unless every served version is the hub or has a registered spoke."""
        missing = sorted(set(served) - set(self._types))
        if missing:
            raise ValueError(f"no conversion registered for {', '.join(missing)}")

    def versions(self) -> tuple[str, ...]:
        return tuple(self._types)

    def type_for(self, api_version: str) -> type:
        try:
            return self._types[api_version]
        except KeyError:
            known = ", ".join(sorted(self._types))
            raise ConversionError(f"unknown apiVersion {api_version!r}; known: {known}") from None

    def convert(self, obj: Any, api_version: str) -> Any:
        """Convert ``obj`` to ``api_version``, through the hub when neither is the hub."""
        target = self.type_for(api_version)
        if type(obj) is target:
            return obj
        source = api_version_of(type(obj))
        self.type_for(source)
        hub = obj if source == self.hub_version else self._spokes[source].to_hub(obj)
        if api_version == self.hub_version:
            return hub
        return self._spokes[api_version].from_hub(hub)
