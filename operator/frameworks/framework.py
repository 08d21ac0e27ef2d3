"""The contract every framework plugin fulfils.

A :class:`Framework` is a frozen value: the replica types it accepts (with their
counts), its main container, port and defaults, and three pure functions — the env of
one replica, the files shared by the job (an MPI hostfile, say), and any extra
validation — and, optionally, the data of a per-job Secret (an ssh key pair). The
generic reconciler and :mod:`kubetrain.operator.render` need nothing else to run a
framework. Plugins see the job through a :class:`World`: every replica
with its stable host name and port, in the framework's order.

Where the replicas are reached is the World's alone: in a cluster, each replica's Service name
and the port its spec or the framework gives; on one machine (``kubetrain run --local``), the
address a :class:`Machine` gives each replica (127.0.0.1 and a port of its own). A framework
renders its env from ``host``, ``hostname`` and ``port`` and never spells a host itself, so
the same code renders both; one that must tell which replica serves a rendezvous where every
replica's host is this machine reads :attr:`World.machine`.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import attrs

from kubetrain.api import naming, v1beta1, validation

__all__ = [
    "ATTEMPT",
    "CONFIG_MOUNT",
    "LAST_RESTART_REASON_ENV",
    "RESTARTS_ENV",
    "RESTART_ATTEMPT_ENV",
    "RESUME_STEP_ENV",
    "Address",
    "Framework",
    "Machine",
    "Replica",
    "ReplicaType",
    "World",
    "every",
    "first",
    "gpus_requested",
    "main_container",
    "validate",
]

Env = Mapping[str, str]

# Where every pod finds the job's files (a ConfigMap): ``{CONFIG_MOUNT}/hostfile``, say.
CONFIG_MOUNT = "/etc/kubetrain"
# The attempt of the pod's replica type, which every main container gets (render sets it; where
# the pod restarts in place, its barrier writes it from the pod's label). Render puts it before
# the framework's env, so a framework's value may hold ``ATTEMPT``: the kubelet replaces that
# with the attempt each time the container starts (Kubernetes expands ``$(NAME)`` of a variable
# set earlier).
RESTART_ATTEMPT_ENV = "KUBETRAIN_RESTART_ATTEMPT"
ATTEMPT = f"$({RESTART_ATTEMPT_ENV})"
# With it, the job's restarts so far and the last restart's reason.
RESTARTS_ENV = "KUBETRAIN_RESTARTS"
LAST_RESTART_REASON_ENV = "KUBETRAIN_LAST_RESTART_REASON"
# The step of the last checkpoint the operator saw (spec.checkpoint), empty before any: where the
# attempt resumes from.
RESUME_STEP_ENV = "KUBETRAIN_RESUME_STEP"


@attrs.frozen(kw_only=True)
class ReplicaType:
    """A replica type a framework accepts; matched to the job's keys ignoring case."""

    name: str  # may be an fnmatch pattern: "Worker*" admits every worker set (WorkerGpu, ...)
    min_replicas: int = 0  # in total, over every type the name matches
    max_replicas: int | None = None  # per type
    master: bool = False

    def matches(self, key: str) -> bool:
        return fnmatch.fnmatchcase(key.lower(), self.name.lower())


@attrs.frozen(kw_only=True)
class Replica:
    """One member of the job: its type (as the job spells it), index, names and port."""

    type: str
    index: int
    name: str
    host: str
    subdomain: str  # the headless Service that names the pod
    port: int
    spec: v1beta1.ReplicaSpec
    # What the replica's machine calls itself (a pod's host name is its name); "" for ``name``.
    own_host: str = ""

    @property
    def hostname(self) -> str:
        return self.own_host or self.name


@attrs.frozen(kw_only=True)
class Address:
    host: str
    port: int


@attrs.frozen(kw_only=True)
class Machine:
    """Every replica on one machine, each at its own address: (replica type, index) -> where it is
    reached, which is also what it calls itself."""

    addresses: Mapping[tuple[str, int], Address]


@attrs.frozen(kw_only=True)
class World:
    """Every replica of a job, with the names its pods and Services will have."""

    job: v1beta1.TrainingJob
    name: str
    namespace: str
    replicas: tuple[Replica, ...]
    # Every replica on this one machine (the local runner's); None in a cluster.
    machine: Machine | None = None

    @classmethod
    def of(cls, job: v1beta1.TrainingJob, fw: Framework, machine: Machine | None = None) -> World:
        # Resolved once: object namespaces and DNS names in env must agree.
        name = job.metadata.name or ""
        namespace = job.metadata.namespace or "default"
        per_job = job.spec.network.hosts is v1beta1.HostNames.PER_JOB
        replicas = []
        for key in fw.order(job.spec.replica_specs):
            for i in range(job.spec.replica_specs[key].replicas):
                at = machine.addresses.get((key, i)) if machine is not None else None
                replicas.append(
                    Replica(
                        type=key,
                        index=i,
                        name=naming.replica_name(name, key, i),
                        host=at.host if at else naming.host(name, namespace, key, i, per_job=per_job),
                        subdomain=naming.subdomain(name, key, i, per_job=per_job),
                        port=at.port if at else job.spec.replica_specs[key].port or fw.port,
                        spec=job.spec.replica_specs[key],
                        own_host=at.host if at else "",
                    )
                )
        return cls(job=job, name=name, namespace=namespace, replicas=tuple(replicas), machine=machine)

    def of_type(self, name: str) -> tuple[Replica, ...]:
        return tuple(r for r in self.replicas if r.type.lower() == name.lower())

    def first(self, *names: str) -> Replica | None:
        """Replica 0 of the first of ``names`` that the job has."""
        for name in names:
            found = self.of_type(name)
            if found:
                return found[0]
        return None


def _no_files(_world: World) -> Mapping[str, str]:
    return {}


def _no_rules(_job: v1beta1.TrainingJob) -> Iterable[validation.FieldError]:
    return ()


@attrs.frozen(kw_only=True)
class Framework:
    name: str
    replica_types: tuple[ReplicaType, ...]
    container: str
    port: int
    port_name: str
    restart_policy: v1beta1.RestartPolicy
    restart_scope: v1beta1.RestartScope
    success: Callable[[v1beta1.TrainingJobSpec], v1beta1.SuccessPolicy]
    env: Callable[[World, Replica], Env]
    files: Callable[[World], Mapping[str, str]] = _no_files
    extra_rules: Callable[[v1beta1.TrainingJob], Iterable[validation.FieldError]] = _no_rules
    services: bool = True
    # Replica types created only once every pod of the listed types is ready (an MPI launcher
    # waits for its workers), e.g. {"Launcher": ("Worker",)}; names match ignoring case, and may be
    # fnmatch patterns ("Worker*" for every worker set).
    start_after: Mapping[str, tuple[str, ...]] = attrs.field(factory=dict)
    # The data (file name -> text) of one Secret per job, mounted read-only with mode 0600 at
    # ``secret_mount`` in every pod's main container — an ssh key pair, say. It may be random:
    # the reconciler creates it only when missing and never updates it, so a job keeps its first.
    secret: Callable[[World], Mapping[str, str]] | None = None
    secret_mount: str = "/root/.ssh"
    # The restart scope of one job, where the job's options change it (elastic PyTorch restarts
    # a pod, not the world); ``restart_scope`` when not given.
    scope: Callable[[v1beta1.TrainingJobSpec], v1beta1.RestartScope] | None = None
    # The replica type (name or fnmatch pattern) whose index 0 runs the first rank, whose progress
    # stands for the job's (spec.progress); the type that decides success when not given. An MPI
    # launcher runs no rank: its first worker does.
    progress_from: str | None = None
    # The replica type whose main process starts every rank over ssh and stops them as it ends
    # (MPI's launcher and its ``mpirun``). When it fails and the job restarts in place, it restarts
    # alone: the other pods run only sshd, which serves the next world as it served this one.
    rank_launcher: str | None = None

    def restart_scope_of(self, spec: v1beta1.TrainingJobSpec) -> v1beta1.RestartScope:
        return self.scope(spec) if self.scope is not None else self.restart_scope

    def progress_type(self, spec: v1beta1.TrainingJobSpec) -> str:
        """The job's replica type whose index 0 is read for its progress: ``progress_from``'s,
        else the first the framework's success rule names."""
        wanted = self.progress_from
        found = next(
            (k for k in spec.replica_specs if wanted and fnmatch.fnmatchcase(k.lower(), wanted.lower())), None
        )
        if found is not None:
            return found
        success = self.success(spec)
        return success.targets[0].replica_type if success.targets else ""

    def starts_late(self, key: str) -> bool:
        """Whether pods of replica type ``key`` are created only once others are ready."""
        return any(fnmatch.fnmatchcase(key.lower(), name.lower()) for name in self.start_after)

    def type_of(self, key: str) -> ReplicaType | None:
        return next((t for t in self.replica_types if t.matches(key)), None)

    def order(self, keys: Iterable[str]) -> list[str]:
        """The job's replica types in this framework's order (unknown ones last)."""

        def rank(key: str) -> int:
            rt = self.type_of(key)
            return self.replica_types.index(rt) if rt is not None else len(self.replica_types)

        return sorted(keys, key=lambda k: (rank(k), k))


def every(replica_type: str) -> Callable[[v1beta1.TrainingJobSpec], v1beta1.SuccessPolicy]:
    """A success rule: every replica of ``replica_type`` (as the job spells it) succeeds."""
    return lambda spec: v1beta1.SuccessPolicy(
        targets=(v1beta1.SuccessTarget(replica_type=_spelled(spec, replica_type)),)
    )


def first(replica_type: str) -> Callable[[v1beta1.TrainingJobSpec], v1beta1.SuccessPolicy]:
    """A success rule: replica 0 of ``replica_type`` succeeds."""
    return lambda spec: v1beta1.SuccessPolicy(
        targets=(v1beta1.SuccessTarget(replica_type=_spelled(spec, replica_type), index=0),)
    )


def _spelled(spec: v1beta1.TrainingJobSpec, replica_type: str) -> str:
    return next((k for k in spec.replica_specs if k.lower() == replica_type.lower()), replica_type)


def main_container(template: Mapping[str, Any], name: str) -> dict[str, Any] | None:
    """The container named ``name``, or the only container; ``None`` if ambiguous."""
    containers: list[dict[str, Any]] = template["spec"]["containers"]
    named = [c for c in containers if c.get("name") == name]
    if named:
        return named[0]
    return containers[0] if len(containers) == 1 else None


def gpus_requested(container: Mapping[str, Any]) -> int:
    """GPUs a container asks for, from any ``*/gpu`` resource limit."""
    limits = (container.get("resources") or {}).get("limits") or {}
    total = 0
    for resource, amount in limits.items():
        if str(resource).endswith("/gpu"):
            try:
                total += int(str(amount))
            except ValueError:
                continue
    return total


def validate(framework: Framework, job: v1beta1.TrainingJob) -> list[validation.FieldError]:
    """Every reason ``framework`` cannot run ``job``, with paths in the job."""
    return [*_replica_errors(framework, job), *framework.extra_rules(job)]


def _replica_errors(fw: Framework, job: v1beta1.TrainingJob) -> Iterator[validation.FieldError]:
    specs = job.spec.replica_specs
    allowed = ", ".join(t.name for t in fw.replica_types)
    for key, spec in specs.items():
        path = ("spec", "replicaSpecs", key)
        rt = fw.type_of(key)
        if fw.replica_types and rt is None:
            yield validation.FieldError(
                path=path, message=f"{fw.name} has no replica type {key} (allowed: {allowed})"
            )
            continue
        if rt is not None and rt.max_replicas is not None and spec.replicas > rt.max_replicas:
            yield validation.FieldError(
                path=(*path, "replicas"), message=f"{fw.name} allows at most {rt.max_replicas} {rt.name}"
            )
        if main_container(spec.template, fw.container) is None:
            yield validation.FieldError(
                path=(*path, "template", "spec", "containers"),
                message=f"name one container {fw.container!r}, or keep a single container",
            )
    for rt in fw.replica_types:
        if rt.min_replicas and sum(s.replicas for k, s in specs.items() if rt.matches(k)) < rt.min_replicas:
            yield validation.FieldError(
                path=("spec", "replicaSpecs"), message=f"{fw.name} needs at least {rt.min_replicas} {rt.name}"
            )
