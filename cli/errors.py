"""What the command reports as a failure of its own, apart from the client's errors.

:class:`CommandError` is a message for a person (one or more lines, each printed after
``error:``), the exit status that goes with it, and at most one ``next:`` line saying what
to do about it. :class:`UsageError` is a command line the parser refused. ``main`` is the
one place that prints them.
"""

from __future__ import annotations

__all__ = ["CommandError", "UsageError"]


class CommandError(Exception):
    def __init__(self, message: str, *, code: int = 1, hint: str | None = None) -> None:
        super().__init__(message)
        self.code, self.hint = code, hint


class UsageError(Exception):
    """A command line that does not parse; ``prog`` is the (sub)command, for its ``--help``."""

    def __init__(self, message: str, prog: str) -> None:
        super().__init__(message)
        self.prog = prog
