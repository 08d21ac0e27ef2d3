"""The v1alpha1 TrainingJob, in the shape of TfJob, MXJob, Caffe2Job and ChainerJob.

``replicaSpecs`` is a list of UPPERCASE replica types (MASTER, WORKER, PS, SCHEDULER,
SERVER ...), each with its own port; a ``terminationPolicy.chief`` names the replica
whose end decides the job (MXJob); ``backend`` configures Caffe2's rendezvous; ``tensorboard``
runs a TensorBoard, as TfJob's did, with the hub's fields. The order
of ``replicaSpecs`` carries no meaning — the scheduler need not come first, as it had
to in MXJob — so the type keeps the list in one canonical order: the seeds' familiar
order (MASTER, CHIEF, SCHEDULER, SERVER, PS, WORKER, EVALUATOR, LAUNCHER), then the
other types alphabetically.
"""

import datetime
from collections.abc import Iterable, Iterator
from typing import Annotated, Any, ClassVar

import attrs

from kubetrain.api import meta, schema, validation
from kubetrain.api.v1alpha1 import groupversion_info
from kubetrain.api.v1beta1 import framework_types, tensorboard_types
from kubetrain.api.v1beta1 import replica_types as hub_replica
from kubetrain.api.v1beta1 import status_types as hub_status
from kubetrain.api.v1beta1 import trainingjob_types as hub_types

REPLICA_TYPE = r"^[A-Z][A-Z0-9]*$"
SEED_ORDER = ("MASTER", "CHIEF", "SCHEDULER", "SERVER", "PS", "WORKER", "EVALUATOR", "LAUNCHER")


def canonical_order(types: Iterable[str]) -> list[str]:
    rank = {t: i for i, t in enumerate(SEED_ORDER)}
    return sorted(types, key=lambda t: (rank.get(t, len(SEED_ORDER)), t))


def _sorted_by_type(items: Iterable[Any]) -> tuple[Any, ...]:
    items = tuple(items)
    order = canonical_order(i.replica_type for i in items)
    # Stable for duplicates, which validation then reports.
    return tuple(sorted(items, key=lambda i: order.index(i.replica_type)))


@attrs.frozen(kw_only=True, field_transformer=schema.validated)
class ReplicaSpec:
    """One replica type of the job, as TfJob's tfReplicaSpecs listed them."""

    replica_type: Annotated[
        str,
        schema.Field(
            max_length=63, pattern=REPLICA_TYPE, doc="UPPERCASE replica type, e.g. MASTER, WORKER, PS."
        ),
    ]
    replicas: Annotated[int, schema.Field(minimum=0, maximum=10000)] = 1
    port: Annotated[int | None, schema.Field(minimum=1, maximum=65535)] = None
    template: Annotated[
        schema.JSONObject,
        schema.Field(doc="The pod template of every replica.", extra_schema=hub_replica.POD_TEMPLATE_SCHEMA),
    ] = attrs.field(validator=hub_replica.check_template)


@attrs.frozen(kw_only=True, field_transformer=schema.validated)
class ChiefSpec:
    """The replica whose end decides the job."""

    replica_name: Annotated[str, schema.Field(max_length=63, pattern=REPLICA_TYPE)]
    replica_index: Annotated[int, schema.Field(minimum=0)] = 0


@attrs.frozen(kw_only=True, field_transformer=schema.validated)
class TerminationPolicy:
    chief: ChiefSpec | None = None


@attrs.frozen(kw_only=True, field_transformer=schema.validated)
class Backend:
    """Caffe2's rendezvous backend (Caffe2Job's backendSpecs)."""

    type: framework_types.Caffe2BackendType
    redis_host: Annotated[str | None, schema.Field(max_length=253)] = None
    redis_port: Annotated[int | None, schema.Field(minimum=1, maximum=65535)] = None
    nfs_path: Annotated[str | None, schema.Field(max_length=4096)] = None

    cel_rules: ClassVar[tuple[schema.Rule, ...]] = framework_types.BACKEND_RULES

    @validation.cross_field
    def __attrs_post_init__(self) -> None:
        framework_types.check_backend(self.type, self.redis_host, self.nfs_path)


@attrs.frozen(kw_only=True, field_transformer=schema.validated)
class TrainingJobSpec:
    """The desired training job, in the first operators' shape."""

    framework: Annotated[
        str,
        schema.Field(
            max_length=63, pattern=r"^[a-z][a-z0-9-]*$", doc="Registry name, e.g. tensorflow or mxnet."
        ),
    ]
    runtime_id: Annotated[str | None, schema.Field(pattern=r"^[a-z0-9]{1,16}$")] = None
    replica_specs: Annotated[
        tuple[ReplicaSpec, ...],
        schema.Field(min_items=1, max_items=hub_replica.MAX_REPLICA_TYPES, list_map_keys=("replicaType",)),
    ] = attrs.field(converter=_sorted_by_type)
    termination_policy: TerminationPolicy | None = None
    cleanup_pod_policy: hub_types.CleanPodPolicy | None = None
    backend: Backend | None = None
    # The hub's type: v1alpha1 says exactly what v1beta1 says (the seeds' TfJob had a tensorboard too).
    tensorboard: tensorboard_types.TensorBoardSpec | None = None

    cel_rules: ClassVar[tuple[schema.Rule, ...]] = (
        schema.Rule(
            cel="!has(self.backend) || self.framework == 'caffe2'",
            message="backend is only valid for framework caffe2",
            field_path=".backend",
        ),
        schema.Rule(
            cel="!has(self.terminationPolicy) || !has(self.terminationPolicy.chief)"
            " || self.replicaSpecs.exists(r, r.replicaType == self.terminationPolicy.chief.replicaName"
            " && (has(self.terminationPolicy.chief.replicaIndex) ? self.terminationPolicy.chief.replicaIndex : 0)"
            " < (has(r.replicas) ? r.replicas : 1))",
            message="terminationPolicy.chief must name a replica of this job",
            field_path=".terminationPolicy.chief",
        ),
    )

    @validation.cross_field
    def __attrs_post_init__(self) -> None:
        errors = list(self._cross_field_errors())
        if errors:
            raise validation.ValidationError(errors)

    def _cross_field_errors(self) -> Iterator[validation.FieldError]:
        if self.backend is not None and self.framework != "caffe2":
            yield validation.FieldError(
                path=("backend",), message="backend is only valid for framework caffe2"
            )
        chief = self.termination_policy.chief if self.termination_policy else None
        if chief is not None and not any(
            r.replica_type == chief.replica_name and chief.replica_index < r.replicas
            for r in self.replica_specs
        ):
            yield validation.FieldError(
                path=("terminationPolicy", "chief"),
                message="terminationPolicy.chief must name a replica of this job",
            )
        if self.tensorboard is not None:
            yield from tensorboard_types.log_dir_errors(
                self.tensorboard.log_dir, ((r.replica_type, r.template) for r in self.replica_specs)
            )


@attrs.frozen(kw_only=True, field_transformer=schema.validated)
class ReplicaStatus:
    replica_type: Annotated[str, schema.Field(max_length=63, pattern=REPLICA_TYPE)]
    active: Annotated[int, schema.Field(minimum=0)] = 0
    succeeded: Annotated[int, schema.Field(minimum=0)] = 0
    failed: Annotated[int, schema.Field(minimum=0)] = 0


@attrs.frozen(kw_only=True, field_transformer=schema.validated)
class TrainingJobStatus:
    """The observed state; a read-only view of what the operator records in v1beta1."""

    state: hub_status.JobState | None = None
    conditions: Annotated[
        tuple[meta.Condition, ...], schema.Field(max_items=16, list_map_keys=("type",))
    ] = ()
    replica_statuses: Annotated[
        tuple[ReplicaStatus, ...],
        schema.Field(max_items=hub_replica.MAX_REPLICA_TYPES, list_map_keys=("replicaType",)),
    ] = attrs.field(default=(), converter=_sorted_by_type)
    start_time: datetime.datetime | None = attrs.field(default=None, converter=meta.utc_or_none)
    completion_time: datetime.datetime | None = attrs.field(default=None, converter=meta.utc_or_none)


@attrs.frozen(kw_only=True, field_transformer=schema.validated)
class TrainingJob:
    """A distributed training job (legacy v1alpha1 shape)."""

    api_version: str = attrs.field(
        default=groupversion_info.API_VERSION, validator=validation.constant(groupversion_info.API_VERSION)
    )
    kind: str = attrs.field(
        default=groupversion_info.KIND, validator=validation.constant(groupversion_info.KIND)
    )
    metadata: meta.ObjectMeta = attrs.field(factory=meta.ObjectMeta)
    spec: TrainingJobSpec
    status: TrainingJobStatus = attrs.field(factory=TrainingJobStatus)

    cel_rules: ClassVar[tuple[schema.Rule, ...]] = (
        hub_types.NAME_IS_LABEL,
        schema.Rule(
            cel="self.spec.replicaSpecs.all(r, size(self.metadata.name) + size(r.replicaType) + size(string("
            + hub_types.last_index_cel("r.replicas")
            + ")) + 2 <= 63)",
            message=hub_types.NAMES_TOO_LONG,
        ),
        hub_types.TENSORBOARD_NAME_FITS,
    )

    @validation.cross_field
    def __attrs_post_init__(self) -> None:
        replicas = {r.replica_type: r.replicas for r in self.spec.replica_specs}
        tensorboard = self.spec.tensorboard is not None
        errors = list(hub_types.name_errors(self.metadata.name, replicas, tensorboard=tensorboard))
        if errors:
            raise validation.ValidationError(errors)
