"""Frameworks by name: the built-ins, plus any that other packages register.

A third-party package adds a framework by declaring an entry point in the
``kubetrain.frameworks`` group whose value is a :class:`~.framework.Framework`::

    [project.entry-points."kubetrain.frameworks"]
    myframework = "mypackage.kubetrain_plugin:FRAMEWORK"

A name can be registered once; a second registration is refused, so a plugin can never
silently replace a built-in.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from importlib import metadata

from kubetrain.operator.frameworks import (
    caffe2,
    framework,
    generic,
    jax,
    mpi,
    mxnet,
    paddle,
    pytorch,
    tensorflow,
    xgboost,
)

__all__ = ["ENTRY_POINT_GROUP", "Registry", "UnknownFrameworkError", "default"]

ENTRY_POINT_GROUP = "kubetrain.frameworks"
BUILTINS = (
    tensorflow.FRAMEWORK,
    pytorch.FRAMEWORK,
    mxnet.FRAMEWORK,
    caffe2.FRAMEWORK,
    mpi.FRAMEWORK,
    mpi.CHAINER,
    jax.FRAMEWORK,
    xgboost.FRAMEWORK,
    paddle.FRAMEWORK,
    generic.FRAMEWORK,
)


class UnknownFrameworkError(LookupError):
    pass


class Registry:
    def __init__(self, frameworks: Iterable[framework.Framework] = ()) -> None:
        self._by_name: dict[str, framework.Framework] = {}
        for fw in frameworks:
            self.register(fw)

    def register(self, fw: framework.Framework) -> None:
        if fw.name in self._by_name:
            raise ValueError(f"framework {fw.name!r} is registered already")
        self._by_name[fw.name] = fw

    def get(self, name: str) -> framework.Framework:
        try:
            return self._by_name[name]
        except KeyError:
            raise UnknownFrameworkError(
                f"unknown framework {name!r}; registered: {', '.join(self.names())}"
            ) from None

    def names(self) -> list[str]:
        return sorted(self._by_name)

    def load_entry_points(self, group: str = ENTRY_POINT_GROUP) -> None:
        for ep in metadata.entry_points(group=group):
            fw = ep.load()
            if not isinstance(fw, framework.Framework):
                raise TypeError(f"entry point {ep.name} = {ep.value} is not a kubetrain Framework")
            self.register(fw)


@functools.cache
def default() -> Registry:
    """The built-in frameworks and every installed plugin."""
    registry = Registry(BUILTINS)
    registry.load_entry_points()
    return registry
