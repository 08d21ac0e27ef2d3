"""What a conversion could not carry over, or carried over differently.

A :class:`Note` names the field of the *input* document, so the CLI can point at its
line; ``str(note)`` is ``warning: spec.x: message``.
"""

from __future__ import annotations

import attrs

from kubetrain.api import validation

__all__ = ["Note"]


@attrs.frozen(kw_only=True)
class Note:
    path: validation.Path  # in the input document
    message: str

    def __str__(self) -> str:
        return f"warning: {validation.format_path(self.path)}: {self.message}"
