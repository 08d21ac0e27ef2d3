"""Walk every nested API value of an object, or every path into a JSON document."""

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


def json_paths(data: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """``prefix`` and the path of every value below it in JSON ``data``, depth first."""
    out = [prefix]
    if isinstance(data, dict):
        for k, v in data.items():
            out += json_paths(v, (*prefix, k))
    elif isinstance(data, list):
        for i, v in enumerate(data):
            out += json_paths(v, (*prefix, i))
    return out


def at(doc: Any, path: tuple[Any, ...]) -> Any:
    """The value at ``path`` in JSON ``doc``."""
    for key in path:
        doc = doc[key]
    return doc
