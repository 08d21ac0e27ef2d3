"""The v1beta1 TrainingJob's status: what the operator observed and decided, written only by it.

The state is never written on its own: :func:`state_of` derives it from the conditions, a finished
job staying finished whatever else is true. Beside it the status keeps what must outlive the
operator: each replica type's pods and attempt, the restarts paid for by each budget, the recent
failures and what was done about them, the failures already charged per pod (so that none is
charged twice), the nodes replacements keep off, and the apiserver's last refusal.
"""

import datetime
import enum
from typing import Annotated

import attrs

from kubetrain.api import indexes, meta, schema
from kubetrain.api.v1beta1 import (
    checkpoint_types,
    goodput_types,
    policy_types,
    progress_types,
    replica_types,
    tensorboard_types,
    trainer_types,
)

MAX_FAILURE_HISTORY = 64
# The nodes a job's replacements keep off, newest last; the oldest is let go first.
MAX_AVOIDED_NODES = 16


class JobState(enum.StrEnum):
    PENDING = "Pending"
    CREATED = "Created"
    RUNNING = "Running"
    RESTARTING = "Restarting"
    SUSPENDED = "Suspended"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"


class ConditionType(enum.StrEnum):
    CREATED = "Created"
    RUNNING = "Running"
    RESTARTING = "Restarting"
    SUSPENDED = "Suspended"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    # The apiserver refuses some of the job's pods or Services; the reason says why.
    REPLICA_FAILURE = "ReplicaFailure"
    # Shown once the scheduler could not place a pod: False (Queued, Unschedulable) while it
    # cannot, True once every pod of the current attempt has a node.
    SCHEDULED = "Scheduled"


# A finished job stays finished whatever else is true; then suspension hides activity.
_STATE_PRECEDENCE = (
    (ConditionType.FAILED, JobState.FAILED),
    (ConditionType.SUCCEEDED, JobState.SUCCEEDED),
    (ConditionType.SUSPENDED, JobState.SUSPENDED),
    (ConditionType.RESTARTING, JobState.RESTARTING),
    (ConditionType.RUNNING, JobState.RUNNING),
    (ConditionType.CREATED, JobState.CREATED),
)


def state_of(conditions: tuple[meta.Condition, ...]) -> JobState:
    """The one current state implied by the conditions, never the last one written."""
    true = {c.type for c in conditions if c.is_true()}
    return next((state for ctype, state in _STATE_PRECEDENCE if ctype in true), JobState.PENDING)


@attrs.frozen(kw_only=True, field_transformer=schema.validated)
class ReplicaStatus:
    """Pods of one replica type, by phase."""

    active: Annotated[int, schema.Field(minimum=0)] = 0
    ready: Annotated[int, schema.Field(minimum=0)] = 0
    succeeded: Annotated[int, schema.Field(minimum=0)] = 0
    failed: Annotated[int, schema.Field(minimum=0)] = 0
    selector: Annotated[str | None, schema.Field(doc="Label selector of these pods.")] = None
    attempt: Annotated[
        int,
        schema.Field(
            minimum=0,
            doc="Restart attempt these pods belong to; pods of an older attempt are being replaced.",
        ),
    ] = 0
    in_place: Annotated[
        bool,
        schema.Field(
            doc="The attempt began as a restart in place: pods of the attempt before it are moved to "
            "it where they are, and made again only where they cannot be.",
        ),
    ] = False
    active_indexes: Annotated[
        str,
        schema.Field(
            pattern=indexes.PATTERN,
            doc='Indexes whose pod of this attempt was last seen active, as ranges ("0-3,7"): a pod '
            "of one of them that is gone without being seen to go vanished while the operator was "
            "not watching, and is counted as a failure.",
        ),
    ] = ""


@attrs.frozen(kw_only=True, field_transformer=schema.validated)
class RestartCounts:
    """Restarts performed, by what paid for them."""

    user_code: Annotated[int, schema.Field(minimum=0)] = 0
    infrastructure: Annotated[int, schema.Field(minimum=0)] = 0
    uncharged: Annotated[int, schema.Field(minimum=0, doc="Restarts by rules that spend no budget.")] = 0

    @property
    def total(self) -> int:
        return self.user_code + self.infrastructure + self.uncharged


@attrs.frozen(kw_only=True, field_transformer=schema.validated)
class FailureRecord:
    """One pod failure and what was done about it."""

    time: datetime.datetime = attrs.field(converter=meta.utc)
    replica_type: str
    index: Annotated[int, schema.Field(minimum=0)]
    pod: str
    node: str | None = None
    exit_code: Annotated[int | None, schema.Field(minimum=0, maximum=255)] = None
    reason: str | None = None
    failure_class: Annotated[policy_types.FailureClass, schema.Field(wire="class")]
    rule: Annotated[str | None, schema.Field(doc="The failure rule that matched, if any.")] = None
    action: policy_types.FailureAction
    restart: Annotated[
        policy_types.RestartMethod | None,
        schema.Field(doc="How the restart it asked for was carried out: in place, or by making pods again."),
    ] = None


@attrs.frozen(kw_only=True, field_transformer=schema.validated)
class CountedFailures:
    """How many failures of one pod have been charged already, so none is charged twice."""

    pod: str
    uid: Annotated[str, schema.Field(max_length=128)]
    count: Annotated[int, schema.Field(minimum=0)] = 0
    hung_time: Annotated[
        datetime.datetime | None, schema.Field(doc="When its last hang that was charged was seen.")
    ] = attrs.field(default=None, converter=meta.utc_or_none)
    held_signal: Annotated[
        str | None,
        schema.Field(
            max_length=256,
            doc="Which exit of its agent last said, charged, that the pod's attempt ended and the "
            "pod waits in place (the container's ID).",
        ),
    ] = None


@attrs.frozen(kw_only=True, field_transformer=schema.validated)
class AvoidedNode:
    """A node the job's replacements keep off, and the failure that put it here."""

    node: Annotated[str, schema.Field(max_length=253)]
    reason: Annotated[str, schema.Field(max_length=128, doc="Why: the failure's reason, e.g. NodeLost.")]
    pod: Annotated[str | None, schema.Field(doc="The pod that failed there.")] = None
    time: datetime.datetime = attrs.field(converter=meta.utc)


@attrs.frozen(kw_only=True, field_transformer=schema.validated)
class Refusal:
    """The apiserver's refusal of one of the job's creates at the operator's last try. Kept in
    the status so that the retry backoff and the grace before the job fails outlive the operator."""

    kind: Annotated[str, schema.Field(max_length=63, doc="The refused object's kind, e.g. Pod.")]
    name: Annotated[str, schema.Field(max_length=253)]
    code: Annotated[int, schema.Field(minimum=100, maximum=599, doc="The HTTP status of the refusal.")]
    message: Annotated[str, schema.Field(max_length=32768, truncate=True, doc="The apiserver's message.")] = (
        ""
    )
    time: datetime.datetime = attrs.field(converter=meta.utc)
    observed_generation: Annotated[
        int | None, schema.Field(minimum=0, doc="The generation of the spec the object was rendered from.")
    ] = None
    reason: Annotated[
        str | None,
        schema.Field(
            max_length=63,
            doc="The operator's own verdict on an answer of the apiserver: NameTaken (another object "
            "holds the name), NameHeld (held by what is going away), NotServed (the cluster does not "
            "serve the kind); unset for the apiserver's own refusal.",
        ),
    ] = None


@attrs.frozen(kw_only=True, field_transformer=schema.validated)
class TrainingJobStatus:
    """The observed state of the job; written only by the operator."""

    state: Annotated[JobState | None, schema.Field(doc="The current state, derived from the conditions.")] = (
        None
    )
    conditions: Annotated[
        tuple[meta.Condition, ...], schema.Field(max_items=16, list_map_keys=("type",))
    ] = ()
    replica_statuses: Annotated[
        dict[str, ReplicaStatus],
        schema.Field(
            max_properties=replica_types.MAX_REPLICA_TYPES,
            keys=schema.Field(pattern=replica_types.REPLICA_TYPE),
        ),
    ] = attrs.field(factory=dict)
    start_time: datetime.datetime | None = attrs.field(default=None, converter=meta.utc_or_none)
    completion_time: datetime.datetime | None = attrs.field(default=None, converter=meta.utc_or_none)
    restarts: RestartCounts = attrs.field(factory=RestartCounts)
    failures: Annotated[
        tuple[FailureRecord, ...],
        schema.Field(max_items=MAX_FAILURE_HISTORY, doc="The most recent pod failures, oldest first."),
    ] = ()
    counted_failures: Annotated[
        tuple[CountedFailures, ...],
        schema.Field(list_map_keys=("uid",), doc="Failures already charged, per pod that still exists."),
    ] = ()
    avoided_nodes: Annotated[
        tuple[AvoidedNode, ...],
        schema.Field(
            max_items=MAX_AVOIDED_NODES,
            list_map_keys=("node",),
            doc="Nodes where an infrastructure failure happened, which new pods of the job keep off "
            "(node affinity) until keeping off them would leave a pod unschedulable.",
        ),
    ] = ()
    last_refusal: Annotated[
        Refusal | None,
        schema.Field(doc="While the apiserver refuses the job's creates: the refusal at the last try."),
    ] = None
    observed_generation: Annotated[int | None, schema.Field(minimum=0)] = None
    tensorboard: tensorboard_types.TensorBoardStatus | None = None
    progress: progress_types.ProgressStatus | None = None
    checkpoint: Annotated[
        checkpoint_types.CheckpointStatus | None,
        schema.Field(doc="Checkpoints seen, and the one a stop waits for (spec.checkpoint)."),
    ] = None
    runtime: Annotated[
        trainer_types.RuntimeRef | None,
        schema.Field(doc="The runtime the job was made from, and its generation then (spec.runtimeRef)."),
    ] = None
    goodput: Annotated[
        goodput_types.GoodputStatus | None,
        schema.Field(doc="The wall time so far, productive and lost by cause (docs/api.md, Goodput)."),
    ] = None
