"""Placeholder: replaced by the module that converts this kind."""

from kubetrain.convert import kinds

__all__ = ["KINDS"]

KINDS: tuple[kinds.Kind, ...] = ()
