"""Checkpoint before a stop the operator sees coming: what a job asks, and what the status keeps.

A job that says ``spec.checkpoint`` (and ``spec.progress``, whose line carries the answers) is
asked to checkpoint before every stop the operator foresees — a Kueue eviction or preemption, a
user's suspend, an elastic scale-down, ``activeDeadlineSeconds`` about to expire, a node a notice
says will go. The operator writes a request number into the pod annotation
:data:`~kubetrain.api.naming.CHECKPOINT_REQUEST` of every pod; the kubelet puts it in the file
``KUBETRAIN_CHECKPOINT_FILE`` names; the process saves, then reports
``checkpoint=STEP answered=N`` on its progress line. The stop waits for that answer from the first
rank, or for ``graceSeconds``, whichever comes first, then goes as it would have.

Every checkpoint the operator reads on the progress line — answered or periodic — is kept in
``status.checkpoint`` (the last :data:`MAX_CHECKPOINTS`), and the last one is what the next
attempt is told to resume from (``KUBETRAIN_RESUME_STEP``).
"""

import datetime
import enum
from typing import Annotated

import attrs

from kubetrain.api import meta, schema

__all__ = [
    "DEFAULT_GRACE_SECONDS",
    "MAX_CHECKPOINTS",
    "CheckpointRecord",
    "CheckpointRequest",
    "CheckpointSpec",
    "CheckpointStatus",
    "StopReason",
]

DEFAULT_GRACE_SECONDS = 60
MAX_GRACE_SECONDS = 3600
MAX_CHECKPOINTS = 16


class StopReason(enum.StrEnum):
    """A stop the operator sees coming."""

    SUSPENDED = "Suspended"
    EVICTED = "Evicted"  # Kueue took the job's admission back: eviction or preemption
    SCALED_DOWN = "ScaledDown"
    DEADLINE = "DeadlineExceeded"
    NODE_NOTICE = "NodeNotice"


@attrs.frozen(kw_only=True, field_transformer=schema.validated)
class CheckpointSpec:
    """Ask the training to checkpoint before every stop the operator sees coming (needs
    ``spec.progress``: the answer comes on the progress line)."""

    grace_seconds: Annotated[
        int,
        schema.Field(
            minimum=1,
            maximum=MAX_GRACE_SECONDS,
            doc="How long a stop waits for the first rank's answer at most; then it goes anyway. "
            "activeDeadlineSeconds asks this long before it expires.",
        ),
    ] = DEFAULT_GRACE_SECONDS


@attrs.frozen(kw_only=True, field_transformer=schema.validated)
class CheckpointRequest:
    """A checkpoint asked of the job, not answered yet."""

    number: Annotated[int, schema.Field(minimum=1, doc="What the process reads, and answers with.")]
    reason: StopReason
    time: datetime.datetime = attrs.field(converter=meta.utc)
    pods: Annotated[
        tuple[str, ...],
        schema.Field(max_items=64, doc="For a node notice or a scale-down: the pods that will go."),
    ] = ()


@attrs.frozen(kw_only=True, field_transformer=schema.validated)
class CheckpointRecord:
    """A checkpoint the operator read on the first rank's progress line."""

    step: Annotated[int, schema.Field(minimum=0)]
    time: datetime.datetime = attrs.field(converter=meta.utc)
    answered: Annotated[
        StopReason | None, schema.Field(doc="The stop it was asked for; unset for the training's own.")
    ] = None


@attrs.frozen(kw_only=True, field_transformer=schema.validated)
class CheckpointStatus:
    """Checkpoints seen, and the one asked for now."""

    requests: Annotated[int, schema.Field(minimum=0, doc="Checkpoints asked for so far.")] = 0
    answered: Annotated[int, schema.Field(minimum=0, doc="The last request the first rank answered.")] = 0
    requested: Annotated[
        CheckpointRequest | None, schema.Field(doc="The checkpoint a stop waits for now.")
    ] = None
    checkpoints: Annotated[
        tuple[CheckpointRecord, ...],
        schema.Field(max_items=MAX_CHECKPOINTS, doc="The last checkpoints seen, oldest first."),
    ] = ()
    timed_out: Annotated[
        int, schema.Field(minimum=0, doc="Stops that went before their checkpoint was answered.")
    ] = 0

    @property
    def last(self) -> CheckpointRecord | None:
        """The checkpoint the next attempt resumes from."""
        return self.checkpoints[-1] if self.checkpoints else None
