"""What a short TrainingJob says: the runtime it is made from, and the trainer it gives.

A platform team publishes how training runs as a runtime (:mod:`.runtime_types`); the people
who train name it in ``spec.runtimeRef`` and give only what is theirs in ``spec.trainer`` —
an image, a command, a number of nodes::

    spec:
      runtimeRef: {name: torch-distributed}
      trainer:
        image: ghcr.io/me/train:1
        command: [torchrun, train.py]
        numNodes: 4

At creation the job is expanded from its runtime (``kubetrain.operator.expansion``): the
runtime's spec, then every other field the job says, field by field, then the trainer section
(docs/api.md has the table of what each trainer field fills and how). The stored job holds the
result, so it is pinned: editing or deleting the runtime later changes no job that exists.
``runtimeRef.generation`` records the runtime's generation the job was made from.
"""

import enum
from typing import Annotated, Any, ClassVar

import attrs

from kubetrain.api import schema, validation

__all__ = [
    "PROCS_PER_NODE",
    "RUNTIME_NAME",
    "EnvVar",
    "RuntimeKind",
    "RuntimeRef",
    "Trainer",
]

# A runtime's name: a DNS subdomain, as every object's.
RUNTIME_NAME = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
PROCS_PER_NODE = r"^(auto|cpu|gpu|[1-9][0-9]{0,3})$"
ENV_NAME = r"^[-._a-zA-Z][-._a-zA-Z0-9]*$"


class RuntimeKind(enum.StrEnum):
    CLUSTER = "ClusterTrainingRuntime"
    NAMESPACED = "TrainingRuntime"


@attrs.frozen(kw_only=True, field_transformer=schema.validated)
class RuntimeRef:
    """The runtime a job (or another runtime) is made from."""

    kind: Annotated[
        RuntimeKind,
        schema.Field(
            doc="ClusterTrainingRuntime (the default: the platform team's, for every namespace) or "
            "TrainingRuntime (the job's own namespace's)."
        ),
    ] = RuntimeKind.CLUSTER
    name: Annotated[str, schema.Field(max_length=253, pattern=RUNTIME_NAME, doc="The runtime's name.")]
    namespace: Annotated[
        str | None,
        schema.Field(
            max_length=63,
            doc="Only for saying it: a TrainingRuntime is always the job's namespace's, and a "
            "ClusterTrainingRuntime has none. Any other value is refused.",
        ),
    ] = None
    generation: Annotated[
        int | None,
        schema.Field(
            minimum=1,
            doc="Set at admission: the runtime's metadata.generation the job was made from. "
            "What a job writes here is replaced.",
        ),
    ] = None

    def __str__(self) -> str:
        return f"{self.kind} {self.name}"


@attrs.frozen(kw_only=True, field_transformer=schema.validated)
class EnvVar:
    """An environment variable: a value, or (``valueFrom``) where the kubelet reads one."""

    name: Annotated[str, schema.Field(max_length=253, pattern=ENV_NAME)]
    value: Annotated[str | None, schema.Field(max_length=65536)] = None
    value_from: Annotated[
        schema.JSONObject | None,
        schema.Field(
            doc="A core/v1 EnvVarSource.", extra_schema={"x-kubernetes-preserve-unknown-fields": True}
        ),
    ] = None


@attrs.frozen(kw_only=True, field_transformer=schema.validated)
class Trainer:
    """The part of a job that is the trainer's own, filled into the runtime's replica types
    (docs/api.md: which field fills what, and how)."""

    image: Annotated[
        str | None,
        schema.Field(
            max_length=4096,
            doc="The image the training code is in: every replica type that runs the command, and "
            "every one the runtime gives no image.",
        ),
    ] = None
    command: Annotated[
        tuple[str, ...] | None,
        schema.Field(doc="Replaces the command of the replica types that run the trainer's command."),
    ] = None
    args: Annotated[
        tuple[str, ...] | None,
        schema.Field(doc="Replaces the args of the replica types that run the trainer's command."),
    ] = None
    env: Annotated[
        tuple[EnvVar, ...],
        schema.Field(
            list_map_keys=("name",),
            doc="Set in the same containers as the image, by name: a variable the runtime sets is replaced.",
        ),
    ] = ()
    num_nodes: Annotated[
        int | None,
        schema.Field(
            minimum=0, maximum=10000, doc="Replicas of the runtime's node type (trainer.replicaType)."
        ),
    ] = None
    resources_per_node: Annotated[
        schema.JSONObject | None,
        schema.Field(
            doc="limits and requests of the node type's main container, merged by resource name.",
            extra_schema={
                "x-kubernetes-preserve-unknown-fields": True,
                "properties": {
                    "limits": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                    "requests": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                },
            },
        ),
    ] = None
    procs_per_node: Annotated[
        str | None,
        schema.Field(
            pattern=PROCS_PER_NODE,
            doc="Processes per node: PyTorch's nprocPerNode (a number, auto, cpu or gpu), MPI's "
            "slotsPerWorker (a number).",
        ),
    ] = None

    cel_rules: ClassVar[tuple[schema.Rule, ...]] = ()

    @validation.cross_field
    def __attrs_post_init__(self) -> None:
        names: set[str] = set()
        for i, e in enumerate(self.env):
            if e.name in names:
                raise validation.ValidationError.at(("env", i, "name"), f"duplicate variable {e.name}")
            names.add(e.name)
        resources: Any = self.resources_per_node or {}
        for key in resources:
            if key not in ("limits", "requests"):
                raise validation.ValidationError.at(
                    ("resourcesPerNode", key), "only limits and requests may be given"
                )
