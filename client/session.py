"""The :class:`Client` a person holds: every verb, synchronous, on one connection.

Each method runs the matching coroutine of a verb module on the client's own event loop
(:mod:`~kubetrain.client.loop`), so it works the same in a script, a pipeline step and a
notebook that already runs a loop. ``namespace`` defaults, per call, to the client's.
"""

from __future__ import annotations

import builtins
import contextlib
import pathlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from kubetrain.api import v1beta1
from kubetrain.client import connection, errors, events, jobs, logs, loop, pods, tensorboard, waiting
from kubetrain.client import runtimes as _runtimes  # a method is called runtimes

__all__ = ["Client", "connect", "submit"]

Job = v1beta1.TrainingJob
RuntimeKind = v1beta1.RuntimeKind


def connect(
    kubeconfig: str | None = None, *, namespace: str | None = None, context: str | None = None
) -> Client:
    """A client for the cluster of ``kubeconfig`` (else KUBECONFIG, ~/.kube/config, in-cluster)."""
    runner = loop.Loop()
    try:
        conn = runner.run(connection.connect(kubeconfig, namespace, context))
    except BaseException:
        runner.close()
        raise
    return Client(conn, runner)


def submit(
    runtime: str,
    *,
    image: str | None = None,
    command: Sequence[str] | None = None,
    args: Sequence[str] | None = None,
    nodes: int | None = None,
    env: Mapping[str, str] | Iterable[tuple[str, str]] | None = None,
    procs_per_node: int | str | None = None,
    gpus_per_node: int | None = None,
    resources_per_node: Mapping[str, Mapping[str, Any]] | None = None,
    kind: RuntimeKind | str = RuntimeKind.CLUSTER,
    name: str | None = None,
    namespace: str | None = None,
    labels: Mapping[str, str] | None = None,
    kubeconfig: str | None = None,
    context: str | None = None,
) -> Job:
    """Create a job made from ``runtime`` (:meth:`Client.submit`) on a connection of its own."""
    with connect(kubeconfig, namespace=namespace, context=context) as c:
        return c.submit(
            runtime,
            image=image,
            command=command,
            args=args,
            nodes=nodes,
            env=env,
            procs_per_node=procs_per_node,
            gpus_per_node=gpus_per_node,
            resources_per_node=resources_per_node,
            kind=kind,
            name=name,
            namespace=namespace,
            labels=labels,
        )


class Client:
    def __init__(self, conn: connection.Connection, runner: loop.Loop) -> None:
        self._conn, self._loop = conn, runner

    @property
    def namespace(self) -> str:
        return self._conn.namespace

    def create(self, job: Job | Mapping[str, Any], *, namespace: str | None = None) -> Job:
        """Create ``job`` (either API version, typed or a dict); the stored job, as v1beta1."""
        return self._loop.run(jobs.create(self._conn, job, namespace))

    def create_from_file(self, path: str | pathlib.Path, *, namespace: str | None = None) -> list[Job]:
        """Create every TrainingJob in a YAML file (``-``: standard input)."""
        return self._loop.run(jobs.create_from_file(self._conn, str(path), namespace))

    def submit(
        self,
        runtime: str,
        *,
        image: str | None = None,
        command: Sequence[str] | None = None,
        args: Sequence[str] | None = None,
        nodes: int | None = None,
        env: Mapping[str, str] | Iterable[tuple[str, str]] | None = None,
        procs_per_node: int | str | None = None,
        gpus_per_node: int | None = None,
        resources_per_node: Mapping[str, Mapping[str, Any]] | None = None,
        kind: RuntimeKind | str = RuntimeKind.CLUSTER,
        name: str | None = None,
        namespace: str | None = None,
        labels: Mapping[str, str] | None = None,
    ) -> Job:
        """Create the short job made from ``runtime`` (:func:`~kubetrain.client.runtimes.short_job`:
        ``nodes`` is ``trainer.numNodes``, a name is generated unless given); the job as stored,
        expanded from its runtime by admission. A runtime that is missing, or a trainer that does
        not fit it, is :class:`~kubetrain.client.errors.Rejected` with admission's words."""
        body = _runtimes.short_job(
            runtime,
            kind=kind,
            image=image,
            command=command,
            args=args,
            nodes=nodes,
            env=env,
            procs_per_node=procs_per_node,
            gpus_per_node=gpus_per_node,
            resources_per_node=resources_per_node,
            name=name,
            namespace=namespace,
            labels=labels,
        )
        return self.create(body, namespace=namespace)

    def runtimes(self, *, namespace: str | None = None) -> builtins.list[_runtimes.Runtime]:
        """Every ClusterTrainingRuntime, then the namespace's TrainingRuntimes, typed."""
        return [_runtimes.decode(o) for o in self.runtime_objects(namespace=namespace)]

    def runtime_objects(self, *, namespace: str | None = None) -> builtins.list[dict[str, Any]]:
        """The same as :meth:`runtimes`, as the apiserver stores them (what the expansion reads)."""
        return self._loop.run(_runtimes.list_objects(self._conn, namespace))

    def find_runtime(
        self, kind: RuntimeKind | str, name: str, namespace: str | None = None
    ) -> dict[str, Any] | None:
        """One runtime as stored, or None if there is none of that name; a TrainingRuntime is
        the namespace's (default: the client's). Shaped as the expansion's ``Resolve``."""
        return self._loop.run(_runtimes.find(self._conn, RuntimeKind(kind), name, namespace))

    def runtime(
        self, name: str, *, kind: RuntimeKind | str = RuntimeKind.CLUSTER, namespace: str | None = None
    ) -> _runtimes.Runtime:
        """One runtime, typed; :class:`~kubetrain.client.errors.NotFound` if there is none."""
        found = self.find_runtime(kind, name, namespace)
        if found is None:
            ns = None if RuntimeKind(kind) is RuntimeKind.CLUSTER else namespace or self.namespace
            raise errors.NotFound(RuntimeKind(kind).value, name, ns)
        return _runtimes.decode(found)

    def get(self, name: str, *, namespace: str | None = None) -> Job:
        return self._loop.run(jobs.get(self._conn, name, namespace))

    def list(
        self, *, namespace: str | None = None, selector: str | None = None, all_namespaces: bool = False
    ) -> builtins.list[Job]:
        return self._loop.run(jobs.list_jobs(self._conn, namespace, selector, all_namespaces))

    def wait(
        self,
        name: str,
        until: str = "Succeeded",
        *,
        timeout: float | None = 600,
        namespace: str | None = None,
    ) -> Job:
        """The job once ``until`` (a condition type) is True; see :mod:`~kubetrain.client.waiting`."""
        return self._loop.run(waiting.wait(self._conn, name, until, timeout, namespace))

    def logs(
        self,
        name: str,
        *,
        replica: str | None = None,
        follow: bool = False,
        attempt: int | None = None,
        namespace: str | None = None,
    ) -> Iterator[logs.LogLine]:
        """Log lines of the job's replicas (``Worker`` or ``Worker/1``); see :mod:`~kubetrain.client.logs`."""
        selection = logs.Selection.parse(replica, attempt)
        return self._loop.iterate(logs.lines(self._conn, name, namespace, selection, follow))

    def events(self, name: str, *, namespace: str | None = None) -> builtins.list[events.Event]:
        job = self.get(name, namespace=namespace)
        return self._loop.run(events.list_events(self._conn, job))

    def pods(self, name: str, *, namespace: str | None = None) -> builtins.list[pods.PodInfo]:
        job = self.get(name, namespace=namespace)
        return [pods.info(p, job) for p in self._loop.run(pods.list_pods(self._conn, job))]

    def delete(
        self, name: str, *, wait: bool = False, timeout: float = 120, namespace: str | None = None
    ) -> None:
        self._loop.run(jobs.delete(self._conn, name, namespace, wait, timeout))

    @contextlib.contextmanager
    def tensorboard(
        self, name: str, *, local_port: int = 0, timeout: float = 120, namespace: str | None = None
    ) -> Iterator[str]:
        """A local URL to the job's TensorBoard while the block runs."""
        forward = tensorboard.forward(self._conn, name, namespace, local_port, timeout)
        url = self._loop.run(forward.__aenter__())
        try:
            yield url
        finally:
            self._loop.run(forward.__aexit__(None, None, None))

    def close(self) -> None:
        try:
            self._loop.run(self._conn.close())
        finally:
            self._loop.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()
