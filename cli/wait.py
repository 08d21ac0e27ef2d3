"""``kubetrain wait JOB --for Succeeded --timeout 10m``: block until the job gets there.

Exit status 0 when it did, 1 when it cannot any more (it failed, or it succeeded while
another condition was waited for), 2 when the time ran out — so a script can tell a broken
job from a slow one. Whatever the end, the job's state is printed first, as one line:
``trainingjob.training.kubetrain.dev/NAME Succeeded: Master 0 succeeded``. A failed job
also gets its reason, message and last failure record (replica, pod, node, exit code,
class, rule, action), and where to look next; a timed-out one what it is doing instead.

``--timeout`` takes seconds (``90``) or a duration (``90s``, ``10m``, ``1h30m``); without
it, ``wait`` waits as long as it takes. ``submit --wait`` and ``delete --wait`` report the
same way (:func:`outcome`, :func:`duration`).
"""

from __future__ import annotations

import argparse
import re
import sys
from typing import TextIO

from kubetrain import client
from kubetrain.api import v1beta1
from kubetrain.cli import cluster, describe, errors, output

__all__ = ["CONDITIONS", "arguments", "condition", "duration", "failure_line", "outcome", "state_line"]

CONDITIONS = tuple(c.value for c in v1beta1.ConditionType)
_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ms|h|m|s)")
_UNIT = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


def arguments(_verb: str, p: argparse.ArgumentParser) -> None:
    cluster.add_flags(p)
    p.add_argument("job", help="the TrainingJob's name")
    p.add_argument(
        "--for",
        dest="until",
        type=condition,
        default="Succeeded",
        metavar="CONDITION",
        help=f"one of {', '.join(CONDITIONS)} (default: Succeeded)",
    )
    p.add_argument("--timeout", type=duration, help="90, 90s, 10m, 1h (default: no limit)")
    p.set_defaults(run=_wait)


def duration(text: str) -> float:
    """Seconds in ``text``: a number of seconds, or Go-style units (``1h30m``, ``90s``, ``500ms``)."""
    value = text.strip()
    try:
        seconds = float(value)
    except ValueError:
        parts = _PART.findall(value)
        if not parts or "".join(n + u for n, u in parts) != value:
            raise argparse.ArgumentTypeError(
                f"invalid duration {text!r}: expected seconds or a duration such as 90s, 10m, 1h"
            ) from None
        seconds = sum(float(n) * _UNIT[u] for n, u in parts)
    if not seconds >= 0 or seconds == float("inf"):
        raise argparse.ArgumentTypeError(
            f"invalid duration {text!r}: must be a finite number of seconds >= 0"
        )
    return seconds


def condition(text: str) -> str:
    """A condition type in its own spelling, from any letter case (``condition=`` as kubectl's is fine)."""
    name = text.removeprefix("condition=")
    spelled = {c.lower(): c for c in CONDITIONS}.get(name.lower())
    if spelled is None:
        raise argparse.ArgumentTypeError(
            f"unknown condition {name!r}: expected one of {', '.join(CONDITIONS)}"
        )
    return spelled


def _wait(args: argparse.Namespace) -> int:
    with cluster.connect(args) as c:
        return outcome(
            c, args.job, args.until, args.timeout, args.namespace, sys.stdout, shown_namespace=args.namespace
        )


def outcome(
    c: client.Client,
    name: str,
    until: str,
    timeout: float | None,
    namespace: str | None,
    out: TextIO,
    *,
    shown_namespace: str | None = None,
) -> int:
    """Wait for ``until``; print the state line; 0 when met, else an error with exit status 1 or 2.

    ``shown_namespace`` is the ``-n`` repeated in a ``next:`` step (the user's, not the default).
    """
    try:
        job = c.wait(name, until, timeout=timeout, namespace=namespace)
    except client.JobFailed as e:
        print(state_line(e.job), file=out, flush=True)
        lines = [f"TrainingJob {name!r} failed: {e.reason}: {e.message}"]
        if e.failures:
            lines.append(f"last failure: {failure_line(e.failures[-1])}")
        raise errors.CommandError("\n".join(lines), hint=describe.hint(e.job, shown_namespace)) from None
    except client.JobFinished as e:
        print(state_line(e.job), file=out, flush=True)
        raise errors.CommandError(str(e)) from None
    except client.WaitTimeout as e:
        raise errors.CommandError(str(e), code=2, hint=describe.hint(e.job, shown_namespace)) from None
    print(state_line(job), file=out, flush=True)
    return 0


def state_line(job: v1beta1.TrainingJob) -> str:
    """``trainingjob.training.kubetrain.dev/NAME STATE: what the deciding condition says``."""
    state = job.status.state.value if job.status.state else v1beta1.JobState.PENDING.value
    why = describe.deciding(job)
    return f"{output.resource(job)} {state}" + (f": {why.message}" if why is not None and why.message else "")


def failure_line(f: v1beta1.FailureRecord) -> str:
    """One failure record as a sentence's worth: where, what, and what was decided."""
    where = f"{f.replica_type}/{f.index} (pod {f.pod}" + (f" on {f.node})" if f.node else ")")
    what = ", ".join(
        x
        for x in (
            f"exit code {f.exit_code}" if f.exit_code is not None else None,
            f.reason,
            f.failure_class.value,
            f"rule {f.rule}" if f.rule else "no rule matched",
        )
        if x
    )
    return f"{output.timestamp(f.time)} {where}: {what} -> {f.action.value}"
