"""Tell kubetrain how far training got: one line, rewritten whole, in the file it names.

A TrainingJob with ``spec.progress`` gives every container of its pods the env variable
``KUBETRAIN_PROGRESS_FILE``, the path of a file in a volume of the pod. A process reports by
replacing that file's content with one line — the step, optionally the total number of steps,
then up to eight named numbers::

    step=120 total=1000 loss=0.53

kubetrain shows what the first rank reports in the job's status (the step, the metrics, the
rate and when the total will be reached) and, with ``progress.deadlineSeconds``, declares a
rank whose step has not moved for that long hung and restarts the job. Every rank should
report; a process that never does (a parameter server, an MPI launcher, sshd) is never hung.

This module is optional: it is only a careful way of writing that line, and it needs nothing
but the standard library. Any language will do — from a shell::

    [ -n "$KUBETRAIN_PROGRESS_FILE" ] &&
      echo "step=$i total=$n" > "$KUBETRAIN_PROGRESS_FILE.tmp" &&
      mv "$KUBETRAIN_PROGRESS_FILE.tmp" "$KUBETRAIN_PROGRESS_FILE"

From Python, beside the training script::

    import kubetrain_progress

    for step in range(steps):
        loss = train_one_step()
        kubetrain_progress.report(step + 1, total=steps, loss=loss)

With ``spec.checkpoint`` the operator asks for a checkpoint before a stop it sees coming (an
eviction, a suspend, a node about to go): the process looks with :func:`checkpoint_requested`
(one small file read; once a step is fine), saves, and says so with :func:`checkpointed`, which
puts ``checkpoint=STEP answered=N`` on the line at once. Periodic checkpoints are worth saying too
(``checkpointed(step)``): the next attempt is told the last one in ``KUBETRAIN_RESUME_STEP``::

    for step in range(start, steps):
        train_one_step()
        request = kubetrain_progress.checkpoint_requested()
        if request is not None or step % 1000 == 0:
            save(step)
            kubetrain_progress.checkpointed(step, request)
        kubetrain_progress.report(step + 1, total=steps)

A program that cannot look every step asks for a signal instead:
``kubetrain_progress.on_checkpoint_request(signal.SIGUSR1)`` raises it in the process when a
request comes (its handler saves and calls :func:`checkpointed`).

Without the variable (no ``spec.progress``, or a run outside kubetrain) :func:`report` writes
nothing; it still checks what it is given, so a malformed report fails on a laptop too, not
first in the cluster. The line is written to a temporary file in the same directory, then
renamed over the old one: a reader sees the old line or the new one, never a part of either.
The temporary file is the process's own, so processes sharing a container (torchrun's local
ranks) never trip over each other's; the last one to report is the one read.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import threading

__all__ = [
    "CHECKPOINT_ENV",
    "ENV",
    "MAX_METRICS",
    "RESUME_ENV",
    "checkpoint_requested",
    "checkpointed",
    "line",
    "on_checkpoint_request",
    "report",
    "resume_step",
]

ENV = "KUBETRAIN_PROGRESS_FILE"
CHECKPOINT_ENV = "KUBETRAIN_CHECKPOINT_FILE"
RESUME_ENV = "KUBETRAIN_RESUME_STEP"
# What this process said of its checkpoints: repeated on every line, so a reader never misses it.
_said: dict[str, int] = {}
_last: list[str] = []  # the last line's step, total and metrics
MAX_METRICS = 8
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.]{0,62}")
_MAX = 10**18  # kubetrain reads at most 18 digits of a step or a total


def line(step: int, total: int | None = None, **metrics: float) -> str:
    """The line :func:`report` writes (without its newline); ValueError or TypeError if malformed."""
    for reserved in ("checkpoint", "answered"):
        if reserved in metrics:
            raise ValueError(f"{reserved} is not a metric: say a checkpoint with checkpointed()")
    parts = [f"step={_count('step', step, minimum=0)}"]
    if total is not None:
        parts.append(f"total={_count('total', total, minimum=1)}")
    if len(metrics) > MAX_METRICS:
        raise ValueError(f"at most {MAX_METRICS} metrics, not {len(metrics)}: {', '.join(metrics)}")
    for name, value in metrics.items():
        if not _NAME.fullmatch(name):
            raise ValueError(f"metric name {name!r} does not match {_NAME.pattern}")
        parts.append(f"{name}={_number(name, value)}")
    return " ".join(parts)


def report(step: int, total: int | None = None, **metrics: float) -> None:
    """Replace the progress file's line with this one: ``step`` (steps done, from 0), ``total``
    (steps in all, if known) and the ``metrics`` (names as ``[A-Za-z_][A-Za-z0-9_.]*``; pass a
    dotted one as ``**{"val.loss": x}``). Nothing is written without ``KUBETRAIN_PROGRESS_FILE``."""
    text = line(step, total, **metrics)
    _last[:] = [text]
    _write(text)


def checkpoint_requested() -> int | None:
    """The number of the checkpoint the operator asks for now, if this process has not answered
    it; None otherwise (and always without ``spec.checkpoint`` or outside kubetrain)."""
    path = os.environ.get(CHECKPOINT_ENV)
    if not path:
        return None
    try:
        with open(path) as f:
            text = f.read().strip()
    except OSError:
        return None
    if not text.isdigit() or int(text) <= _said.get("answered", 0):
        return None
    return int(text)


def checkpointed(step: int, request: int | None = None) -> None:
    """Say that a checkpoint of ``step`` is saved, answering ``request`` (from
    :func:`checkpoint_requested`) if given: the line is written again at once with
    ``checkpoint=STEP`` (and ``answered=N``), and every line after it carries them."""
    _said["checkpoint"] = _count("checkpoint", step, minimum=0)
    if request is not None:
        _said["answered"] = _count("request", request, minimum=1)
    _write(_last[0] if _last else f"step={step}")


def resume_step() -> int | None:
    """The step of the last checkpoint kubetrain saw before this attempt began, if any."""
    value = os.environ.get(RESUME_ENV, "")
    return int(value) if value.isdigit() else None


def on_checkpoint_request(signum: int = signal.SIGUSR1, every: float = 0.5) -> threading.Thread:
    """Raise ``signum`` in this process when a checkpoint is asked for (a daemon thread looks
    every ``every`` seconds). The handler saves, then calls :func:`checkpointed` with the request."""
    if signal.getsignal(signum) in (signal.SIG_DFL, signal.SIG_IGN, None):
        raise ValueError(f"install a handler for signal {signum} first: its default would end the process")

    def watch() -> None:
        raised = 0
        while True:
            request = checkpoint_requested()
            if request is not None and request > raised:
                raised = request
                os.kill(os.getpid(), signum)
            threading.Event().wait(every)

    thread = threading.Thread(target=watch, name="kubetrain-checkpoint", daemon=True)
    thread.start()
    return thread


def _write(text: str) -> None:
    said = "".join(f" {k}={_said[k]}" for k in ("checkpoint", "answered") if k in _said)
    text = text + said + "\n"
    path = os.environ.get(ENV)
    if not path:
        return
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, path)  # whole, or not at all
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _count(what: str, value: int, *, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{what} must be an int, not {type(value).__name__}: {value!r}")
    if not minimum <= value < _MAX:
        raise ValueError(f"{what} must be at least {minimum} (and below 10**18), not {value}")
    return value


def _number(name: str, value: float) -> str:
    if isinstance(value, bool):
        raise TypeError(f"metric {name} must be a number, not a bool")
    if isinstance(value, int):
        return str(value)
    return repr(float(value))  # a float, or anything that converts to one (a 0-d tensor, numpy)
