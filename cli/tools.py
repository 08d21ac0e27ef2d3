"""``kubetrain render``, ``manifests`` and ``migrate-storage``: the tools beside the job verbs.

``kubetrain render FILE`` prints every object the operator would create for the
TrainingJob(s) in FILE (either API version; ``-`` reads standard input) — no cluster
needed; ``--gang-scheduler`` says for which gang scheduler (native unless told), ``--kueue`` for
which Kueue route (a job in a queue gets its Workload, unless told ``pods``). A file is
rendered as the apiserver would store it, a new job's admission defaults given.
``kubetrain manifests`` regenerates the CRD and the admission defaults' policy from the API
types, and the state diagram from
the lifecycle's transition table; with ``--check`` it only reports whether the checked-in
files are current. ``kubetrain migrate-storage`` rewrites every stored TrainingJob as
v1beta1 (see :mod:`kubetrain.cli.migration`), through the client's connection.

They run the operator's own pure code — :mod:`~kubetrain.operator.intake` (a job checked as
admission checks it), render, scheduling, the lifecycle's table — imported only when one of
them runs: the job verbs start without loading it, and none of them loads the operator's
runtime or its webhooks (``tests/unit/test_import_layers.py``). Bad input is reported with
its ``file:line: path`` and exit status 1, never a traceback.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import pathlib
import sys
from collections.abc import Callable
from typing import Any

from kubetrain.cli import cluster, errors, output

__all__ = ["STATE_DIAGRAM_PATH", "arguments"]

STATE_DIAGRAM_PATH = "docs/state-diagram.md"
GANG_SCHEDULERS = ("native", "coscheduling", "volcano", "none")

Run = Callable[[argparse.Namespace], int]


def arguments(verb: str, p: argparse.ArgumentParser) -> None:
    """The arguments of ``render``, ``manifests`` or ``migrate-storage``."""
    if verb == "manifests":
        p.add_argument("--root", default=".", help="the repository root (default: .)")
        p.add_argument("--check", action="store_true", help="only fail if the checked-in CRD is stale")
        p.set_defaults(run=_manifests)
    elif verb == "migrate-storage":
        cluster.add_flags(p, namespace=False)
        p.set_defaults(run=_migrate_storage)
    else:
        _render_arguments(p)


def _render_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", help="YAML with one or more TrainingJobs (v1alpha1 or v1beta1); - for stdin")
    p.add_argument(
        "--gang-scheduler",
        default="native",
        choices=GANG_SCHEDULERS,
        help="the operator's --gang-scheduler to render for (default: native, what auto finds where it is served)",
    )
    p.add_argument(
        "--kueue",
        default="workload",
        choices=("workload", "pods"),
        help="the operator's --kueue to render for: a job in a queue gets its own Workload (default; its "
        "priority, which only a cluster knows, is left out), or its pods join Kueue plain-pod groups (pods)",
    )
    p.set_defaults(run=_render)


def _reported(run: Run) -> Run:
    """``run``, with bad input turned into the command's error."""

    @functools.wraps(run)
    def wrapped(args: argparse.Namespace) -> int:
        from kubetrain.api import documents, validation

        try:
            return run(args)
        except (validation.ValidationError, documents.DocumentError) as e:
            raise errors.CommandError(str(e)) from None

    return wrapped


@_reported
def _render(args: argparse.Namespace) -> int:
    import attrs

    from kubetrain.api import documents, v1beta1, validation
    from kubetrain.operator import intake, render, scheduling

    objects: list[dict[str, Any]] = []
    scheduler = attrs.evolve(scheduling.registry.get(args.gang_scheduler), kueue=args.kueue)
    for doc in documents.load(args.file):
        _refuse_old_kind(doc, args.file)
        try:
            decoded = intake.decode(doc.data, weigh=True)
            # What the apiserver stores when the file is applied: a new job's defaults given.
            job = v1beta1.trainingjob_defaults.on_create(decoded.job)
            workload = render.workload(job, decoded.framework, scheduler)
            objects.extend([workload] if workload is not None else [])
            objects.extend(render.render(job, decoded.framework, scheduler))
        except validation.ValidationError as e:
            raise doc.explain(e) from None
    output.yaml_documents(objects, sys.stdout)
    return 0


def _refuse_old_kind(doc: Any, file: str) -> None:
    """An old operator's job is pointed to ``kubetrain convert`` instead of told its apiVersion is wrong."""
    from kubetrain.convert import document

    if isinstance(doc.data, dict) and document.kind_of(doc.data) is not None:
        raise errors.CommandError(
            f"{doc.where(('apiVersion',))}: {doc.data.get('apiVersion')} {doc.data.get('kind')} is an old "
            "operator's kind, not a TrainingJob",
            hint=f"kubetrain convert {file} writes it as one (then: kubetrain convert {file} | kubetrain render -)",
        )


def _migrate_storage(args: argparse.Namespace) -> int:
    from kubetrain.cli import migration
    from kubetrain.client import connection

    async def run() -> migration.Report:
        c = await connection.connect(args.kubeconfig, None, args.context)
        try:
            return await migration.migrate(c)
        finally:
            await c.close()

    report = asyncio.run(run())
    print(
        f"{report.objects} TrainingJob(s) read, {report.rewritten} rewritten as {migration.STORAGE_VERSION}; "
        f"storedVersions is now [{migration.STORAGE_VERSION}]"
    )
    return 0


def _manifests(args: argparse.Namespace) -> int:
    from kubetrain.api import crd, v1beta1

    defaults = v1beta1.trainingjob_defaults
    generated = {
        pathlib.Path(args.root) / crd.CRD_PATH: crd.render(),
        **{pathlib.Path(args.root) / path: text for path, text in crd.runtime_definitions().items()},
        pathlib.Path(args.root) / defaults.POLICY_PATH: defaults.render(),
        pathlib.Path(args.root) / STATE_DIAGRAM_PATH: _state_diagram(),
    }
    if args.check:
        stale = [p for p, text in generated.items() if not p.exists() or p.read_text() != text]
        for path in stale:
            print(f"{path} is stale: run `make manifests`", file=sys.stderr)
        return 1 if stale else 0
    for path, text in generated.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        print(f"wrote {path}")
    return 0


def _state_diagram() -> str:
    from kubetrain.operator import lifecycle

    rows = "\n".join(f"| {a.value} | {b.value} |" for a, b in sorted(lifecycle.TRANSITIONS))
    return (
        "# TrainingJob states\n\n"
        "Generated by `make manifests` from `kubetrain.operator.lifecycle.TRANSITIONS`; the property\n"
        "tests check that every change of state the operator makes is one of these.\n"
        "See [lifecycle.md](lifecycle.md) for what causes each.\n\n"
        f"```mermaid\n{lifecycle.diagram()}```\n\n"
        f"| from | to |\n|---|---|\n{rows}\n"
    )
