"""``kubetrain-operator`` as a process of its own, started and waited for until it is ready."""

from __future__ import annotations

import pathlib
import urllib.request

from kubetrain.devcluster import process


def ready(port: int) -> bool:
    """Whether a process's /readyz on ``port`` answers 200 (its caches are synced)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as r:
            return bool(r.status == 200)
    except OSError:
        return False


def start(
    argv: list[str], log: pathlib.Path, probe_port: int, *, timeout: float = 60, interval: float = 0.1
) -> process.Process:
    """Run ``argv`` (logging to ``log``) and wait until its /readyz on ``probe_port`` answers.

    ``process.StartError`` with the tail of its log if it exits or is not ready in ``timeout``.
    """
    op = process.Process("kubetrain-operator", argv, log)
    op.start()
    process.wait_until(
        "kubetrain-operator to be ready",
        lambda: ready(probe_port),
        timeout=timeout,
        watch=[op],
        interval=interval,
    )
    return op
