"""``kubetrain submit``, ``get``, ``list`` and ``delete``: jobs in and out of the cluster.

``submit FILE`` (``-`` for standard input) creates every TrainingJob of the file, checked
first with the same rules as admission (the API's, then its framework's, where this
installation knows the framework), so a mistake is named by ``file:line`` before anything is
sent. ``--wait`` then waits for each job's outcome, ``--follow`` prints its
logs while it runs and its outcome when it ends; either exits as ``wait`` does (0, 1 failed,
2 timed out).

``get``/``list`` print a table as kubectl would — NAME, FRAMEWORK, STATE (with the reason
its pods wait, if they do), REPLICAS (ready of wanted; succeeded of wanted once finished),
RESTARTS (every restart, whatever paid for it) and AGE, plus NAMESPACE with ``-A`` — or
the v1beta1 objects with ``-o yaml|json`` (``-o name`` for scripts). ``get`` with no name
lists. ``delete NAME...`` deletes; ``--wait`` until the pods are gone too.
"""

from __future__ import annotations

import argparse
import datetime
import sys
from collections.abc import Sequence
from typing import Any

from kubetrain import client
from kubetrain.api import v1beta1
from kubetrain.cli import cluster, errors, logs, output, wait
from kubetrain.client import jobs as client_jobs

__all__ = ["arguments", "replicas_cell", "rows", "state_cell"]

DELETE_TIMEOUT = 120.0


def arguments(verb: str, p: argparse.ArgumentParser) -> None:
    """The arguments of ``submit``, ``get``, ``list`` or ``delete``."""
    cluster.add_flags(p)
    if verb == "submit":
        _submit_arguments(p)
    elif verb in ("get", "list"):
        if verb == "get":
            p.add_argument("names", nargs="*", metavar="NAME", help="TrainingJob names")
        p.add_argument(
            "-o", "--output", choices=output.FORMATS, help="yaml, json or name instead of the table"
        )
        p.add_argument("-A", "--all-namespaces", action="store_true", help="every namespace")
        p.add_argument("-l", "--selector", help="label selector, e.g. team=vision")
        p.set_defaults(run=_get, names=[])
    else:
        p.add_argument("names", nargs="+", metavar="NAME", help="TrainingJob names")
        p.add_argument("--wait", action="store_true", help="return once the jobs and their pods are gone")
        p.add_argument("--timeout", type=wait.duration, help="for --wait, per job (default: 2m)")
        p.set_defaults(run=_delete)


def _submit_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", help="YAML with one or more TrainingJobs (v1alpha1 or v1beta1); - for stdin")
    p.add_argument("--wait", action="store_true", help="wait until each job has succeeded (0) or failed (1)")
    p.add_argument(
        "-f", "--follow", action="store_true", help="print the logs until the job ends, then its outcome"
    )
    p.add_argument(
        "--timeout", type=wait.duration, help="for --wait, per job: 90, 90s, 10m, 1h (default: none)"
    )
    p.set_defaults(run=_submit)


def _submit(args: argparse.Namespace) -> int:
    # A bad file is said as such, cluster or not.
    bodies = client_jobs.read_file(args.file, check=_admissible)
    with cluster.connect(args) as c:
        created = [c.create(body, namespace=args.namespace) for body in bodies]
        for job in created:
            print(f"{output.resource(job)} created", flush=True)
        if not (args.wait or args.follow):
            return 0
        problems: list[errors.CommandError] = []
        for job in created:
            name, ns = job.metadata.name or "", job.metadata.namespace
            if args.follow:
                lines = c.logs(name, follow=True, namespace=ns)
                logs.print_lines(lines, logs.Printer(job, output.palette(sys.stdout)), sys.stdout)
            try:
                # A next: step names the namespace only where the job is not in the one assumed.
                shown = args.namespace or (None if ns == c.namespace else ns)
                wait.outcome(c, name, "Succeeded", args.timeout, ns, sys.stdout, shown_namespace=shown)
            except errors.CommandError as e:
                problems.append(e)
    if problems:
        code = 1 if any(p.code == 1 for p in problems) else 2
        raise errors.CommandError("\n".join(str(p) for p in problems), code=code, hint=problems[0].hint)
    return 0


def _admissible(data: Any) -> None:
    """Admission's checks of a job's framework (:func:`kubetrain.operator.intake.decode`), for the
    frameworks this installation knows: one it does not know — a plugin installed with the
    operator alone — is left to the cluster to judge."""
    from kubetrain.operator import intake

    try:
        intake.decode(data, weigh=True)
    except intake.Unrunnable as e:
        if e.framework is not None:
            raise


def _get(args: argparse.Namespace) -> int:
    if args.names and (args.all_namespaces or args.selector):
        raise errors.CommandError("name jobs, or list them with -A/-l, not both")
    missing: list[str] = []
    with cluster.connect(args) as c:
        if args.names:
            found = []
            for name in args.names:
                try:
                    found.append(c.get(name, namespace=args.namespace))
                except client.NotFound as e:
                    missing.append(str(e))
        else:
            found = c.list(
                namespace=args.namespace, selector=args.selector, all_namespaces=args.all_namespaces
            )
        where = "any namespace" if args.all_namespaces else f"namespace {args.namespace or c.namespace!r}"
    if args.output:
        output.dump(found, args.output, sys.stdout, single=bool(args.names) and len(args.names) == 1)
    elif found:
        headers, table = rows(found, datetime.datetime.now(datetime.UTC), with_namespace=args.all_namespaces)
        sys.stdout.write(output.table(headers, table))
    elif not args.names:
        print(f"No TrainingJobs found in {where}.", file=sys.stderr)
    if missing:
        raise errors.CommandError("\n".join(missing))
    return 0


def rows(
    jobs: Sequence[v1beta1.TrainingJob], now: datetime.datetime, *, with_namespace: bool = False
) -> tuple[tuple[str, ...], list[tuple[object, ...]]]:
    """The headers and rows of the jobs' table."""
    headers = ("name", "framework", "state", "replicas", "restarts", "age")
    table: list[tuple[object, ...]] = [
        (
            job.metadata.name,
            job.spec.framework.name,
            state_cell(job),
            replicas_cell(job),
            job.status.restarts.total,
            output.age(job.metadata.creation_timestamp, now),
        )
        for job in jobs
    ]
    if with_namespace:
        return ("namespace", *headers), [(j.metadata.namespace, *r) for j, r in zip(jobs, table, strict=True)]
    return headers, table


def state_cell(job: v1beta1.TrainingJob) -> str:
    """The state, and why its pods wait while they wait: ``Created (Queued)``; why it is suspended
    if not by its own spec: ``Suspended (Queued)``, held by Kueue."""
    s = job.status
    state = s.state or v1beta1.JobState.PENDING
    if state in (v1beta1.JobState.SUCCEEDED, v1beta1.JobState.FAILED):
        return state.value
    C = v1beta1.ConditionType  # noqa: N806
    held = [
        c.reason
        for c in s.conditions
        if (c.type == C.SCHEDULED and not c.is_true())
        or (c.type == C.REPLICA_FAILURE and c.is_true())
        or (c.type == C.SUSPENDED and c.is_true() and c.reason != "Suspended")
    ]
    return f"{state.value} ({', '.join(held)})" if held else state.value


def replicas_cell(job: v1beta1.TrainingJob) -> str:
    """Ready of wanted while it runs (``3/4``); succeeded of wanted once it is finished."""
    wanted = sum(spec.replicas for spec in job.spec.replica_specs.values())
    counts = job.status.replica_statuses.values()
    if job.status.state in (v1beta1.JobState.SUCCEEDED, v1beta1.JobState.FAILED):
        return f"{sum(r.succeeded for r in counts)}/{wanted} succeeded"
    return f"{sum(r.ready for r in counts)}/{wanted}"


def _delete(args: argparse.Namespace) -> int:
    problems: list[errors.CommandError] = []
    with cluster.connect(args) as c:
        for name in args.names:
            try:
                c.delete(
                    name,
                    wait=args.wait,
                    timeout=DELETE_TIMEOUT if args.timeout is None else args.timeout,
                    namespace=args.namespace,
                )
            except client.WaitTimeout as e:
                problems.append(errors.CommandError(str(e), code=2))
                continue
            except client.NotFound as e:
                problems.append(errors.CommandError(str(e)))
                continue
            print(f"{output.RESOURCE}/{name} deleted", flush=True)
    if problems:
        code = 1 if any(p.code == 1 for p in problems) else 2
        raise errors.CommandError("\n".join(str(p) for p in problems), code=code)
    return 0
