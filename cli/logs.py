"""``kubetrain logs JOB [-f] [--replica Worker/1] [--attempt N]``: every replica's output, merged.

Every line is prefixed by the replica that wrote it, its name padded to the job's longest
so the text starts in one column::

    master-0 | step 1 loss 2.30
    worker-1 | step 1 loss 2.31
    worker-1 | --- container restarted (restart 1) ---

kubetrain's own lines (a new attempt, a container restarted in place) are the client's
notices: they start with ``---`` and are dim on a terminal. On a terminal each replica has
its own colour; piped or with ``NO_COLOR`` the output is plain text. ``-f`` follows every
replica — across restarts and new attempts — and ends by itself once the job has finished
and every stream is drained; Ctrl-C ends it sooner.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable
from typing import TextIO

from kubetrain import client
from kubetrain.api import v1beta1
from kubetrain.cli import cluster, output

__all__ = ["Printer", "arguments", "print_lines", "replicas"]


def arguments(_verb: str, p: argparse.ArgumentParser) -> None:
    cluster.add_flags(p)
    p.add_argument("job", help="the TrainingJob's name")
    p.add_argument(
        "-f", "--follow", action="store_true", help="keep printing until the job has finished (Ctrl-C stops)"
    )
    p.add_argument("--replica", help="one replica type (Worker) or one replica (Worker/1); default: all")
    p.add_argument("--attempt", type=int, help="the restart attempt (default: the current one)")
    p.set_defaults(run=_logs)


def _logs(args: argparse.Namespace) -> int:
    with cluster.connect(args) as c:
        job = c.get(args.job, namespace=args.namespace)
        lines = c.logs(
            args.job, replica=args.replica, follow=args.follow, attempt=args.attempt, namespace=args.namespace
        )
        print_lines(lines, Printer(job, output.palette(sys.stdout)), sys.stdout)
    return 0


def print_lines(lines: Iterable[client.LogLine], printer: Printer, out: TextIO) -> None:
    """Each line as soon as it comes: a person watching ``-f`` should not wait for a buffer."""
    for line in lines:
        out.write(printer.format(line) + "\n")
        out.flush()


def replicas(job: v1beta1.TrainingJob) -> list[str]:
    """The job's replica names as log lines carry them (``worker-1``), in the spec's order."""
    return [f"{t.lower()}-{i}" for t, spec in job.spec.replica_specs.items() for i in range(spec.replicas)]


class Printer:
    """Formats log lines of one job: aligned prefixes, a colour per replica, dim notices."""

    def __init__(self, job: v1beta1.TrainingJob, palette: output.Palette) -> None:
        names = replicas(job)
        self._colour = {n: i for i, n in enumerate(names)}
        self._width = max((len(n) for n in names), default=0)
        self._palette = palette

    def format(self, line: client.LogLine) -> str:
        self._width = max(self._width, len(line.replica))
        n = self._colour.setdefault(line.replica, len(self._colour))
        prefix = self._palette.nth(n, line.replica.ljust(self._width)) + " | "
        if line.notice:
            text = line.text if line.text.startswith("---") else f"--- {line.text} ---"
            return prefix + self._palette.dim(text)
        return prefix + line.text
