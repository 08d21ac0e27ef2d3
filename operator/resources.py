"""API resources by name: what the operator asks the apiserver for, as a plain value.

A :class:`Resource` is a group, a version, a plural and a kind, and builds the request paths
of its objects. The runtime's client requests through it and names the resources every
controller reads (:data:`kubetrain.operator.runtime.client.PODS`, ...); the gang-scheduling
backends name their group objects with it. It lives apart from the client so that those
pure parts — and ``kubetrain render``, which uses them — load no HTTP, tracing or metrics.
"""

from __future__ import annotations

import attrs

__all__ = ["Resource"]


@attrs.frozen
class Resource:
    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool = True

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def path(
        self, namespace: str | None = None, name: str | None = None, subresource: str | None = None
    ) -> str:
        parts = ["/apis" if self.group else "/api", self.api_version]
        if namespace and self.namespaced:
            parts += ["namespaces", namespace]
        parts.append(self.plural)
        if name:
            parts.append(name)
            if subresource:
                parts.append(subresource)
        return "/".join(parts)
