"""Training progress: how far a job got, and when a job that stopped moving is hung.

``spec.progress`` turns it on. Every regular container of every pod then finds the file
``KUBETRAIN_PROGRESS_FILE`` names, and a training process reports by replacing its content with
one line (:data:`LINE`), ``step=120 total=1000 loss=0.53``: it needs no credentials, no network
and no kubetrain package. kubetrain's agent reads the file (in the first rank's pod, or in every
pod when a deadline is set); the operator reads the first rank's line at most once per
``--progress-interval``, on one budget of reads for the whole operator, into ``status.progress``
(the step, the metrics, when the step last moved, the rate and an estimate of the time left).

With ``deadlineSeconds``, a rank whose line has not changed for that long, once it has reported
at least once and ``startupGraceSeconds`` after that first report, is *hung*: its agent
says so, and the job records a failure with reason :data:`HUNG` that ``failurePolicy.rules``
can match, charged to user code and restarted through the restart tiers (docs/lifecycle.md).
A rank that never reports (a parameter server, an MPI launcher) is never hung.
"""

import datetime
import re
from typing import Annotated

import attrs

from kubetrain.api import meta, schema

__all__ = [
    "DEFAULT_STARTUP_GRACE_SECONDS",
    "HUNG",
    "LINE",
    "MAX_METRICS",
    "METRIC_NAME",
    "ProgressSpec",
    "ProgressStatus",
]

# The reason of a hang's failure record (failurePolicy.rules[].onReasons can name it).
HUNG = "ProgressDeadlineExceeded"
DEFAULT_STARTUP_GRACE_SECONDS = 120
MAX_METRICS = 8
# Names of the line that are not metrics: the rank's last checkpoint, and the request it answered.
CHECKPOINT = "checkpoint"
ANSWERED = "answered"
METRIC_NAME = r"[A-Za-z_][A-Za-z0-9_.]{0,62}"
_NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|[-+]?(?:inf|nan)"
# The one line a process reports: the step first, then an optional total, then metrics.
LINE = re.compile(rf"^step=(\d{{1,18}})(?: total=(\d{{1,18}}))?((?: {METRIC_NAME}=(?:{_NUMBER}))*)\s*$")


@attrs.frozen(kw_only=True, field_transformer=schema.validated)
class ProgressSpec:
    """Progress in status, and hangs detected."""

    deadline_seconds: Annotated[
        int | None,
        schema.Field(
            minimum=10,
            doc="A rank whose reported step has not moved for this long is hung: the job records a "
            f"{HUNG} failure and restarts. No hang detection when omitted.",
        ),
    ] = None
    startup_grace_seconds: Annotated[
        int | None,
        schema.Field(
            minimum=0,
            doc="No hang is declared this soon after a rank's first report in its containers' run "
            f"(default {DEFAULT_STARTUP_GRACE_SECONDS}): a first step that compiles, say. Before its first "
            "report a rank is never hung.",
        ),
    ] = None

    @property
    def startup_grace(self) -> int:
        return (
            DEFAULT_STARTUP_GRACE_SECONDS
            if self.startup_grace_seconds is None
            else self.startup_grace_seconds
        )


@attrs.frozen(kw_only=True, field_transformer=schema.validated)
class ProgressStatus:
    """The last progress read from the job's first rank."""

    step: Annotated[int, schema.Field(minimum=0)]
    total_steps: Annotated[int | None, schema.Field(minimum=1)] = None
    metrics: Annotated[
        dict[str, Annotated[str, schema.Field(max_length=32)]],
        schema.Field(
            max_properties=MAX_METRICS,
            keys=schema.Field(pattern=f"^{METRIC_NAME}$"),
            doc="The scalars reported with the step (six significant digits).",
        ),
    ] = attrs.field(factory=dict)
    pod: Annotated[str, schema.Field(max_length=253, doc="The rank read.")] = ""
    observed_time: datetime.datetime | None = attrs.field(default=None, converter=meta.utc_or_none)
    last_moved_time: Annotated[
        datetime.datetime | None, schema.Field(doc="When the step was last seen to change.")
    ] = attrs.field(default=None, converter=meta.utc_or_none)
    steps_per_second: Annotated[
        str | None, schema.Field(max_length=32, doc="Recent rate, between the last readings that moved.")
    ] = None
    estimated_completion_time: Annotated[
        datetime.datetime | None, schema.Field(doc="When totalSteps will be reached at that rate.")
    ] = attrs.field(default=None, converter=meta.utc_or_none)
    checkpoint: Annotated[
        int | None, schema.Field(minimum=0, doc="The step of the rank's last checkpoint (checkpoint=STEP).")
    ] = None
    answered: Annotated[
        int | None,
        schema.Field(minimum=0, doc="The last checkpoint request the rank answered (answered=NUMBER)."),
    ] = None
