"""A cluster's working directory, and the ones a killed process left behind.

A cluster keeps everything in one directory under the system's temp dir — etcd's data, logs,
certificates and, with real nodes, each node's containerd root (gigabytes of unpacked images).
:meth:`Cluster.stop` removes it, but a process killed outright (``kill -9``, a CI job's timeout)
runs no ``finally``: its components die with it (``PR_SET_PDEATHSIG``) and the directory stays.
Dozens of those fill a disk.

So each directory names its owner — pid and start time, which together name one process — in
an ``owner.json`` file, and :func:`create` first removes every directory whose owner is gone.
A directory without a readable owner file is left alone: it may be another version's, or
being made right now.
"""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import tempfile

from kubetrain.devcluster import process

__all__ = ["PREFIX", "create", "sweep"]

PREFIX = "kubetrain-cp-"
OWNER = "owner.json"


def create(base: pathlib.Path | None = None) -> pathlib.Path:
    """A new, empty working directory owned by this process; stale ones are removed first."""
    sweep(base)
    wd = pathlib.Path(tempfile.mkdtemp(prefix=PREFIX, dir=base))
    me = os.getpid()
    (wd / OWNER).write_text(json.dumps({"pid": me, "started": process.started_at(me)}))
    return wd


def sweep(base: pathlib.Path | None = None) -> list[pathlib.Path]:
    """Remove the working directories under ``base`` (default: the temp dir) whose owner is gone."""
    removed = []
    for wd in pathlib.Path(base or tempfile.gettempdir()).glob(f"{PREFIX}*"):
        if _owner_gone(wd):
            shutil.rmtree(wd, ignore_errors=True)
            removed.append(wd)
    return removed


def _owner_gone(wd: pathlib.Path) -> bool:
    try:
        owner = json.loads((wd / OWNER).read_text())
        pid, started = int(owner["pid"]), owner["started"]
    except (OSError, ValueError, KeyError, TypeError):
        return False
    return not process.runs(pid, started)
