"""The benchmark scripts under ``bench/``, which are scripts and not a package, loaded as modules."""

from __future__ import annotations

import importlib.util
import pathlib
import types

BENCH = pathlib.Path(__file__).resolve().parents[2] / "bench"


def path(name: str) -> pathlib.Path:
    return BENCH / f"{name}.py"


def load(name: str) -> types.ModuleType:
    """``bench/{name}.py`` as a module, to reach its functions (its ``main`` does not run)."""
    spec = importlib.util.spec_from_file_location(name, path(name))
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
