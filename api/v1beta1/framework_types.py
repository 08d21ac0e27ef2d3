"""Which framework runs the job, and that framework's typed options.

``framework.name`` is a key of the operator's framework registry. Built-in frameworks
with options have a typed block named after them (``framework.pytorch`` ...); at most
that one block may be set. Frameworks registered by third parties receive the
free-form ``framework.options`` object instead.
"""

import enum
from typing import Annotated, ClassVar

import attrs

from kubetrain.api import schema, validation

FRAMEWORK_NAME = r"^[a-z][a-z0-9-]*$"
TYPED_BLOCKS = ("tensorflow", "pytorch", "caffe2")


@attrs.frozen(kw_only=True, field_transformer=schema.validated)
class TensorFlowOptions:
    """TensorFlow options."""

    environment: Annotated[
        str, schema.Field(max_length=63, doc='The "environment" of TF_CONFIG; old Estimators need "cloud".')
    ] = "cloud"


@attrs.frozen(kw_only=True, field_transformer=schema.validated)
class ElasticPolicy:
    """torchrun elastic training: the world may grow and shrink between the bounds."""

    min_replicas: Annotated[int, schema.Field(minimum=1, doc="Fewest nodes to train with.")]
    max_replicas: Annotated[int, schema.Field(minimum=1, doc="Most nodes to train with.")]
    rdzv_backend: Annotated[
        str, schema.Field(pattern=r"^(c10d|etcd|etcd-v2|static)$", doc="Rendezvous backend.")
    ] = "c10d"
    rdzv_id: Annotated[
        str | None, schema.Field(max_length=253, doc="Rendezvous id; defaults to the job's UID.")
    ] = None
    rdzv_conf: Annotated[dict[str, str], schema.Field(doc="Extra rendezvous settings (key=value).")] = (
        attrs.field(factory=dict)
    )
    max_restarts: Annotated[int | None, schema.Field(minimum=0, doc="torchrun --max-restarts.")] = None

    cel_rules: ClassVar[tuple[schema.Rule, ...]] = (
        schema.Rule(
            cel="self.minReplicas <= self.maxReplicas",
            message="minReplicas must not exceed maxReplicas",
            field_path=".minReplicas",
        ),
    )

    @validation.cross_field
    def __attrs_post_init__(self) -> None:
        if self.min_replicas > self.max_replicas:
            raise validation.ValidationError.at("minReplicas", "minReplicas must not exceed maxReplicas")


@attrs.frozen(kw_only=True, field_transformer=schema.validated)
class PyTorchOptions:
    """PyTorch options (torchrun and elastic)."""

    nproc_per_node: Annotated[
        str | None,
        schema.Field(
            pattern=r"^(auto|cpu|gpu|[1-9][0-9]{0,3})$",
            doc="Processes per pod: a number, auto, cpu or gpu. Defaults to the GPUs requested, else 1.",
        ),
    ] = None
    elastic: ElasticPolicy | None = None


class Caffe2BackendType(enum.StrEnum):
    NONE = "none"
    REDIS = "redis"
    NFS = "nfs"
    GLOO = "gloo"


BACKEND_RULES = (
    schema.Rule(
        cel="self.type != 'redis' || has(self.redisHost)",
        message="the redis backend needs redisHost",
        field_path=".redisHost",
    ),
    schema.Rule(
        cel="self.type != 'nfs' || has(self.nfsPath)",
        message="the nfs backend needs nfsPath",
        field_path=".nfsPath",
    ),
)


def check_backend(backend_type: Caffe2BackendType, redis_host: str | None, nfs_path: str | None) -> None:
    """The Python side of :data:`BACKEND_RULES`, shared by both API versions."""
    if backend_type is Caffe2BackendType.REDIS and redis_host is None:
        raise validation.ValidationError.at("redisHost", "the redis backend needs redisHost")
    if backend_type is Caffe2BackendType.NFS and nfs_path is None:
        raise validation.ValidationError.at("nfsPath", "the nfs backend needs nfsPath")


@attrs.frozen(kw_only=True, field_transformer=schema.validated)
class Caffe2Backend:
    """Where Caffe2 workers meet: redis, an NFS path, gloo, or none (one worker)."""

    type: Caffe2BackendType
    redis_host: Annotated[str | None, schema.Field(max_length=253)] = None
    redis_port: Annotated[int | None, schema.Field(minimum=1, maximum=65535)] = None
    nfs_path: Annotated[str | None, schema.Field(max_length=4096)] = None

    cel_rules: ClassVar[tuple[schema.Rule, ...]] = BACKEND_RULES

    @validation.cross_field
    def __attrs_post_init__(self) -> None:
        check_backend(self.type, self.redis_host, self.nfs_path)


@attrs.frozen(kw_only=True, field_transformer=schema.validated)
class Caffe2Options:
    """Caffe2 options."""

    backend: Caffe2Backend | None = None


@attrs.frozen(kw_only=True, field_transformer=schema.validated)
class FrameworkSpec:
    """The framework that runs the job: a registry name and its options."""

    name: Annotated[
        str,
        schema.Field(max_length=63, pattern=FRAMEWORK_NAME, doc="Registry name, e.g. pytorch or tensorflow."),
    ]
    tensorflow: TensorFlowOptions | None = None
    pytorch: PyTorchOptions | None = None
    caffe2: Caffe2Options | None = None
    options: Annotated[
        schema.JSONObject | None,
        schema.Field(doc="Free-form options for frameworks registered by third parties."),
    ] = None

    cel_rules: ClassVar[tuple[schema.Rule, ...]] = (
        *(
            schema.Rule(
                cel=f"!has(self.{block}) || self.name == '{block}'",
                message=f"{block} options are only valid for framework {block}",
                field_path=f".{block}",
            )
            for block in TYPED_BLOCKS
        ),
        schema.Rule(
            cel=f"!has(self.options) || !(self.name in {list(TYPED_BLOCKS)})",
            message="built-in frameworks take their typed options block, not options",
            field_path=".options",
        ),
    )

    @property
    def elastic(self) -> ElasticPolicy | None:
        """The elastic policy (``pytorch.elastic``), if the job's world may change size."""
        return self.pytorch.elastic if self.pytorch is not None else None

    @validation.cross_field
    def __attrs_post_init__(self) -> None:
        errors = [
            validation.FieldError(
                path=(block,), message=f"{block} options are only valid for framework {block}"
            )
            for block in TYPED_BLOCKS
            if getattr(self, block) is not None and self.name != block
        ]
        if self.options is not None and self.name in TYPED_BLOCKS:
            errors.append(
                validation.FieldError(
                    path=("options",),
                    message="built-in frameworks take their typed options block, not options",
                )
            )
        if errors:
            raise validation.ValidationError(errors)
