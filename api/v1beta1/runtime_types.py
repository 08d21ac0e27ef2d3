"""ClusterTrainingRuntime and TrainingRuntime: how training runs, written once by a platform team.

A runtime is a template of everything a TrainingJob's spec says — the framework and its options,
replica types with their pod templates, the run, success, failure and progress policies, the
network, TensorBoard, the queue — plus what only a runtime says:

- ``trainer``: which replica type a short job's ``numNodes`` and ``resourcesPerNode`` size, and
  which replica types run its command (defaults come from the framework);
- ``accelerators``: per extended resource (``nvidia.com/gpu``), the env, host volumes and
  tolerations a container requesting it needs — the seed TfJob operator's accelerator config,
  per runtime; the operator's ``--accelerator-config`` stays the default for every job;
- ``runtimeRef``: another runtime this one builds on (its fields override that one's, by the
  job's own merge rule), so a team can publish ``torch-gpu`` as ``torch-distributed`` plus GPUs.

A ClusterTrainingRuntime serves every namespace; a TrainingRuntime, its own. Editing one changes
no job that exists: a job is expanded from its runtime once, at creation
(:mod:`.trainer_types`).
"""

from collections.abc import Mapping
from typing import Annotated, Any, ClassVar

import attrs

from kubetrain.api import meta, schema, validation
from kubetrain.api.v1beta1 import (
    framework_types,
    groupversion_info,
    policy_types,
    progress_types,
    replica_types,
    tensorboard_types,
    trainer_types,
    trainingjob_types,
)

__all__ = [
    "CLUSTER_KIND",
    "CLUSTER_PLURAL",
    "FRAMEWORK_LABEL",
    "KIND",
    "PLURAL",
    "AcceleratorProfile",
    "ClusterTrainingRuntime",
    "HostVolume",
    "RuntimeReplicaSpec",
    "RuntimeSpec",
    "TrainerPolicy",
    "TrainingRuntime",
]

CLUSTER_KIND = trainer_types.RuntimeKind.CLUSTER.value
KIND = trainer_types.RuntimeKind.NAMESPACED.value
CLUSTER_PLURAL = "clustertrainingruntimes"
PLURAL = "trainingruntimes"
# Set on every shipped runtime, as Kubeflow Trainer's trainer.kubeflow.org/framework.
FRAMEWORK_LABEL = f"{groupversion_info.GROUP}/framework"


@attrs.frozen(kw_only=True, field_transformer=schema.validated)
class HostVolume:
    """A directory of the node mounted into a container."""

    name: Annotated[str, schema.Field(max_length=63, pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")]
    host_path: Annotated[str, schema.Field(max_length=4096, min_length=1)]
    mount_path: Annotated[str, schema.Field(max_length=4096, min_length=1)]
    read_only: bool = True


@attrs.frozen(kw_only=True, field_transformer=schema.validated)
class AcceleratorProfile:
    """What a container that requests one extended resource needs: env, host volumes (the
    driver's libraries, say) and tolerations (for the nodes that have the device). A container's
    own env and mount paths win; a toleration it already has is not added twice."""

    env: Annotated[dict[str, str], schema.Field(doc="Variables set in the container.")] = attrs.field(
        factory=dict
    )
    volumes: tuple[HostVolume, ...] = ()
    tolerations: Annotated[
        tuple[schema.JSONObject, ...],
        schema.Field(doc="core/v1 Tolerations added to the pod."),
    ] = ()


@attrs.frozen(kw_only=True, field_transformer=schema.validated)
class TrainerPolicy:
    """Where a short job's ``trainer`` section goes."""

    replica_type: Annotated[
        str | None,
        schema.Field(
            pattern=replica_types.REPLICA_TYPE,
            doc="The replica type that numNodes and resourcesPerNode size; default: the framework's "
            "(Worker in every built-in framework).",
        ),
    ] = None
    command_replica_types: Annotated[
        tuple[str, ...] | None,
        schema.Field(
            items=schema.Field(pattern=replica_types.REPLICA_TYPE),
            doc="The replica types whose main container runs the trainer's command and args; default: "
            "the framework's (MPI's and Chainer's launcher; every replica type otherwise).",
        ),
    ] = None


@attrs.frozen(kw_only=True, field_transformer=schema.validated)
class RuntimeReplicaSpec:
    """A replica type as a runtime says it: a job's replica spec, every field optional, so that a
    runtime built on another may say only what it changes (the merged spec is checked whole)."""

    replicas: Annotated[int | None, schema.Field(minimum=0, maximum=10000, doc="Number of replicas.")] = None
    restart_policy: replica_types.RestartPolicy | None = None
    port: Annotated[int | None, schema.Field(minimum=1, maximum=65535)] = None
    template: Annotated[
        schema.JSONObject | None,
        schema.Field(
            doc="The pod template (PodTemplateSpec) of every replica.",
            extra_schema={"x-kubernetes-preserve-unknown-fields": True},
        ),
    ] = attrs.field(default=None, validator=attrs.validators.optional(replica_types.check_template))


# One field of a runtime's spec per field of a job's, for the same things.
@attrs.frozen(kw_only=True, field_transformer=schema.validated)
class RuntimeSpec:
    """How training runs: a TrainingJob's spec as the jobs' defaults, and the trainer's place."""

    runtime_ref: Annotated[
        trainer_types.RuntimeRef | None,
        schema.Field(doc="A runtime this one builds on: this one's fields override it, as a job's do."),
    ] = None
    framework: framework_types.FrameworkSpec | None = None
    replica_specs: Annotated[
        dict[str, RuntimeReplicaSpec] | None,
        schema.Field(
            max_properties=replica_types.MAX_REPLICA_TYPES,
            keys=schema.Field(pattern=replica_types.REPLICA_TYPE),
            doc="Replica type to its replicas, as in a job.",
        ),
    ] = None
    run_policy: trainingjob_types.RunPolicy | None = None
    success_policy: policy_types.SuccessPolicy | None = None
    failure_policy: policy_types.FailurePolicy | None = None
    tensorboard: tensorboard_types.TensorBoardSpec | None = None
    network: trainingjob_types.NetworkSpec | None = None
    progress: progress_types.ProgressSpec | None = None
    trainer: TrainerPolicy = attrs.field(factory=TrainerPolicy)
    accelerators: Annotated[
        dict[str, AcceleratorProfile],
        schema.Field(
            max_properties=64,
            keys=schema.Field(pattern=r"^([a-z0-9.-]+/)?[A-Za-z0-9._-]+$"),
            doc="Extended resource name (nvidia.com/gpu) to what a container requesting it needs.",
        ),
    ] = attrs.field(factory=dict)

    cel_rules: ClassVar[tuple[schema.Rule, ...]] = (
        schema.Rule(
            cel="has(self.runtimeRef) || (has(self.framework) && has(self.replicaSpecs))",
            message="a runtime names its framework and replicaSpecs, unless it builds on another (runtimeRef)",
        ),
    )

    @validation.cross_field
    def __attrs_post_init__(self) -> None:
        if self.runtime_ref is None and (self.framework is None or not self.replica_specs):
            missing = "framework" if self.framework is None else "replicaSpecs"
            raise validation.ValidationError.at(
                missing, "required unless the runtime builds on another (runtimeRef)"
            )


_PRINTER_COLUMNS: tuple[Mapping[str, Any], ...] = (
    {"name": "Framework", "type": "string", "jsonPath": ".spec.framework.name"},
    {"name": "Based-On", "type": "string", "jsonPath": ".spec.runtimeRef.name", "priority": 1},
    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
)


@attrs.frozen(kw_only=True, field_transformer=schema.validated)
class ClusterTrainingRuntime:
    """How training runs, for jobs of every namespace (written by a platform team)."""

    api_version: str = attrs.field(
        default=groupversion_info.API_VERSION, validator=validation.constant(groupversion_info.API_VERSION)
    )
    kind: str = attrs.field(default=CLUSTER_KIND, validator=validation.constant(CLUSTER_KIND))
    metadata: meta.ObjectMeta = attrs.field(factory=meta.ObjectMeta)
    spec: RuntimeSpec

    printer_columns: ClassVar[tuple[Mapping[str, Any], ...]] = _PRINTER_COLUMNS


@attrs.frozen(kw_only=True, field_transformer=schema.validated)
class TrainingRuntime:
    """How training runs, for the jobs of one namespace."""

    api_version: str = attrs.field(
        default=groupversion_info.API_VERSION, validator=validation.constant(groupversion_info.API_VERSION)
    )
    kind: str = attrs.field(default=KIND, validator=validation.constant(KIND))
    metadata: meta.ObjectMeta = attrs.field(factory=meta.ObjectMeta)
    spec: RuntimeSpec

    printer_columns: ClassVar[tuple[Mapping[str, Any], ...]] = _PRINTER_COLUMNS
