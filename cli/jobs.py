"""``kubetrain submit``, ``get``, ``list`` and ``delete``: jobs in and out of the cluster.

``submit FILE`` (``-`` for standard input) creates every TrainingJob of the file, checked
first with the same rules as admission (the API's, then its framework's, where this
installation knows the framework), so a mistake is named by ``file:line`` before anything is
sent. ``submit --runtime NAME --image I --nodes N -- COMMAND...`` writes the short job made from
a runtime itself (:func:`kubetrain.client.runtimes.short_job`), a flag per trainer field, and
creates it; a bad value is named by its flag. A short job — from flags or a file — is expanded
from its runtime by admission, in the cluster, which refuses it there (a runtime that is not
there, a trainer that does not fit it) with one line. ``--dry-run`` prints what would be
created and creates nothing. ``--wait`` then waits for each job's outcome, ``--follow`` prints its
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
from kubetrain.api import v1beta1, validation
from kubetrain.cli import cluster, errors, logs, output, wait
from kubetrain.client import jobs as client_jobs
from kubetrain.client import runtimes

__all__ = [
    "arguments",
    "bodies",
    "by_flag",
    "refuse_runtime_flags",
    "replicas_cell",
    "rows",
    "runtime_arguments",
    "state_cell",
]

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
    p.usage = (
        "%(prog)s FILE [options]\n"
        "       %(prog)s --runtime NAME [--image IMAGE] [--nodes N] [options] -- COMMAND [ARG ...]"
    )
    p.add_argument(
        "words",
        nargs="*",
        metavar="FILE | -- COMMAND",
        help="YAML with one or more TrainingJobs (v1alpha1 or v1beta1; - for stdin); with --runtime, "
        "the command the job runs, after --",
    )
    runtime_arguments(p)
    p.add_argument(
        "--dry-run", action="store_true", help="print the YAML of what would be created; create nothing"
    )
    p.add_argument("--wait", action="store_true", help="wait until each job has succeeded (0) or failed (1)")
    p.add_argument(
        "-f", "--follow", action="store_true", help="print the logs until the job ends, then its outcome"
    )
    p.add_argument(
        "--timeout", type=wait.duration, help="for --wait, per job: 90, 90s, 10m, 1h (default: none)"
    )
    p.set_defaults(run=_submit, prog=p.prog)


def runtime_arguments(p: argparse.ArgumentParser) -> None:
    """The flags of a job made from a runtime (``submit`` and ``run --local``): ``--runtime`` and
    a flag per trainer field."""
    g = p.add_argument_group("a job made from a runtime (kubetrain runtimes lists them), instead of FILE")
    g.add_argument("--runtime", metavar="NAME", help="the runtime the job is made from")
    g.add_argument(
        "--runtime-kind",
        choices=[k.value for k in v1beta1.RuntimeKind],
        help="ClusterTrainingRuntime (default: every namespace's) or TrainingRuntime (the namespace's)",
    )
    g.add_argument("--image", help="the image the training code is in")
    g.add_argument("--nodes", type=_count, metavar="N", help="the number of nodes (the runtime's node type)")
    g.add_argument(
        "--env",
        type=_variable,
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="an environment variable of the trainer (repeat for more)",
    )
    g.add_argument("--procs-per-node", metavar="P", help="processes per node: a number, or auto, cpu, gpu")
    g.add_argument(
        "--gpus-per-node", type=_positive, metavar="G", help=f"GPUs per node ({runtimes.GPU} in its limits)"
    )
    names = g.add_mutually_exclusive_group()
    names.add_argument("--name", help="the job's name")
    names.add_argument(
        "--generate-name",
        action="store_true",
        help="name it after the runtime, {runtime}-xxxxx (the default without --name)",
    )


# The flags of a job made from a runtime, by the destination argparse gives them.
_RUNTIME_FLAGS = {
    "runtime_kind": "--runtime-kind",
    "image": "--image",
    "nodes": "--nodes",
    "env": "--env",
    "procs_per_node": "--procs-per-node",
    "gpus_per_node": "--gpus-per-node",
    "name": "--name",
    "generate_name": "--generate-name",
}
# Which flag wrote each field of the short job: its errors are said by the flag.
_FLAG_OF: dict[tuple[str, ...], str] = {
    ("spec", "runtimeRef"): "--runtime",
    ("spec", "runtimeRef", "kind"): "--runtime-kind",
    ("spec", "trainer", "image"): "--image",
    ("spec", "trainer", "command"): "COMMAND",
    ("spec", "trainer", "numNodes"): "--nodes",
    ("spec", "trainer", "env"): "--env",
    ("spec", "trainer", "procsPerNode"): "--procs-per-node",
    ("spec", "trainer", "resourcesPerNode"): "--gpus-per-node",
    ("metadata", "name"): "--name",
    ("metadata", "namespace"): "--namespace",
}


def _submit(args: argparse.Namespace) -> int:
    # A bad file, or a bad flag, is said as such, cluster or not.
    made = bodies(args)
    if args.dry_run:
        if args.wait or args.follow:
            raise errors.UsageError("--dry-run creates nothing to --wait for or --follow", args.prog)
        output.yaml_documents(made, sys.stdout)
        return 0
    with cluster.connect(args) as c:
        created = [c.create(body, namespace=args.namespace) for body in made]
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


def bodies(args: argparse.Namespace) -> list[dict[str, Any]]:
    """What ``submit`` creates: the file's jobs, or the job its --runtime flags make."""
    if args.runtime is None:
        refuse_runtime_flags(args)
        if len(args.words) != 1:
            raise errors.UsageError(
                "give one FILE, or --runtime NAME and the job's command after --", args.prog
            )
        return client_jobs.read_file(args.words[0], check=_admissible)
    body = client.short_job(
        args.runtime,
        kind=args.runtime_kind or v1beta1.RuntimeKind.CLUSTER,
        image=args.image,
        command=args.words or None,
        nodes=args.nodes,
        env=args.env,
        procs_per_node=args.procs_per_node,
        gpus_per_node=args.gpus_per_node,
        name=args.name,
        namespace=args.namespace,
    )
    try:
        return [client_jobs.short_body(body)]
    except validation.ValidationError as e:
        raise errors.CommandError("\n".join(by_flag(f) for f in e.errors)) from None


def refuse_runtime_flags(args: argparse.Namespace) -> None:
    """A flag of a job made from a runtime given without ``--runtime`` is a usage error."""
    given = [flag for dest, flag in _RUNTIME_FLAGS.items() if getattr(args, dest) not in (None, False, [])]
    if given:
        raise errors.UsageError(
            f"{', '.join(given)}: only for a job made from a runtime: give --runtime NAME", args.prog
        )


def by_flag(error: validation.FieldError) -> str:
    """A field error of the job the flags made, said by the flag that gave the field."""
    for n in range(len(error.path), 0, -1):
        flag = _FLAG_OF.get(tuple(str(p) for p in error.path[:n]))
        if flag is not None:
            return f"{flag}: {error}"
    return str(error)


def _count(text: str) -> int:
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"expected a number of nodes, 0 or more, got {text!r}")
    return int(text)


def _positive(text: str) -> int:
    if not text.isdigit() or int(text) == 0:
        raise argparse.ArgumentTypeError(f"expected a number, 1 or more, got {text!r}")
    return int(text)


def _variable(text: str) -> tuple[str, str]:
    name, equals, value = text.partition("=")
    if not equals or not name:
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, got {text!r}")
    return name, value


def _admissible(data: Any) -> None:
    """Admission's checks of a job's framework (:func:`kubetrain.operator.intake.decode`), for the
    frameworks this installation knows: one it does not know — a plugin installed with the
    operator alone — is left to the cluster to judge. A short job is judged by admission too,
    where its runtime is."""
    from kubetrain.operator import intake

    if client_jobs.is_short(data):
        return
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
