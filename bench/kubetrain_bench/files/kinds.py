"""What a maker of hostile files is given and gives back.

A :class:`Base` is one of the repository's samples — a TrainingJob of either version, or an
old operator's job in ``samples/legacy`` — as its text and its data. A maker returns a
:class:`Made`: the bytes, and what every door must make of them — :data:`OK` (what it makes of
the sample itself), :data:`ERROR` (exit 1 on the file, never a cluster error) or :data:`ANY`
(either, cleanly) — with a label, the line a reader's error must be at and the lines its
message must name (a duplicate key's both lines).
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable
from typing import Any

OK, ERROR, ANY = "ok", "error", "any"


@dataclasses.dataclass(frozen=True)
class Base:
    name: str  # "v1beta1/pytorch-ddp", "legacy/kubeflow-tfjob"
    text: str
    data: dict[str, Any]

    @property
    def trainingjob(self) -> bool:
        """A TrainingJob (render takes it), not an old kind (convert only)."""
        return not self.name.startswith("legacy/")


@dataclasses.dataclass(frozen=True)
class Made:
    data: bytes
    expect: str  # OK, ERROR or ANY
    label: str
    line: int | None = None  # a reader's error is at this line
    mentions: tuple[int, ...] = ()  # ... and its message names these lines


Maker = Callable[[random.Random, Base], Made]
