"""What a step reads and what it decides: frozen values, nothing that talks to a cluster.

:class:`Input` is one look at a valid job — its spec, its status, its pods and Services as the
caches show them, what the apiserver refused at the last try (as values: who holds a name, a
kind not served), what this process made that the caches do not show yet, the gang groups the
job has, and the time; :func:`kubetrain.operator.observe.observe` makes it. :class:`Invalid` is
one look at a job that cannot be read or run. :class:`Decision` is everything the reconciler
then does (:mod:`kubetrain.operator.execute` carries it out, and nothing else talks to the
apiserver): the status to store, pods to create (in which batches) and delete, the gang groups
to create, delete or look up, Services to delete, pods a queue may release, the Workload to
create (with its priority), finish (with the job's outcome) or requeue, the TensorBoard to
create, Events to send, whether to delete the job, and when to look again.
"""

from __future__ import annotations

import datetime
import fnmatch
from collections.abc import Mapping

import attrs

from kubetrain.api import observed, v1beta1, validation
from kubetrain.operator.frameworks import framework as fw_contract
from kubetrain.operator.policies import progress as progress_policy
from kubetrain.operator.scheduling import workload as workload_

__all__ = ["Decision", "Defaults", "Delete", "Event", "Finished", "Input", "Invalid", "Move", "matches"]


@attrs.frozen(kw_only=True)
class Defaults:
    """What the framework decides when the job does not say."""

    restart_policy: v1beta1.RestartPolicy
    restart_scope: v1beta1.RestartScope
    success: v1beta1.SuccessPolicy
    containers: Mapping[str, str]  # replica type -> name of its main container
    # replica type -> the types whose pods must all be ready before it is created
    start_after: Mapping[str, tuple[str, ...]] = attrs.field(factory=dict)
    # The replica type whose index 0 is read for the job's progress.
    progress_from: str = ""
    # The replica type whose main process starts every rank and stops them as it ends (MPI's
    # launcher): restarted in place, it restarts alone (fw_contract.Framework.rank_launcher).
    rank_launcher: str = ""

    @classmethod
    def of(cls, fw: fw_contract.Framework, spec: v1beta1.TrainingJobSpec) -> Defaults:
        containers = {}
        for key, rs in spec.replica_specs.items():
            main = fw_contract.main_container(rs.template, fw.container)
            containers[key] = main["name"] if main is not None else fw.container
        return cls(
            progress_from=fw.progress_type(spec),
            rank_launcher=next((k for k in spec.replica_specs if matches(k, (fw.rank_launcher or "",))), ""),
            restart_policy=fw.restart_policy,
            restart_scope=fw.restart_scope_of(spec),
            success=fw.success(spec),
            containers=containers,
            start_after={
                key: tuple(k for k in spec.replica_specs if matches(k, after))
                for key in spec.replica_specs
                for name, after in fw.start_after.items()
                if matches(key, (name,))
            },
        )


def matches(replica_type: str, patterns: tuple[str, ...]) -> bool:
    """Whether a replica type matches any pattern (``fnmatch``, ignoring case: ``Worker*``)."""
    return any(fnmatch.fnmatchcase(replica_type.lower(), p.lower()) for p in patterns)


@attrs.frozen(kw_only=True)
class Input:
    name: str
    namespace: str = "default"
    generation: int | None = None
    spec: v1beta1.TrainingJobSpec
    status: v1beta1.TrainingJobStatus
    pods: tuple[observed.Pod, ...]
    defaults: Defaults
    now: datetime.datetime
    # What the apiserver refused at this process's last try; None before its first.
    refused: tuple[v1beta1.Refusal, ...] | None = None
    # The gang waits in a Kueue queue as one group: a pod deleted for a restart is held by Kueue
    # until a replacement joins its group, and a replacement cannot take its name before it is
    # gone — so every restart that replaces pods restarts the whole gang, as a new group.
    queued: bool = False
    # The job waits in a Kueue queue as its own Workload (scheduling.workload): it runs only while
    # its Workload, as the caches show it (None: not seen), is admitted.
    admission: bool = False
    workload: workload_.Seen | None = None
    # The Workload MultiKueue made for the job on this worker cluster, which it adopts (its name).
    prebuilt: str | None = None
    # The TensorBoard's Service exists: it is created after the Deployment, so both do.
    tensorboard: bool = False
    # The job's own Services, less those this process deleted and the caches still show.
    services: tuple[observed.Service, ...] = ()
    # Pods this process created that the caches do not show yet: not to be created again.
    made: frozenset[str] = frozenset()
    # When this process last wrote the job's status (policies/pacing); None after a restart.
    last_write: datetime.datetime | None = None
    # Nodes the operator is told are unhealthy now (policies/avoid): new pods keep off them.
    unhealthy: frozenset[str] = frozenset()
    # Nodes a notice says will go (a spot interruption, maintenance): a job checkpoints, then moves off.
    noticed: frozenset[str] = frozenset()
    # Some node declares that its kubelet restarts pods in place (policies/inplace).
    in_place: bool = False
    # The first rank's progress read since the job's last look, if any (policies/progress).
    progress: progress_policy.Reading | None = None
    # The gang scheduler has group objects (scheduling.backend); the job's groups by name, as this
    # process knows them (None: not listed since it started).
    gangs: bool = False
    groups: frozenset[str] | None = None
    # The refusals of the last try not yet told as FailedCreate Events.
    untold: tuple[v1beta1.Refusal, ...] = ()
    # The value of the job's PriorityClass (the Workload route orders by it); None: none, or unread.
    priority: int | None = None
    # When the job was created (metadata.creationTimestamp): its goodput counts from then.
    created: datetime.datetime | None = None

    @property
    def refusals(self) -> tuple[v1beta1.Refusal, ...]:
        """What the apiserver refused at the last try: as this process saw it, or, before its
        first try, as the status keeps it (the backoff and the grace outlive the operator)."""
        if self.refused is not None:
            return self.refused
        kept = self.status.last_refusal
        return () if kept is None else (kept,)


@attrs.frozen(kw_only=True)
class Invalid:
    """A job whose spec cannot be read, or cannot run: it fails once, saying why."""

    name: str
    status: v1beta1.TrainingJobStatus  # as stored, as far as it can be read
    errors: tuple[validation.FieldError, ...]
    now: datetime.datetime
    generation: int | None = None


@attrs.frozen(kw_only=True)
class Delete:
    pod: str
    uid: str
    force: bool = False


@attrs.frozen(kw_only=True)
class Move:
    """A pod moved to a new attempt in place (relabelled: its containers restart where it is),
    or whose barrier is opened for that attempt."""

    pod: str
    uid: str
    attempt: int


@attrs.frozen(kw_only=True)
class Event:
    type: str  # Normal or Warning
    reason: str
    message: str


@attrs.frozen(kw_only=True)
class Finished:
    """The job's outcome, as its finished Workload tells Kueue."""

    succeeded: bool
    message: str


@attrs.frozen(kw_only=True)
class Decision:
    status: v1beta1.TrainingJobStatus
    create: tuple[tuple[str, int], ...] = ()  # (replica type, index)
    delete: tuple[Delete, ...] = ()
    delete_job: bool = False
    events: tuple[Event, ...] = ()
    requeue_after: float | None = None
    tensorboard: bool = False  # create the TensorBoard's Deployment and Service
    # Services of replicas the spec no longer has (a scale-down), by name.
    delete_services: tuple[str, ...] = ()
    # Pods in a Kueue queue the job is done with, by name: marked never to be retried in their
    # group, so that Kueue finishes the group's Workload and releases its quota.
    release: tuple[str, ...] = ()
    # Replica types whose pods to create join an attempt already placed (a replacement, a
    # scale-up, a late launcher): they are a gang of their own, not the attempt's, whose other
    # members may have ended (scheduling.gang.of_joiners).
    joining: tuple[str, ...] = ()
    # The nodes the pods to create keep off (policies/avoid), by name.
    keep_off: tuple[str, ...] = ()
    # Restarts in place (policies/inplace): the pods to move to a new attempt; the moving pods
    # whose barrier to open for their attempt; whether the pods to create carry the agent and
    # barrier that let them restart in place, and whether they are made closed (pods still
    # moving are not opened yet).
    move: tuple[Move, ...] = ()
    open: tuple[Move, ...] = ()
    in_place: bool = False
    closed: bool = False
    # What to do to the job's Workload (the Workload route), and what its admission asks of the
    # pods to create, by pod set (replica type in lower case).
    workload: workload_.Act | None = None
    assigned: Mapping[str, workload_.Assignment] = attrs.field(factory=dict)
    # With CREATE: the PriorityClass value the Workload carries; with FINISH: the job's outcome.
    priority: int | None = None
    finished: Finished | None = None
    # The creates in the order tried, by batch size (policies/creation): the job's shared objects
    # (ConfigMap, Secret, Services) first, then the gang groups, then the pods batch after batch;
    # a refusal stops the rest until the next pass.
    batches: tuple[int, ...] = ()
    # Gang groups to create (the pods made now join them), and of attempts no pod joins any more,
    # to delete; look the job's groups up first (this process has not listed them since it began).
    groups: tuple[str, ...] = ()
    delete_groups: tuple[str, ...] = ()
    look_up_groups: bool = False
    # A checkpoint asked of the job now (policies/checkpoint): its number, and the pods whose
    # CHECKPOINT_REQUEST annotation says it.
    ask: tuple[int, tuple[str, ...]] | None = None

    @property
    def acts(self) -> bool:
        """Whether it does anything beyond storing a status."""
        return bool(
            self.create
            or self.delete
            or self.delete_job
            or self.events
            or self.tensorboard
            or self.delete_services
            or self.release
            or self.move
            or self.open
            or self.workload is not None
            or self.groups
            or self.delete_groups
            or self.look_up_groups
            or self.ask is not None
        )
