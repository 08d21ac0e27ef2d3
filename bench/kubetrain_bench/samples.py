"""The repository's sample TrainingJobs (``samples/VERSION/NAME.yaml``), as the benchmarks start from them."""

from __future__ import annotations

from typing import Any

import yaml

from kubetrain_bench import ROOT

SAMPLES = ROOT / "samples"


def names(version: str) -> list[str]:
    """The samples of ``version``, in order."""
    return [path.stem for path in sorted((SAMPLES / version).glob("*.yaml"))]


def load(version: str, name: str) -> dict[str, Any]:
    """A fresh copy of one sample, e.g. ``load("v1beta1", "pytorch-ddp")``."""
    body: dict[str, Any] = yaml.safe_load((SAMPLES / version / f"{name}.yaml").read_text())
    return body
