"""The v1beta1 TrainingJob: its spec and the rules that hold within it (its replicas are in
:mod:`.replica_types`, its status in :mod:`.status_types`).

Names: every replica becomes a pod called ``{job}-{lower(type)}-{index}``, with a headless
Service of the same name (``network.hostNames: PerReplica``, Kubeflow v1's names) or one
headless Service for the whole job named after it (``PerJob``, JobSet's). Replica types
therefore hold only letters and digits (no hyphen, so a generated name maps back to exactly
one job, type and index), differ in more than letter case, and, together with the job's
name, keep every generated name a DNS-1035 label of at most 63 characters.
"""

import enum
import re
from collections.abc import Iterator, Mapping
from typing import Annotated, Any, ClassVar

import attrs

from kubetrain.api import meta, naming, schema, validation
from kubetrain.api.v1beta1 import (
    checkpoint_types,
    framework_types,
    groupversion_info,
    policy_types,
    progress_types,
    replica_types,
    status_types,
    tensorboard_types,
    trainer_types,
)

DNS1035_LABEL = r"^[a-z]([-a-z0-9]*[a-z0-9])?$"
MAX_NAME_LENGTH = 63


class CleanPodPolicy(enum.StrEnum):
    ALL = "All"
    RUNNING = "Running"
    NONE = "None"


@attrs.frozen(kw_only=True, field_transformer=schema.validated)
class SchedulingPolicy:
    """Gang scheduling and queues: how many pods start together, in which queue, at which
    priority. The operator's --gang-scheduler picks what enforces it (docs/scheduling.md)."""

    min_available: Annotated[
        int | None,
        schema.Field(
            minimum=1,
            doc="Pods the scheduler must place together before any of them is bound (the gang's "
            "minCount); default: every replica, less those the framework starts later (MPI's launcher).",
        ),
    ] = None
    queue: Annotated[
        str | None,
        schema.Field(
            max_length=253,
            doc="The Kueue LocalQueue the job waits in: suspended, as its own Workload, until Kueue admits it "
            "(with the operator's --kueue=pods: its pods gated as Kueue pod groups; with "
            "--gang-scheduler=volcano: the Volcano queue).",
        ),
    ] = None
    priority_class: Annotated[
        str | None,
        schema.Field(
            max_length=253,
            doc="PriorityClass of every pod and of the gang: a higher one preempts lower jobs, "
            "whose restarts are charged to the infrastructure budget.",
        ),
    ] = None
    schedule_timeout_seconds: Annotated[
        int | None,
        schema.Field(
            minimum=1,
            doc="Fail the job (reason ScheduleTimeout) once its pods have been unschedulable this long; "
            "time spent queued does not count.",
        ),
    ] = None


# A controller's name, as batch/v1 Job's managedBy spells it: a domain-prefixed path.
MANAGER_PATTERN = r"^[a-z0-9.-]+/[A-Za-z0-9._-]+$"
MANAGER_MAX_LENGTH = 63


@attrs.frozen(kw_only=True, field_transformer=schema.validated)
class RunPolicy:
    """Lifetime of the job: cleanup, deadlines, budgets, suspension and ownership."""

    clean_pod_policy: Annotated[
        CleanPodPolicy | None,
        schema.Field(doc="Pods deleted when the job finishes: All, Running (default) or None."),
    ] = None
    ttl_seconds_after_finished: Annotated[
        int | None, schema.Field(minimum=0, doc="Delete the finished job after this long.")
    ] = None
    active_deadline_seconds: Annotated[
        int | None, schema.Field(minimum=1, doc="Fail the job once it has been active this long.")
    ] = None
    backoff_limit: Annotated[
        int | None,
        schema.Field(minimum=0, doc="Restarts caused by user code (failurePolicy.budgets.userCode.limit)."),
    ] = None
    suspend: Annotated[bool, schema.Field(doc="Delete the pods and keep the job; resuming is free.")] = False
    managed_by: Annotated[
        str | None,
        schema.Field(
            max_length=MANAGER_MAX_LENGTH,
            pattern=MANAGER_PATTERN,
            doc="Deprecated: spec.managedBy, which MultiKueue reads. Still honoured; if both are set they must "
            "be equal.",
        ),
    ] = None
    scheduling_policy: SchedulingPolicy | None = None


class HostNames(enum.StrEnum):
    """How replicas are named in DNS (see :class:`NetworkSpec`)."""

    PER_REPLICA = "PerReplica"
    PER_JOB = "PerJob"


@attrs.frozen(kw_only=True, field_transformer=schema.validated)
class NetworkSpec:
    """How the replicas find each other."""

    host_names: Annotated[
        HostNames | None,
        schema.Field(
            doc="PerJob: one headless Service for the job, hosts {job}-{type}-{index}.{job}.{namespace}.svc as in "
            "JobSet: lighter on the apiserver, DNS and kube-scheduler. PerReplica: a headless Service per "
            "replica, hosts {job}-{type}-{index}.{namespace}.svc as in Kubeflow v1 (an elastic job needs it). "
            "Unset, a job created as v1beta1 is given PerJob at admission (config/defaults), and a job stored "
            "without it (created before that, or as v1alpha1) is PerReplica. Immutable."
        ),
    ] = None

    @property
    def hosts(self) -> HostNames:
        """The host names the job's pods get: a job stored without the field keeps Kubeflow's."""
        return self.host_names or HostNames.PER_REPLICA


_UNIQUE_TYPES = "types must differ in more than letter case"


ELASTIC_CEL = "(has(self.framework.pytorch) && has(self.framework.pytorch.elastic))"
_WORKERS_CEL = "(has(self.replicaSpecs['Worker'].replicas) ? self.replicaSpecs['Worker'].replicas : 1)"
_REPLICAS_CEL = "(has({s}.replicaSpecs[k].replicas) ? {s}.replicaSpecs[k].replicas : 1)"
_SUSPENDED_CEL = "(has({s}.runPolicy) && has({s}.runPolicy.suspend) && {s}.runPolicy.suspend)"
_ELASTIC_BOUNDS = (
    "an elastic job's Worker replicas must lie between framework.pytorch.elastic.minReplicas and maxReplicas"
)
_MANAGER_CEL = (
    "(has({s}.managedBy) ? {s}.managedBy"
    " : has({s}.runPolicy) && has({s}.runPolicy.managedBy) ? {s}.runPolicy.managedBy : '')"
)
MANAGERS_DIFFER = "set managedBy; runPolicy.managedBy (deprecated), if also set, must be the same"
_HOST_NAMES_CEL = "(has({s}.network) && has({s}.network.hostNames) ? {s}.network.hostNames : 'PerReplica')"
# torchrun serves the rendezvous store on the node whose own name is the endpoint's host: the short
# name {job}-worker-0, which other pods resolve only through its own Service.
ELASTIC_HOST_NAMES = "an elastic job (framework.pytorch.elastic) needs network.hostNames PerReplica"
# A world of fixed size cannot take a new member: its ranks were told the size when they started.
CHECKPOINT_NEEDS_PROGRESS = "checkpoint needs progress: the answer comes on the progress line"
TRAINER_NEEDS_RUNTIME = "trainer is given only with runtimeRef: it fills the runtime's replica types"
FIXED_COUNTS = (
    "replicas change only while the job is suspended, or in an elastic job (framework.pytorch.elastic)"
)


@attrs.frozen(kw_only=True, field_transformer=schema.validated)
class TrainingJobSpec:
    """The desired training job."""

    framework: framework_types.FrameworkSpec
    runtime_id: Annotated[
        str | None,
        schema.Field(
            pattern=r"^[a-z0-9]{1,16}$",
            doc="The start of Caffe2's RUN_ID, {runtimeId}-{uid}-{attempt}: one id per run of the job.",
        ),
    ] = None
    managed_by: Annotated[
        str | None,
        schema.Field(
            max_length=MANAGER_MAX_LENGTH,
            pattern=MANAGER_PATTERN,
            doc="Another controller that owns this job; kubetrain then leaves it alone. "
            "kueue.x-k8s.io/multikueue: MultiKueue runs it on a worker cluster and mirrors its status here. "
            "Immutable.",
        ),
    ] = None
    replica_specs: Annotated[
        dict[str, replica_types.ReplicaSpec],
        schema.Field(
            min_properties=1,
            max_properties=replica_types.MAX_REPLICA_TYPES,
            keys=schema.Field(pattern=replica_types.REPLICA_TYPE),
            doc="Replica type (e.g. Master, Worker, PS) to its replicas.",
        ),
    ]
    run_policy: RunPolicy = attrs.field(factory=RunPolicy)
    success_policy: policy_types.SuccessPolicy | None = None
    failure_policy: policy_types.FailurePolicy = attrs.field(factory=policy_types.FailurePolicy)
    tensorboard: tensorboard_types.TensorBoardSpec | None = None
    network: NetworkSpec = attrs.field(factory=NetworkSpec)
    progress: progress_types.ProgressSpec | None = None
    checkpoint: Annotated[
        checkpoint_types.CheckpointSpec | None,
        schema.Field(
            doc="Checkpoint before every stop the operator sees coming (eviction, preemption, suspend, "
            "scale-down, the deadline, a node notice); needs progress, whose line carries the answer."
        ),
    ] = None
    runtime_ref: Annotated[
        trainer_types.RuntimeRef | None,
        schema.Field(
            doc="The runtime the job is made from: at creation its spec is filled in from the runtime's, "
            "field by field, and then from trainer (docs/api.md). Immutable."
        ),
    ] = None
    trainer: Annotated[
        trainer_types.Trainer | None,
        schema.Field(
            doc="The trainer's part of a job made from a runtime: image, command, nodes. Immutable."
        ),
    ] = None

    cel_rules: ClassVar[tuple[schema.Rule, ...]] = (
        schema.Rule(
            cel="!has(self.checkpoint) || has(self.progress)",
            message=CHECKPOINT_NEEDS_PROGRESS,
            field_path=".checkpoint",
        ),
        schema.Rule(
            cel="!has(self.trainer) || has(self.runtimeRef)",
            message=TRAINER_NEEDS_RUNTIME,
            field_path=".trainer",
        ),
        schema.Rule(
            cel="self.replicaSpecs.all(a, self.replicaSpecs.all(b, a == b || a.lowerAscii() != b.lowerAscii()))",
            message=f"replicaSpecs: {_UNIQUE_TYPES}",
            field_path=".replicaSpecs",
        ),
        schema.Rule(
            cel="!has(self.successPolicy) || self.successPolicy.targets.all(t, t.replicaType in self.replicaSpecs"
            " && (!has(t.index) || t.index < (has(self.replicaSpecs[t.replicaType].replicas)"
            " ? self.replicaSpecs[t.replicaType].replicas : 1)))",
            message="successPolicy.targets must name replica types of this job, and indexes below their replicas",
            field_path=".successPolicy.targets",
        ),
        schema.Rule(
            cel="!has(self.failurePolicy) || !has(self.failurePolicy.rules) || self.failurePolicy.rules.all(r,"
            " !has(r.replicaTypes) || r.replicaTypes.all(t, t in self.replicaSpecs))",
            message="failurePolicy.rules[].replicaTypes must name replica types of this job",
            field_path=".failurePolicy.rules",
        ),
        schema.Rule(
            cel=f"!{ELASTIC_CEL} || !('Worker' in self.replicaSpecs) || ({_WORKERS_CEL}"
            f" >= self.framework.pytorch.elastic.minReplicas && {_WORKERS_CEL}"
            " <= self.framework.pytorch.elastic.maxReplicas)",
            message=_ELASTIC_BOUNDS,
            field_path=".replicaSpecs",
        ),
        schema.Rule(
            cel=f"{ELASTIC_CEL} || {_SUSPENDED_CEL.format(s='self')} || {_SUSPENDED_CEL.format(s='oldSelf')}"
            " || self.replicaSpecs.all(k, !(k in oldSelf.replicaSpecs)"
            f" || {_REPLICAS_CEL.format(s='self')} == {_REPLICAS_CEL.format(s='oldSelf')})",
            message=FIXED_COUNTS,
            field_path=".replicaSpecs",
        ),
        schema.Rule(
            cel=f"!{ELASTIC_CEL} || {_HOST_NAMES_CEL.format(s='self')} == 'PerReplica'",
            message=ELASTIC_HOST_NAMES,
            field_path=".network.hostNames",
        ),
        schema.Rule(
            cel=f"{_HOST_NAMES_CEL.format(s='self')} == {_HOST_NAMES_CEL.format(s='oldSelf')}",
            message="field is immutable",
            field_path=".network.hostNames",
        ),
        schema.Rule(
            cel="!(has(self.runPolicy) && has(self.runPolicy.backoffLimit) && has(self.failurePolicy)"
            " && has(self.failurePolicy.budgets) && has(self.failurePolicy.budgets.userCode)"
            " && has(self.failurePolicy.budgets.userCode.limit))",
            message="set runPolicy.backoffLimit or failurePolicy.budgets.userCode.limit, not both",
            field_path=".runPolicy.backoffLimit",
        ),
        schema.Rule(
            cel="!has(self.managedBy) || !has(self.runPolicy) || !has(self.runPolicy.managedBy)"
            " || self.managedBy == self.runPolicy.managedBy",
            message=MANAGERS_DIFFER,
            field_path=".runPolicy.managedBy",
        ),
        schema.Rule(
            cel=f"{_MANAGER_CEL.format(s='self')} == {_MANAGER_CEL.format(s='oldSelf')}",
            message="field is immutable",
            field_path=".managedBy",
        ),
    )

    @property
    def manager(self) -> str | None:
        """The controller that owns the job, if not kubetrain: ``managedBy``, or the deprecated
        ``runPolicy.managedBy``."""
        return self.managed_by or self.run_policy.managed_by

    @validation.cross_field
    def __attrs_post_init__(self) -> None:
        errors = list(self._cross_field_errors())
        if errors:
            raise validation.ValidationError(errors)

    def _cross_field_errors(self) -> Iterator[validation.FieldError]:
        if self.trainer is not None and self.runtime_ref is None:
            yield validation.FieldError(path=("trainer",), message=TRAINER_NEEDS_RUNTIME)
        if self.checkpoint is not None and self.progress is None:
            yield validation.FieldError(path=("checkpoint",), message=CHECKPOINT_NEEDS_PROGRESS)
        seen: dict[str, str] = {}
        for t in self.replica_specs:
            other = seen.setdefault(t.lower(), t)
            if other != t:
                yield validation.FieldError(
                    path=("replicaSpecs", t), message=f"{_UNIQUE_TYPES} ({other} and {t})"
                )
        if self.success_policy is not None:
            for i, target in enumerate(self.success_policy.targets):
                spec = self.replica_specs.get(target.replica_type)
                if spec is None or (target.index is not None and target.index >= spec.replicas):
                    yield validation.FieldError(
                        path=("successPolicy", "targets", i),
                        message=f"no replica {target.replica_type}"
                        + ("" if target.index is None else f"[{target.index}]")
                        + " in this job",
                    )
        for i, rule in enumerate(self.failure_policy.rules):
            for t in rule.replica_types:
                if t not in self.replica_specs:
                    yield validation.FieldError(
                        path=("failurePolicy", "rules", i, "replicaTypes"),
                        message=f"no replica type {t} in this job",
                    )
        if (
            self.run_policy.backoff_limit is not None
            and self.failure_policy.budgets.user_code.limit is not None
        ):
            yield validation.FieldError(
                path=("runPolicy", "backoffLimit"),
                message="set runPolicy.backoffLimit or failurePolicy.budgets.userCode.limit, not both",
            )
        if (
            self.managed_by is not None
            and self.run_policy.managed_by is not None
            and self.managed_by != self.run_policy.managed_by
        ):
            yield validation.FieldError(path=("runPolicy", "managedBy"), message=MANAGERS_DIFFER)
        elastic = self.framework.elastic
        workers = self.replica_specs.get("Worker")
        if (
            elastic is not None
            and workers is not None
            and not elastic.min_replicas <= workers.replicas <= elastic.max_replicas
        ):
            yield validation.FieldError(
                path=("replicaSpecs", "Worker", "replicas"),
                message=f"{_ELASTIC_BOUNDS} ({elastic.min_replicas}..{elastic.max_replicas})",
            )
        if elastic is not None and self.network.hosts is HostNames.PER_JOB:
            yield validation.FieldError(path=("network", "hostNames"), message=ELASTIC_HOST_NAMES)
        if self.tensorboard is not None:  # no CEL twin: templates are free-form JSON to the CRD
            yield from tensorboard_types.log_dir_errors(
                self.tensorboard.log_dir, ((t, s.template) for t, s in self.replica_specs.items())
            )


NAME_IS_LABEL = schema.Rule(
    cel=f"self.metadata.name.matches('{DNS1035_LABEL}')",
    message="metadata.name must be a DNS-1035 label: lower case letters, digits and '-', starting with a letter",
)
NAMES_TOO_LONG = "metadata.name is too long: every {name}-{type}-{index} must fit in 63 characters"
TENSORBOARD_SUFFIX = naming.TENSORBOARD_SUFFIX
TENSORBOARD_NAME_FITS = schema.Rule(
    cel=f"!has(self.spec.tensorboard) || size(self.metadata.name) <= {MAX_NAME_LENGTH - len(TENSORBOARD_SUFFIX)}",
    message=f"metadata.name is too long for a TensorBoard: {{name}}{TENSORBOARD_SUFFIX} must fit in 63 characters",
)


def last_index_cel(replicas: str) -> str:
    """CEL for the largest index of a replica type, given CEL for its (optional) replicas."""
    count = f"(has({replicas}) ? {replicas} : 1)"
    return f"({count} > 0 ? {count} - 1 : 0)"


@attrs.frozen(kw_only=True, field_transformer=schema.validated)
class TrainingJob:
    """A distributed training job, for any framework in the operator's registry."""

    api_version: str = attrs.field(
        default=groupversion_info.API_VERSION, validator=validation.constant(groupversion_info.API_VERSION)
    )
    kind: str = attrs.field(
        default=groupversion_info.KIND, validator=validation.constant(groupversion_info.KIND)
    )
    metadata: meta.ObjectMeta = attrs.field(factory=meta.ObjectMeta)
    spec: TrainingJobSpec
    status: status_types.TrainingJobStatus = attrs.field(factory=status_types.TrainingJobStatus)

    cel_rules: ClassVar[tuple[schema.Rule, ...]] = (
        NAME_IS_LABEL,
        schema.Rule(
            cel="self.spec.replicaSpecs.all(t, size(self.metadata.name) + size(t) + size(string("
            + last_index_cel("self.spec.replicaSpecs[t].replicas")
            + ")) + 2 <= 63)",
            message=NAMES_TOO_LONG,
        ),
        TENSORBOARD_NAME_FITS,
    )
    printer_columns: ClassVar[tuple[Mapping[str, Any], ...]] = (
        {
            "name": "State",
            "type": "string",
            "jsonPath": ".status.state",
            "description": "Current state, derived from the conditions",
        },
        {
            "name": "Scheduling",
            "type": "string",
            "jsonPath": '.status.conditions[?(@.type=="Scheduled")].reason',
            "description": "Queued or Unschedulable while the pods wait; shown only once they had to",
        },
        {
            "name": "Step",
            "type": "integer",
            "jsonPath": ".status.progress.step",
            "description": "The step the first rank last reported (spec.progress)",
        },
        {
            "name": "Goodput",
            "type": "string",
            "jsonPath": ".status.goodput.share",
            "description": "The share of the job's wall time that was productive (status.goodput)",
        },
        {
            "name": "Restarts",
            "type": "integer",
            "jsonPath": ".status.restarts.userCode",
            "description": "Restarts charged to user code",
        },
        {
            "name": "Infra-Restarts",
            "type": "integer",
            "jsonPath": ".status.restarts.infrastructure",
            "priority": 1,
            "description": "Restarts charged to infrastructure",
        },
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
    )

    @validation.cross_field
    def __attrs_post_init__(self) -> None:
        replicas = {t: r.replicas for t, r in self.spec.replica_specs.items()}
        tensorboard = self.spec.tensorboard is not None
        errors = [
            *name_errors(self.metadata.name, replicas, tensorboard=tensorboard),
            *self._status_key_errors(),
        ]
        if errors:
            raise validation.ValidationError(errors)

    def _status_key_errors(self) -> Iterator[validation.FieldError]:
        # Status speaks of the spec's replica types, spelled the same way.
        spelled = {t.lower(): t for t in self.spec.replica_specs}
        for key in self.status.replica_statuses:
            if spelled.setdefault(key.lower(), key) != key:
                yield validation.FieldError(
                    path=("status", "replicaStatuses", key),
                    message=f"must be spelled {spelled[key.lower()]} as in spec.replicaSpecs",
                )


def name_errors(
    name: str | None, replicas: Mapping[str, int], *, tensorboard: bool = False
) -> Iterator[validation.FieldError]:
    """Why the pods and Services of a job could not be named, if they could not.

    ``replicas`` maps each replica type to its replica count; ``tensorboard``, whether the job
    has a TensorBoard, whose Service is named after the job too.
    """
    if name is None:
        return
    if not re.search(DNS1035_LABEL, name):
        yield validation.FieldError(
            path=("metadata", "name"),
            message=f"{name!r} must be a DNS-1035 label: lower case letters, digits and '-', starting with a letter",
        )
        return
    for t, count in replicas.items():
        longest = naming.replica_name(name, t, max(count - 1, 0))
        if len(longest) > MAX_NAME_LENGTH:
            yield validation.FieldError(
                path=("metadata", "name"),
                message=f"too long: pod name {longest!r} has {len(longest)} characters, at most {MAX_NAME_LENGTH}",
            )
    board = naming.tensorboard_name(name)
    if tensorboard and len(board) > MAX_NAME_LENGTH:
        yield validation.FieldError(
            path=("metadata", "name"),
            message=f"too long for a TensorBoard: Service name {board!r} has {len(board)} characters, "
            f"at most {MAX_NAME_LENGTH}",
        )
