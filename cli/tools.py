"""``kubetrain render``, ``manifests`` and ``migrate-storage``: the tools beside the job verbs.

``kubetrain render FILE`` prints every object the operator would create for the
TrainingJob(s) in FILE (either API version; ``-`` reads standard input) — no cluster
needed; ``--gang-scheduler`` says for which gang scheduler (native unless told), ``--kueue`` for
which Kueue route (a job in a queue gets its Workload, unless told ``pods``). A file is
rendered as the apiserver would store it, a new job's admission defaults given. A job made from
a runtime (``spec.runtimeRef``) is first expanded as admission expands it
(:mod:`kubetrain.operator.expansion`), its runtimes read from ``--runtimes`` (files, or
directories of them, such as ``config/runtimes``) if given, else from the cluster of the
kubeconfig; an error of the expanded job is said where its writer wrote it — the job's own
field, or the runtime's (at ``spec.runtimeRef``).
``kubetrain manifests`` regenerates the CRD and the admission defaults' policy from the API
types, and the state diagram from
the lifecycle's transition table; with ``--check`` it only reports whether the checked-in
files are current, and whether a generated CRD breaks the upgrade rule against the last released
one (``config/crd/released``, :mod:`kubetrain.api.compatibility`: an ``error:`` line per
change); ``--release``, run at a release, makes HEAD's CRDs that baseline. ``kubetrain migrate-storage`` rewrites every stored TrainingJob as
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
import contextlib
import functools
import pathlib
import sys
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from kubetrain.cli import cluster, errors, output

if TYPE_CHECKING:
    from kubetrain.api import documents

# How the expansion reads runtimes: kubetrain.operator.expansion.Resolve, loaded only when render runs.
Resolve = Callable[[Any, str, str | None], Mapping[str, Any] | None]

__all__ = ["STATE_DIAGRAM_PATH", "Runtimes", "arguments", "refuse_old_kind", "runtimes_argument", "stored"]

STATE_DIAGRAM_PATH = "docs/state-diagram.md"
# The CRDs of the last release, and the commit they are HEAD's of: what --check compares with.
RELEASED_DIR = "config/crd/released"
RELEASED_COMMIT = f"{RELEASED_DIR}/commit"
GANG_SCHEDULERS = ("native", "coscheduling", "volcano", "none")

Run = Callable[[argparse.Namespace], int]


def arguments(verb: str, p: argparse.ArgumentParser) -> None:
    """The arguments of ``render``, ``manifests`` or ``migrate-storage``."""
    if verb == "manifests":
        p.add_argument("--root", default=".", help="the repository root (default: .)")
        what = p.add_mutually_exclusive_group()
        what.add_argument(
            "--check",
            action="store_true",
            help="only fail if the checked-in files are stale or a CRD breaks the released one's rule",
        )
        what.add_argument(
            "--release",
            action="store_true",
            help=f"at a release: make the committed CRDs of HEAD the baseline in {RELEASED_DIR}",
        )
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
    runtimes_argument(p)
    cluster.add_flags(p)
    p.set_defaults(run=_render)


def runtimes_argument(p: argparse.ArgumentParser) -> None:
    """``--runtimes FILE``, where a job made from a runtime finds it (``render``, ``run --local``)."""
    p.add_argument(
        "--runtimes",
        action="append",
        default=[],
        metavar="FILE",
        help="runtimes for a job made from one (spec.runtimeRef): a YAML file, or a directory of them "
        "(config/runtimes); repeat for more (default: read them from the cluster)",
    )


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

    from kubetrain.api import documents, validation
    from kubetrain.operator import render, scheduling

    objects: list[dict[str, Any]] = []
    scheduler = attrs.evolve(scheduling.registry.get(args.gang_scheduler), kueue=args.kueue)
    with contextlib.ExitStack() as stack:
        runtimes = Runtimes(args, stack)
        for doc in documents.load(args.file):
            refuse_old_kind(doc, args.file)
            try:
                decoded = stored(doc, runtimes)
                job = decoded.job
                workload = render.workload(job, decoded.framework, scheduler)
                objects.extend([workload] if workload is not None else [])
                objects.extend(render.render(job, decoded.framework, scheduler))
            except validation.ValidationError as e:
                raise doc.explain(e) from None
    output.yaml_documents(objects, sys.stdout)
    return 0


def stored(doc: documents.Document, runtimes: Runtimes) -> Any:
    """The job of ``doc`` as the apiserver would store it (an ``intake.Decoded``): a short job
    expanded as admission expands it (the expansion gives the defaults itself), any other with a
    new job's defaults; ValidationError in the terms of the job as written."""
    import attrs

    from kubetrain.api import v1beta1
    from kubetrain.operator import intake

    if _is_short(doc.data):
        return _expanded(doc, runtimes)
    decoded = intake.decode(doc.data, weigh=True)
    return attrs.evolve(decoded, job=v1beta1.trainingjob_defaults.on_create(decoded.job))


def _is_short(data: Any) -> bool:
    """A job made from a runtime, as admission tells one (as the client does, without loading it)."""
    from kubetrain.api import v1beta1

    spec = data.get("spec") if isinstance(data, Mapping) else None
    return (
        isinstance(spec, Mapping) and "runtimeRef" in spec and data.get("apiVersion") == v1beta1.API_VERSION
    )


def _expanded(doc: documents.Document, runtimes: Runtimes) -> Any:
    """The short job of ``doc`` expanded from its runtime and decoded (an ``intake.Decoded``);
    ValidationError in the terms of the job as written."""
    from kubetrain.api import validation
    from kubetrain.operator import expansion, intake

    expanded = expansion.expand(doc.data, runtimes.resolve(doc))
    try:
        return intake.decode(expanded.obj, weigh=True)
    except validation.ValidationError as e:
        raise validation.ValidationError(expanded.explain(f) for f in e.errors) from None


class Runtimes:
    """Where ``render`` and ``run --local`` read runtimes: the ``--runtimes`` files, else the
    cluster (connected to only when a job names a runtime)."""

    def __init__(self, args: argparse.Namespace, stack: contextlib.ExitStack) -> None:
        self._args, self._stack = args, stack
        self._files: Resolve | None = None
        self._cluster: Resolve | None = None

    def resolve(self, doc: documents.Document) -> Resolve:
        return self.resolve_at(f"{doc.where(('spec', 'runtimeRef'))}: spec.runtimeRef")

    def resolve_at(self, where: str) -> Resolve:
        """How to read runtimes for a job whose ``spec.runtimeRef`` is written at ``where``."""
        if self._args.runtimes:
            if self._files is None:
                self._files = _from_files(self._args.runtimes)
            return self._files
        return self._from_cluster(where)

    def _from_cluster(self, where: str) -> Resolve:
        from kubetrain import client

        def failed(e: client.Error) -> errors.CommandError:
            return errors.CommandError(
                f"{where}: give its runtime with --runtimes FILE or DIR (kubetrain's are in "
                f"config/runtimes), or a cluster that has it: {e}"
            )

        if self._cluster is None:
            try:
                c = self._stack.enter_context(cluster.connect(self._args))
            except client.Error as e:
                raise failed(e) from None
            self._cluster = c.find_runtime

        found = self._cluster

        def resolve(kind: Any, name: str, namespace: str | None) -> Mapping[str, Any] | None:
            try:
                return found(kind, name, namespace)
            except client.Error as e:
                raise failed(e) from None

        return resolve


def _from_files(paths: list[str]) -> Resolve:
    """The runtimes of the files (a directory: its ``*.yaml`` and ``*.yml``), as a Resolve."""
    from kubetrain.client import local

    resolve: Resolve = local.read_runtimes(paths)
    return resolve


def refuse_old_kind(doc: Any, file: str) -> None:
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
    if args.release:
        return _release(pathlib.Path(args.root), crd.definitions())
    if args.check:
        stale = [p for p, text in generated.items() if not p.exists() or p.read_text() != text]
        for path in stale:
            print(f"{path} is stale: run `make manifests`", file=sys.stderr)
        broken = _compare_with_released(pathlib.Path(args.root), crd.definitions())
        return 1 if stale or broken else 0
    for path, text in generated.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        print(f"wrote {path}")
    return 0


def _compare_with_released(root: pathlib.Path, generated: Mapping[str, tuple[str, str]]) -> bool:
    """Print an ``error:`` line per change of the generated CRDs that breaks the released ones'
    rule (:mod:`kubetrain.api.compatibility`); whether there was any."""
    import yaml

    from kubetrain.api import compatibility

    released = root / RELEASED_DIR
    files = sorted(released.glob("*.yaml")) if released.is_dir() else []
    if not files:
        print(f"error: {released}: no released CRDs: run `kubetrain manifests --release`", file=sys.stderr)
        return True
    now = {name: yaml.safe_load(text) for name, (_path, text) in generated.items()}
    findings = []
    for path in files:
        was = yaml.safe_load(path.read_text())
        name = was["metadata"]["name"]
        if name not in now:
            findings.append(compatibility.Finding(path=name, change="CRD removed"))
        else:
            findings.extend(compatibility.changes(was, now[name]))
    for finding in findings:
        print(f"error: {finding}", file=sys.stderr)
    return bool(findings)


def _release(root: pathlib.Path, generated: Mapping[str, tuple[str, str]]) -> int:
    """Copy the generated CRDs to :data:`RELEASED_DIR` and name HEAD in :data:`RELEASED_COMMIT`:
    only if HEAD has them committed, so that the commit named holds exactly these CRDs."""
    import subprocess

    def git(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["git", "-C", str(root), *argv], capture_output=True, text=True, check=False)

    head = git("rev-parse", "HEAD")
    if head.returncode != 0:
        print(f"error: {root}: not a git checkout: {head.stderr.strip()}", file=sys.stderr)
        return 1
    for path, text in generated.values():
        committed = git("show", f"HEAD:{path}")
        if committed.returncode != 0 or committed.stdout != text:
            print(f"error: {path}: HEAD's differs from the generated one: commit it first", file=sys.stderr)
            return 1
    released = root / RELEASED_DIR
    released.mkdir(parents=True, exist_ok=True)
    for stale in released.glob("*.yaml"):
        stale.unlink()
    for path, text in generated.values():
        (released / pathlib.PurePath(path).name).write_text(text)
        print(f"wrote {released / pathlib.PurePath(path).name}")
    (root / RELEASED_COMMIT).write_text(head.stdout)
    print(f"wrote {root / RELEASED_COMMIT}: {head.stdout.strip()}")
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
