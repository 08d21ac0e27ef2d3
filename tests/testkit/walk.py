"""Walk every nested API value of an object."""

from collections.abc import Iterator
from typing import Any

import attrs


def values(obj: Any) -> Iterator[Any]:
    """``obj`` and every attrs value inside it, depth first."""
    if attrs.has(type(obj)):
        yield obj
        for a in attrs.fields(type(obj)):
            yield from values(getattr(obj, a.name))
    elif isinstance(obj, tuple):
        for item in obj:
            yield from values(item)
    elif isinstance(obj, dict):
        for item in obj.values():
            yield from values(item)
