"""Sets of replica indexes written compactly, as batch/v1 Job writes ``completedIndexes``.

``{0, 1, 2, 3, 7, 9, 10}`` is ``"0-3,7,9-10"``: a job of 10,000 replicas that all run records
``"0-9999"``, so a status may name every index it has seen without growing with the job.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["PATTERN", "format_indexes", "parse_indexes"]

# What format_indexes writes: ranges and single indexes, ascending, comma-separated.
PATTERN = r"^([0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*)?$"


def format_indexes(indexes: Iterable[int]) -> str:
    """``indexes`` as ascending ranges: ``"0-3,7"``; ``""`` for none."""
    out: list[str] = []
    start = prev = None
    for i in sorted(set(indexes)):
        if prev is not None and i == prev + 1:
            prev = i
            continue
        if start is not None:
            out.append(f"{start}-{prev}" if prev != start else f"{start}")
        start = prev = i
    if start is not None:
        out.append(f"{start}-{prev}" if prev != start else f"{start}")
    return ",".join(out)


def parse_indexes(text: str) -> frozenset[int]:
    """The indexes of ``"0-3,7"``; a malformed part is ignored (a status is read, not trusted)."""
    found: set[int] = set()
    for part in text.split(","):
        low, dash, high = part.strip().partition("-")
        if not low.isdigit() or (dash and not high.isdigit()):
            continue
        found.update(range(int(low), int(high or low) + 1))
    return frozenset(found)
