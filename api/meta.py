"""The metav1 shapes every version shares: object metadata, conditions and timestamps.

Kubernetes timestamps have one-second precision and are always UTC on the wire, so the
types normalise every timestamp they hold (:func:`utc`) — two values that print the
same compare equal, which is what makes round trips exact.

Whose an object is goes by its controller's uid, read from the wire form as the operator's
caches and the client's listings hold it: :func:`controller_of` finds the owner reference
marked ``controller`` (the apiserver allows one at most), :func:`controlled_by` says whether
it names a given uid. A job deleted and made again under its name does not take its
predecessor's pods, still stopping under the same names and labels, for its own.
"""

import datetime
import enum
from collections.abc import Mapping
from typing import Annotated, Any

import attrs

from kubetrain.api import schema

__all__ = [
    "Condition",
    "ConditionStatus",
    "ObjectMeta",
    "controlled_by",
    "controller_of",
    "utc",
    "utc_or_none",
]


def utc(value: datetime.datetime) -> datetime.datetime:
    """Normalise a timestamp to UTC with whole seconds; naive values are refused."""
    if value.tzinfo is None:
        raise ValueError("timestamps must carry a time zone")
    return value.astimezone(datetime.UTC).replace(microsecond=0)


def utc_or_none(value: datetime.datetime | None) -> datetime.datetime | None:
    return None if value is None else utc(value)


@attrs.frozen(kw_only=True)
class ObjectMeta:
    """Standard object metadata (metav1.ObjectMeta), every field the apiserver sends."""

    name: str | None = None
    generate_name: str | None = None
    namespace: str | None = None
    self_link: str | None = None
    uid: str | None = None
    resource_version: str | None = None
    generation: int | None = None
    creation_timestamp: datetime.datetime | None = attrs.field(default=None, converter=utc_or_none)
    deletion_timestamp: datetime.datetime | None = attrs.field(default=None, converter=utc_or_none)
    deletion_grace_period_seconds: int | None = None
    labels: dict[str, str] = attrs.field(factory=dict)
    annotations: dict[str, str] = attrs.field(factory=dict)
    owner_references: tuple[schema.JSONObject, ...] = ()
    finalizers: tuple[str, ...] = ()
    managed_fields: tuple[schema.JSONObject, ...] = ()


class ConditionStatus(enum.StrEnum):
    TRUE = "True"
    FALSE = "False"
    UNKNOWN = "Unknown"


_REASON = r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$"


@attrs.frozen(kw_only=True, field_transformer=schema.validated)
class Condition:
    """One aspect of the job's state, in the metav1.Condition shape."""

    type: Annotated[
        str,
        schema.Field(max_length=316, pattern=r"^[A-Za-z][A-Za-z0-9]*$", doc="Condition type, e.g. Running."),
    ]
    status: ConditionStatus
    reason: Annotated[
        str,
        schema.Field(
            min_length=1, max_length=1024, pattern=_REASON, doc="CamelCase reason for the last transition."
        ),
    ]
    message: Annotated[str, schema.Field(max_length=32768, truncate=True, doc="Human-readable details.")] = ""
    last_transition_time: datetime.datetime = attrs.field(converter=utc)
    observed_generation: Annotated[int | None, schema.Field(minimum=0)] = None

    def is_true(self) -> bool:
        return self.status is ConditionStatus.TRUE


def controller_of(obj: Mapping[str, Any]) -> dict[str, Any] | None:
    """The owner reference of ``obj``'s controller (the apiserver allows one at most), if any."""
    return next((r for r in obj["metadata"].get("ownerReferences") or () if r.get("controller")), None)


def controlled_by(obj: Mapping[str, Any], uid: str | None) -> bool:
    """Whether ``obj``'s controller is the object with ``uid``."""
    ref = controller_of(obj)
    return ref is not None and ref.get("uid") == uid
