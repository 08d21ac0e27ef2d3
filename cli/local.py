"""``kubetrain run --local``: a job's replicas as processes on this machine, before any cluster.

``run --local FILE`` runs the TrainingJob of FILE (either API version; ``-`` reads standard
input); ``run --local --runtime NAME [--image I] [--nodes N] ... -- COMMAND...`` makes the short
job ``submit --runtime`` would (the same flags, checked the same way) and runs it. A job made
from a runtime is expanded as admission expands it, from ``--runtimes FILE|DIR`` (e.g.
``config/runtimes``) or, without it, from the cluster of the kubeconfig — ``render``'s code
(:class:`kubetrain.cli.tools.Runtimes`), not a copy of it.

Every replica runs as one process with the env the operator renders for its pod, 127.0.0.1 and
a port of its own, and the operator's own decisions (:mod:`kubetrain.operator.local`): what a
person sees is what ``kubetrain logs -f`` and ``kubetrain get`` show of a cluster's job — each
line tagged by its replica (:class:`kubetrain.cli.logs.Printer`), a row of ``get``'s table each
time the job's state, replicas or restarts change, the progress line while it moves, the Events
the step sends — and, at the end, what ``kubetrain describe`` says of the job. The exit status is
the job's outcome: 0 Succeeded, 1 Failed, 130 stopped by Ctrl-C (a second Ctrl-C kills every
process at once).

What cannot run here is said before anything starts, one ``error:`` line each (exit status 1):
a container without a command, an init container or sidecar (unless
``--skip-extra-containers``), a volume with no local folder, a program not on ``PATH``, a port
something already listens on. The rules are in docs/usage.md ("Try it locally").
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import sys
import time
from typing import Any, TextIO

from kubetrain import client
from kubetrain.api import v1beta1
from kubetrain.cli import cluster, describe, errors, jobs, logs, output, tools

__all__ = ["Shown", "arguments"]

# The progress line is printed when the step moves, at most this often (as the agent prints it).
PROGRESS_SECONDS = 5.0


def arguments(_verb: str, p: argparse.ArgumentParser) -> None:
    p.usage = (
        "%(prog)s --local FILE [options]\n"
        "       %(prog)s --local --runtime NAME [--image IMAGE] [--nodes N] [options] -- COMMAND [ARG ...]"
    )
    p.add_argument(
        "words",
        nargs="*",
        metavar="FILE | -- COMMAND",
        help="YAML with one TrainingJob (v1alpha1 or v1beta1; - for stdin); with --runtime, the command "
        "the job runs, after --",
    )
    p.add_argument(
        "--local",
        action="store_true",
        help="run every replica as a process on this machine (the one place run runs today)",
    )
    jobs.runtime_arguments(p)
    tools.runtimes_argument(p)
    p.add_argument(
        "--run-dir",
        metavar="DIR",
        help="where the run keeps each replica's folders and volumes (default: .kubetrain/run)",
    )
    p.add_argument(
        "--free-ports",
        action="store_true",
        help="give each replica any free port (default: its type's port plus its position: 23456, 23457, ...)",
    )
    p.add_argument(
        "--skip-extra-containers",
        action="store_true",
        help="leave out init containers, sidecars and second containers (default: refuse the job)",
    )
    cluster.add_flags(p)
    p.set_defaults(run=_run, prog=p.prog)


def _run(args: argparse.Namespace) -> int:
    from kubetrain.operator import local

    if not args.local:
        raise errors.UsageError(
            "give --local: run runs a job on this machine (to run it on a cluster: kubetrain submit FILE -f)",
            args.prog,
        )
    decoded = _decoded(args)
    try:
        ready = local.prepare(
            decoded.job,
            decoded.framework,
            local.Options(
                run_dir=args.run_dir, skip_extra=args.skip_extra_containers, free_ports=args.free_ports
            ),
        )
    except local.NotRunnableError as e:
        raise errors.CommandError(str(e)) from None
    shown = Shown(ready.job, sys.stdout, sys.stderr)
    outcome = local.run(ready, shown.tell)
    shown.summary(outcome)
    return outcome.code


def _decoded(args: argparse.Namespace) -> Any:
    """The job to run, whole (an ``intake.Decoded``): the file's, or the one --runtime makes."""
    from kubetrain.api import documents, validation
    from kubetrain.operator import expansion, intake

    with contextlib.ExitStack() as stack:
        runtimes = tools.Runtimes(args, stack)
        if args.runtime is None:
            if len(args.words) != 1:
                raise errors.UsageError(
                    "give one FILE, or --runtime NAME and the job's command after --", args.prog
                )
            jobs.refuse_runtime_flags(args)
            try:
                docs = documents.load(args.words[0])
            except documents.DocumentError as e:
                raise errors.CommandError(str(e)) from None
            if len(docs) != 1:
                raise errors.CommandError(f"{args.words[0]}: {len(docs)} documents: a local run runs one job")
            (doc,) = docs
            tools.refuse_old_kind(doc, args.words[0])
            try:
                return tools.stored(doc, runtimes)
            except validation.ValidationError as e:
                raise errors.CommandError(str(doc.explain(e))) from None
        (body,) = jobs.bodies(args)
        expanded = expansion.expand(body, runtimes.resolve_at("--runtime"))
        try:
            return intake.decode(expanded.obj, weigh=True)
        except validation.ValidationError as e:
            lines = [jobs.by_flag(expanded.explain(f)) for f in e.errors]
            raise errors.CommandError("\n".join(lines)) from None


class Shown:
    """What a person sees of a local run: lines as ``kubetrain logs`` prints them, ``get``'s rows,
    the progress line, the Events, and ``describe``'s text at the end."""

    def __init__(self, job: v1beta1.TrainingJob, out: TextIO, err: TextIO) -> None:
        self.out, self.err = out, err
        self.job = job
        self.printer = logs.Printer(job, output.palette(out))
        self.spelled = {k.lower(): k for k in job.spec.replica_specs}
        self.row: tuple[object, ...] | None = None
        self.step: int | None = None
        self.progress_at = 0.0
        self.events: list[client.Event] = []

    def tell(self, said: Any) -> None:
        """Show one value a run says (:mod:`kubetrain.operator.local.said`)."""
        from kubetrain.operator import local

        if isinstance(said, local.Line):
            line = client.LogLine(
                replica=said.replica,
                replica_type=self.spelled.get(said.replica_type, said.replica_type),
                index=said.index,
                attempt=said.attempt,
                pod=said.pod,
                text=said.text,
                notice=said.notice,
            )
            self._print(self.printer.format(line))
        elif isinstance(said, local.Changed):
            self.job = said.job
            self._changed(said.job)
        elif isinstance(said, local.Told):
            e = said.event
            now = datetime.datetime.now(datetime.UTC)
            self.events.append(
                client.Event(
                    time=now,
                    type=e.type,
                    reason=e.reason,
                    message=e.message,
                    object=f"TrainingJob/{self.job.metadata.name}",
                )
            )
            self._print(f"{e.type} {e.reason}: {e.message}")
        else:
            print(f"warning: {said.text}", file=self.err, flush=True)

    def _changed(self, job: v1beta1.TrainingJob) -> None:
        now = datetime.datetime.now(datetime.UTC)
        headers, (row,) = jobs.rows([job], now)
        key = row[:-1]  # not the age
        if key != self.row:
            table = output.table(headers, [row]).splitlines()
            if self.row is None:
                self._print(table[0])
            self._print(table[1])
            self.row = key
        p = job.status.progress
        if (
            p is not None
            and p.step != self.step
            and (time.monotonic() - self.progress_at >= PROGRESS_SECONDS or progress_done(job))
        ):
            self.step, self.progress_at = p.step, time.monotonic()
            self._print(describe.progress_section(job, now).splitlines()[0])

    def summary(self, outcome: Any) -> None:
        """``describe``'s text of the job as it ended, with its pods as they were."""
        now = datetime.datetime.now(datetime.UTC)
        pods = [
            client.PodInfo(
                name=p.name,
                replica=f"{p.replica_type}-{p.index}",
                replica_type=self.spelled.get(p.replica_type, p.replica_type),
                index=p.index,
                attempt=p.attempt,
                phase=p.phase,
                node=p.node,
                restarts=p.restarts,
                reason=p.reasons[-1] if p.reasons else None,
                exit_code=next(iter(p.exit_codes.values()), None),
            )
            for p in outcome.pods
        ]
        if outcome.stopped:
            self._print(f"\nstopped: {len(pods)} replica(s) stopped before the job finished")
        text = describe.text(outcome.job, pods, self.events, now)
        # describe's next: line names cluster commands; the logs above are this run's.
        kept = [line for line in text.splitlines() if not line.startswith("next: ")]
        self._print("\n" + "\n".join(kept))

    def _print(self, text: str) -> None:
        print(text, file=self.out, flush=True)


def progress_done(job: v1beta1.TrainingJob) -> bool:
    p = job.status.progress
    return p is not None and p.total_steps is not None and p.step >= p.total_steps
