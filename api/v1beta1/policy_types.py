"""When a job has succeeded, and what happens when one of its pods fails.

Success: without a ``successPolicy`` the framework decides (the chief or master, else
worker 0 ...). With one, the named targets decide: ``All`` waits for every target,
``Any`` for the first. Once a job has succeeded, its remaining replicas are stopped and
later failures are ignored.

Failure: each failed pod is classified once — ``Infrastructure`` (eviction, preemption,
a DisruptionTarget condition, a lost node, image pulls that never succeed) or
``UserCode`` (the program exited non-zero). ``rules`` are tried in order and the first
that matches decides the action; without a match the replica's ``restartPolicy`` does.
Each class spends its own budget: user code spends ``budgets.userCode`` (or
``runPolicy.backoffLimit``), infrastructure spends ``budgets.infrastructure``. A restart
recreates one pod, every pod of its replica type, or the whole job (``restartScope``).

``restartMethod: InPlace`` restarts a replica type or the job in place where the nodes can: the
pods stay where they are and their containers start again, every rank of the new attempt held
until every rank of the old one has stopped. A pod that cannot (it ended, was deleted, its node
is gone, or it did not restart in time) is made again, as ``Recreate`` (the default) makes every one.
"""

import enum
from typing import Annotated, ClassVar

import attrs

from kubetrain.api import schema, validation

RULE_NAME = r"^[A-Za-z][A-Za-z0-9]*$"
MAX_FAILURE_RULES = 32


class SuccessOperator(enum.StrEnum):
    ALL = "All"
    ANY = "Any"


@attrs.frozen(kw_only=True, field_transformer=schema.validated)
class SuccessTarget:
    """A replica type, or one replica of it, whose success counts."""

    replica_type: Annotated[str, schema.Field(max_length=63, doc="A key of replicaSpecs.")]
    index: Annotated[int | None, schema.Field(minimum=0, doc="One replica; all of them when omitted.")] = None


@attrs.frozen(kw_only=True, field_transformer=schema.validated)
class SuccessPolicy:
    """Which replicas must succeed for the job to succeed."""

    operator: Annotated[
        SuccessOperator, schema.Field(doc="All: every target must succeed. Any: the first success wins.")
    ] = SuccessOperator.ALL
    targets: Annotated[tuple[SuccessTarget, ...], schema.Field(min_items=1, max_items=32)]


class FailureClass(enum.StrEnum):
    INFRASTRUCTURE = "Infrastructure"
    USER_CODE = "UserCode"


class FailureAction(enum.StrEnum):
    FAIL_JOB = "FailJob"
    RESTART = "Restart"
    RESTART_UNCHARGED = "RestartUncharged"
    TOLERATE = "Tolerate"


class RestartScope(enum.StrEnum):
    POD = "Pod"
    REPLICA_TYPE = "ReplicaType"
    JOB = "Job"


class RestartMethod(enum.StrEnum):
    """How a restart of a replica type or of the job brings its pods back."""

    IN_PLACE = "InPlace"
    RECREATE = "Recreate"


class ExitCodeOperator(enum.StrEnum):
    IN = "In"
    NOT_IN = "NotIn"


ExitCode = Annotated[int, schema.Field(minimum=0, maximum=255)]


@attrs.frozen(kw_only=True, field_transformer=schema.validated)
class ExitCodeRange:
    """Exit codes from min to max, both included (max defaults to min)."""

    min: ExitCode
    max: ExitCode | None = None

    cel_rules: ClassVar[tuple[schema.Rule, ...]] = (
        schema.Rule(
            cel="!has(self.max) || self.min <= self.max", message="min must not exceed max", field_path=".max"
        ),
    )

    @validation.cross_field
    def __attrs_post_init__(self) -> None:
        if self.max is not None and self.min > self.max:
            raise validation.ValidationError.at("max", "min must not exceed max")

    def __contains__(self, code: int) -> bool:
        return self.min <= code <= (self.min if self.max is None else self.max)


@attrs.frozen(kw_only=True, field_transformer=schema.validated)
class ExitCodeMatch:
    """Matches when the container's exit code is (In) or is not (NotIn) listed."""

    container_name: Annotated[
        str | None, schema.Field(max_length=63, doc="Defaults to the framework's main container.")
    ] = None
    operator: ExitCodeOperator = ExitCodeOperator.IN
    values: Annotated[tuple[ExitCode, ...], schema.Field(max_items=255)] = ()
    ranges: Annotated[tuple[ExitCodeRange, ...], schema.Field(max_items=32)] = ()

    cel_rules: ClassVar[tuple[schema.Rule, ...]] = (
        schema.Rule(
            cel="(has(self.values) && size(self.values) > 0) || (has(self.ranges) && size(self.ranges) > 0)",
            message="list at least one exit code in values or ranges",
        ),
    )

    @validation.cross_field
    def __attrs_post_init__(self) -> None:
        if not self.values and not self.ranges:
            raise validation.ValidationError.at("values", "list at least one exit code in values or ranges")

    def matches(self, code: int) -> bool:
        listed = code in self.values or any(code in r for r in self.ranges)
        return listed if self.operator is ExitCodeOperator.IN else not listed


@attrs.frozen(kw_only=True, field_transformer=schema.validated)
class FailureRule:
    """What to do about a failed pod that matches every criterion given here."""

    name: Annotated[
        str,
        schema.Field(
            max_length=63,
            pattern=RULE_NAME,
            doc="Unique name; the job's condition reason names the rule that decided.",
        ),
    ]
    action: FailureAction
    replica_types: Annotated[
        tuple[str, ...], schema.Field(max_items=32, doc="Only these replica types; all when empty.")
    ] = ()
    on_failure_class: FailureClass | None = None
    on_exit_codes: ExitCodeMatch | None = None
    on_reasons: Annotated[
        tuple[str, ...],
        schema.Field(
            max_items=32,
            items=schema.Field(max_length=128),
            doc="Pod or container reasons, e.g. OOMKilled, Evicted, Preempted, NodeLost.",
        ),
    ] = ()
    on_pod_conditions: Annotated[
        tuple[str, ...],
        schema.Field(
            max_items=16,
            items=schema.Field(max_length=316),
            doc="Pod condition types that must be True, e.g. DisruptionTarget.",
        ),
    ] = ()
    restart_scope: Annotated[
        RestartScope | None, schema.Field(doc="Overrides failurePolicy.restartScope for this rule.")
    ] = None
    avoid_node: Annotated[
        bool,
        schema.Field(
            doc="Replacements keep off the node the pod failed on (a device error, say): it joins "
            "status.avoidedNodes."
        ),
    ] = False


@attrs.frozen(kw_only=True, field_transformer=schema.validated)
class Budget:
    """How many restarts one failure class may cause."""

    limit: Annotated[int | None, schema.Field(minimum=0, doc="Restarts allowed in the window (or ever).")] = (
        None
    )
    per_index_limit: Annotated[
        int | None, schema.Field(minimum=0, doc="Restarts allowed for any one replica.")
    ] = None
    window_seconds: Annotated[
        int | None, schema.Field(minimum=1, doc="Only restarts this recent count; all of them when omitted.")
    ] = None


@attrs.frozen(kw_only=True, field_transformer=schema.validated)
class Budgets:
    """A separate restart budget per failure class."""

    user_code: Budget = attrs.field(factory=Budget)
    infrastructure: Budget = attrs.field(factory=Budget)


@attrs.frozen(kw_only=True, field_transformer=schema.validated)
class RestartBackoff:
    """Delay before a restart: doubling from initialSeconds up to maxSeconds."""

    initial_seconds: Annotated[int, schema.Field(minimum=0)] = 0
    max_seconds: Annotated[int, schema.Field(minimum=0)] = 300


@attrs.frozen(kw_only=True, field_transformer=schema.validated)
class FailurePolicy:
    """How failed pods are classified, which rule applies, and what each class may spend."""

    rules: Annotated[
        tuple[FailureRule, ...],
        schema.Field(
            max_items=MAX_FAILURE_RULES,
            list_map_keys=("name",),
            doc="Tried in order; the first rule that matches decides.",
        ),
    ] = ()
    restart_scope: Annotated[
        RestartScope | None, schema.Field(doc="What a restart recreates; defaults to the framework's choice.")
    ] = None
    restart_method: Annotated[
        RestartMethod | None,
        schema.Field(
            doc="InPlace: a restart of a replica type or of the job restarts the containers of its "
            "running pods where they are (nodes that declare RestartAllContainersOnContainerExits), and "
            "makes again only the pods that cannot; Recreate (the default): it deletes and makes again "
            "every pod."
        ),
    ] = None
    budgets: Budgets = attrs.field(factory=Budgets)
    restart_backoff: RestartBackoff | None = None
    termination_deadline_seconds: Annotated[
        int | None,
        schema.Field(minimum=0, doc="Pods still Terminating this long after deletion are force-deleted."),
    ] = None
    image_pull_grace_seconds: Annotated[
        int | None,
        schema.Field(minimum=0, doc="Image pull errors this old count as an infrastructure failure."),
    ] = None
    refusal_grace_seconds: Annotated[
        int | None,
        schema.Field(
            minimum=0,
            doc="A pod or Service the apiserver refuses for good (invalid, or forbidden by policy) "
            "fails the job after this long (default 300); quota and a missing ServiceAccount are waited for.",
        ),
    ] = None
