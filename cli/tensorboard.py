"""``kubetrain tensorboard JOB [--port N]``: the job's TensorBoard in the browser of this machine.

A port-forward to the job's TensorBoard (``spec.tensorboard``) from 127.0.0.1, on ``--port``
or a free port; the URL is printed and the forward stays until Ctrl-C, which ends the
command normally (exit 0): stopping it is what Ctrl-C is for here.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import threading

from kubetrain.cli import cluster

__all__ = ["arguments"]


def arguments(_verb: str, p: argparse.ArgumentParser) -> None:
    cluster.add_flags(p)
    p.add_argument("job", help="the TrainingJob's name")
    p.add_argument("--port", type=int, default=0, help="local port (default: a free one)")
    p.set_defaults(run=_tensorboard)


def _tensorboard(args: argparse.Namespace) -> int:
    with (
        cluster.connect(args) as c,
        c.tensorboard(args.job, local_port=args.port, namespace=args.namespace) as url,
    ):
        print(f"TensorBoard of {args.job}: {url}", flush=True)
        print("Ctrl-C stops forwarding.", file=sys.stderr, flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            threading.Event().wait()
    return 0
