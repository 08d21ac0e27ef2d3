"""A benchmark's entry point (``bench/NAME.py``) run in a process of its own, as ``make`` runs it.

For the tests that run a benchmark end to end, and for the runtime benchmark's own child
processes: ``bench/`` on the path through ``PYTHONPATH``, never the script's folder or the
repository root (``-P``).
"""

from __future__ import annotations

import os
import subprocess
import sys

from kubetrain_bench import BENCH


def environ() -> dict[str, str]:
    """This process's environment with ``bench/`` on the path."""
    return {**os.environ, "PYTHONPATH": str(BENCH), "PYTHONSAFEPATH": "1"}


def run(
    name: str, *args: str, timeout: float | None = None, check: bool = False
) -> subprocess.CompletedProcess[str]:
    """``python -P bench/{name}.py ARGS``; its output captured as text."""
    return subprocess.run(
        [sys.executable, "-P", str(BENCH / f"{name}.py"), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=check,
        env=environ(),
    )
