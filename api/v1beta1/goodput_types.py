"""Goodput: how much of a job's wall time made training progress, and where the rest went.

``status.goodput`` splits the time from the job's creation to ``accountedTime`` into productive
seconds and seconds lost, by cause: queued, starting (scheduling and start-up), restarting,
redone (steps run again after a restart threw them away), hung, and checkpointing (a stop
waiting for its checkpoint). The parts always add up to the wall time accounted, and none ever
goes down. ``share`` is the productive part, in whole per cent, for ``kubectl get``. What each
cause is, and how the operator tells them apart, is in docs/api.md (Goodput);
:mod:`kubetrain.operator.policies.goodput` is the accounting.
"""

import datetime
from typing import Annotated

import attrs

from kubetrain.api import meta, schema

__all__ = ["GoodputStatus", "LostSeconds"]


@attrs.frozen(kw_only=True, field_transformer=schema.validated)
class LostSeconds:
    """Wall time lost, in seconds, by cause."""

    queued: Annotated[
        int,
        schema.Field(
            minimum=0,
            doc="Suspended (held or evicted by Kueue, or runPolicy.suspend), or its pods gated in a "
            "queue before they first ran.",
        ),
    ] = 0
    starting: Annotated[
        int,
        schema.Field(
            minimum=0, doc="Created or resumed, not every replica running yet: scheduling and start-up."
        ),
    ] = 0
    restarting: Annotated[
        int, schema.Field(minimum=0, doc="From a restart until every replica runs again.")
    ] = 0
    redone: Annotated[
        int,
        schema.Field(
            minimum=0,
            doc="Running again the steps a restart threw away (those after the checkpoint it resumed from).",
        ),
    ] = 0
    hung: Annotated[
        int, schema.Field(minimum=0, doc="The step stood still until a hang was found (spec.progress).")
    ] = 0
    checkpointing: Annotated[
        int, schema.Field(minimum=0, doc="A stop waiting for the checkpoint it asked for (spec.checkpoint).")
    ] = 0

    @property
    def total(self) -> int:
        return self.queued + self.starting + self.restarting + self.redone + self.hung + self.checkpointing


@attrs.frozen(kw_only=True, field_transformer=schema.validated)
class GoodputStatus:
    """The job's wall time, productive and lost by cause, as the operator observed it."""

    accounted_time: Annotated[
        datetime.datetime,
        schema.Field(doc="The parts add up to the wall time from the job's creation to this time."),
    ] = attrs.field(converter=meta.utc)
    productive_seconds: Annotated[
        int, schema.Field(minimum=0, doc="Running, its step moving (or not reported), nothing redone.")
    ] = 0
    lost_seconds: LostSeconds = attrs.field(factory=LostSeconds)
    share: Annotated[
        str | None,
        schema.Field(
            pattern=r"^(100|[1-9]?[0-9])%$",
            doc="The productive part of the wall time accounted, in per cent.",
        ),
    ] = None
    redo_owed_seconds: Annotated[
        int,
        schema.Field(
            minimum=0,
            doc="Seconds of steps a restart threw away that the job has not run again yet: its next "
            "running time is charged to redone.",
        ),
    ] = 0

    @property
    def wall_seconds(self) -> int:
        """The wall time accounted: every part together."""
        return self.productive_seconds + self.lost_seconds.total
