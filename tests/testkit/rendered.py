"""Reading what :func:`kubetrain.operator.render.render` made, as the framework tests compare it."""

from __future__ import annotations

from typing import Any

from kubetrain.operator import render


def framework_env(container: dict[str, Any]) -> dict[str, str]:
    """A container's env as name -> value, less the restart env every main container gets."""
    return {e["name"]: e["value"] for e in container.get("env", []) if e["name"] not in render.RESTART_ENV}
