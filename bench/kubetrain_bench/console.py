"""Progress lines: on stderr, so that a benchmark's stdout holds only its report (or its JSON)."""

from __future__ import annotations

import sys


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)
