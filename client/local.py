"""``run_local``: a TrainingJob run on this machine, every replica a process, from Python.

::

    from kubetrain import client

    run = client.run_local("samples/v1beta1/pytorch-ddp.yaml")       # a file, a dict or a TrainingJob
    print(run.state, run.code, run.job.status.restarts.total)

    run = client.run_local(runtime="torch-distributed", runtimes="config/runtimes", nodes=3,
                           command=["torchrun", "train.py"])          # a job made from a runtime

It is ``kubetrain run --local`` (:mod:`kubetrain.operator.local` does the running: the env the
operator renders, 127.0.0.1 and a port per replica, the operator's own decisions). The job is
decoded as admission decodes it; a short job (``spec.runtimeRef``, or ``runtime=``) is expanded
from ``runtimes`` (files or directories of them) or, without it, from the cluster of the
kubeconfig. What the run says goes to ``tell`` (values of :mod:`kubetrain.operator.local.said`);
without one, each replica's lines and the job's state changes are printed plainly. Ctrl-C stops
the run as on the command line. Bad input, and everything that cannot run here, is one
:class:`~kubetrain.client.errors.InvalidInput` naming each reason, raised before any process
starts.

The client loads the operator's local runner and the pure parts it needs (the expansion, the
intake) only when ``run_local`` is called: ``from kubetrain import client`` stays free of the
operator (``tests/unit/test_import_layers.py``).
"""

from __future__ import annotations

import os
import pathlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import attrs

from kubetrain.api import documents, v1beta1, validation
from kubetrain.client import errors
from kubetrain.client import runtimes as runtimes_

__all__ = ["LocalRun", "run_local"]


@attrs.frozen(kw_only=True)
class LocalRun:
    """How a local run ended: the job as it ended, its state, and the exit status
    ``kubetrain run --local`` gives it (0 Succeeded, 1 Failed, 130 stopped)."""

    job: v1beta1.TrainingJob
    state: v1beta1.JobState
    code: int
    stopped: bool = False


def run_local(
    job: v1beta1.TrainingJob | Mapping[str, Any] | str | os.PathLike[str] | None = None,
    *,
    runtime: str | None = None,
    runtime_kind: v1beta1.RuntimeKind | str = v1beta1.RuntimeKind.CLUSTER,
    image: str | None = None,
    command: Sequence[str] | None = None,
    nodes: int | None = None,
    env: Mapping[str, str] | None = None,
    procs_per_node: int | str | None = None,
    gpus_per_node: int | None = None,
    name: str | None = None,
    runtimes: str | os.PathLike[str] | Iterable[str | os.PathLike[str]] | None = None,
    kubeconfig: str | None = None,
    context: str | None = None,
    namespace: str | None = None,
    run_dir: str | None = None,
    skip_extra_containers: bool = False,
    free_ports: bool = False,
    tell: Callable[[Any], None] | None = None,
) -> LocalRun:
    """Run ``job`` (or the job made from ``runtime`` and the trainer's fields) on this machine
    until it has finished; see the module's text."""
    from kubetrain.operator import local

    if (job is None) == (runtime is None):
        raise errors.InvalidInput("give a job, or runtime= and the trainer's fields, not both")
    if runtime is not None:
        data: Any = runtimes_.short_job(
            runtime,
            kind=runtime_kind,
            image=image,
            command=command,
            nodes=nodes,
            env=env,
            procs_per_node=procs_per_node,
            gpus_per_node=gpus_per_node,
            name=name,
            namespace=namespace,
        )
        source = f"runtime {runtime}"
    elif isinstance(job, str | os.PathLike):
        docs = _load(job)
        data, source = docs[0].data, str(job)
    elif isinstance(job, v1beta1.TrainingJob):
        data, source = job, "the job"
    else:
        data, source = dict(job or {}), "the job"
    decoded = _decoded(data, source, runtimes, kubeconfig, context, namespace)
    try:
        ready = local.prepare(
            decoded.job,
            decoded.framework,
            local.Options(run_dir=run_dir, skip_extra=skip_extra_containers, free_ports=free_ports),
        )
    except local.NotRunnableError as e:
        raise errors.InvalidInput(str(e)) from None
    outcome = local.run(ready, tell or _Plain())
    return LocalRun(job=outcome.job, state=outcome.state, code=outcome.code, stopped=outcome.stopped)


def _load(path: str | os.PathLike[str]) -> list[documents.Document]:
    try:
        docs = documents.load(str(path))
    except documents.DocumentError as e:
        raise errors.InvalidInput(str(e)) from None
    if len(docs) != 1:
        raise errors.InvalidInput(f"{path}: {len(docs)} documents: a local run runs one job")
    return docs


def _decoded(
    data: Any,
    source: str,
    runtimes_from: str | os.PathLike[str] | Iterable[str | os.PathLike[str]] | None,
    kubeconfig: str | None,
    context: str | None,
    namespace: str | None,
) -> Any:
    """The whole job (an ``intake.Decoded``) as the apiserver would store it."""
    from kubetrain.api import scheme
    from kubetrain.operator import expansion, intake

    try:
        if isinstance(data, v1beta1.TrainingJob):
            data = scheme.encode(data)
        spec = data.get("spec") if isinstance(data, Mapping) else None
        if not (isinstance(spec, Mapping) and "runtimeRef" in spec):
            decoded = intake.decode(data, weigh=True)
            return attrs.evolve(decoded, job=v1beta1.trainingjob_defaults.on_create(decoded.job))
        if runtimes_from is not None:
            resolve = read_runtimes(runtimes_from)
            expanded = expansion.expand(data, resolve)
        else:
            from kubetrain.client import session

            with session.connect(kubeconfig, namespace=namespace, context=context) as c:
                expanded = expansion.expand(data, c.find_runtime)
        try:
            return intake.decode(expanded.obj, weigh=True)
        except validation.ValidationError as e:
            raise validation.ValidationError(expanded.explain(f) for f in e.errors) from None
    except validation.ValidationError as e:
        raise errors.InvalidInput(f"{source}: {e}") from None


def read_runtimes(paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]]) -> Any:
    """The runtimes of the files (a directory: its ``*.yaml`` and ``*.yml``), as the expansion
    reads them (a ``Resolve``); InvalidInput for a file that holds none."""
    from kubetrain.operator import expansion

    given = [paths] if isinstance(paths, str | os.PathLike) else list(paths)
    docs: list[Any] = []
    for one in given:
        path = pathlib.Path(one)
        files = sorted([*path.glob("*.yaml"), *path.glob("*.yml")]) if path.is_dir() else [path]
        try:
            found = [d.data for f in files for d in documents.load(str(f)) if isinstance(d.data, Mapping)]
        except documents.DocumentError as e:
            raise errors.InvalidInput(str(e)) from None
        if not any(d.get("kind") in expansion.CLASSES for d in found):
            raise errors.InvalidInput(f"--runtimes {one}: no ClusterTrainingRuntime or TrainingRuntime in it")
        docs += found
    return expansion.from_documents(docs)


class _Plain:
    """What a run says, printed plainly: ``replica | line``, the state when it changes, the
    Events, warnings."""

    def __init__(self) -> None:
        self.state: str | None = None

    def __call__(self, said: Any) -> None:
        from kubetrain.operator import local

        if isinstance(said, local.Line):
            print(f"{said.replica} | {said.text}", flush=True)
        elif isinstance(said, local.Changed):
            status = said.job.status
            state = status.state.value if status.state else "Pending"
            if state != self.state:
                print(f"{said.job.metadata.name}: {state}", flush=True)
                self.state = state
        elif isinstance(said, local.Told):
            print(f"{said.event.type} {said.event.reason}: {said.event.message}", flush=True)
        else:
            print(f"warning: {said.text}", flush=True)
