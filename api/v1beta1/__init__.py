"""training.kubetrain.dev/v1beta1 — the hub and storage version of TrainingJob.

Replica types are a map (``replicaSpecs: {Worker: {...}}``) as in the Kubeflow v1
operators, with typed framework options, a run policy, and success and failure
policies that classify failures and budget restarts per class, and an optional TensorBoard.
"""

from kubetrain.api.v1beta1 import trainingjob_defaults
from kubetrain.api.v1beta1.checkpoint_types import (
    CheckpointRecord,
    CheckpointRequest,
    CheckpointSpec,
    CheckpointStatus,
    StopReason,
)
from kubetrain.api.v1beta1.framework_types import (
    Caffe2Backend,
    Caffe2BackendType,
    Caffe2Options,
    ElasticPolicy,
    FrameworkSpec,
    PyTorchOptions,
    TensorFlowOptions,
)
from kubetrain.api.v1beta1.goodput_types import GoodputStatus, LostSeconds
from kubetrain.api.v1beta1.groupversion_info import API_VERSION, GROUP, KIND, PLURAL, VERSION
from kubetrain.api.v1beta1.policy_types import (
    Budget,
    Budgets,
    ExitCodeMatch,
    ExitCodeOperator,
    ExitCodeRange,
    FailureAction,
    FailureClass,
    FailurePolicy,
    FailureRule,
    RestartBackoff,
    RestartMethod,
    RestartScope,
    SuccessOperator,
    SuccessPolicy,
    SuccessTarget,
)
from kubetrain.api.v1beta1.progress_types import ProgressSpec, ProgressStatus
from kubetrain.api.v1beta1.replica_types import ReplicaSpec, RestartPolicy
from kubetrain.api.v1beta1.runtime_types import (
    AcceleratorProfile,
    ClusterTrainingRuntime,
    HostVolume,
    RuntimeSpec,
    TrainerPolicy,
    TrainingRuntime,
)
from kubetrain.api.v1beta1.status_types import (
    AvoidedNode,
    ConditionType,
    CountedFailures,
    FailureRecord,
    JobState,
    Refusal,
    ReplicaStatus,
    RestartCounts,
    TrainingJobStatus,
    state_of,
)
from kubetrain.api.v1beta1.tensorboard_types import TensorBoardSpec, TensorBoardStatus
from kubetrain.api.v1beta1.trainer_types import EnvVar, RuntimeKind, RuntimeRef, Trainer
from kubetrain.api.v1beta1.trainingjob_types import (
    CleanPodPolicy,
    HostNames,
    NetworkSpec,
    RunPolicy,
    SchedulingPolicy,
    TrainingJob,
    TrainingJobSpec,
)

__all__ = [
    "API_VERSION",
    "GROUP",
    "KIND",
    "PLURAL",
    "VERSION",
    "AcceleratorProfile",
    "AvoidedNode",
    "Budget",
    "Budgets",
    "Caffe2Backend",
    "Caffe2BackendType",
    "Caffe2Options",
    "CheckpointRecord",
    "CheckpointRequest",
    "CheckpointSpec",
    "CheckpointStatus",
    "CleanPodPolicy",
    "ClusterTrainingRuntime",
    "ConditionType",
    "CountedFailures",
    "ElasticPolicy",
    "EnvVar",
    "ExitCodeMatch",
    "ExitCodeOperator",
    "ExitCodeRange",
    "FailureAction",
    "FailureClass",
    "FailurePolicy",
    "FailureRecord",
    "FailureRule",
    "FrameworkSpec",
    "GoodputStatus",
    "HostNames",
    "HostVolume",
    "JobState",
    "LostSeconds",
    "NetworkSpec",
    "ProgressSpec",
    "ProgressStatus",
    "PyTorchOptions",
    "Refusal",
    "ReplicaSpec",
    "ReplicaStatus",
    "RestartBackoff",
    "RestartCounts",
    "RestartMethod",
    "RestartPolicy",
    "RestartScope",
    "RunPolicy",
    "RuntimeKind",
    "RuntimeRef",
    "RuntimeSpec",
    "SchedulingPolicy",
    "StopReason",
    "SuccessOperator",
    "SuccessPolicy",
    "SuccessTarget",
    "TensorBoardSpec",
    "TensorBoardStatus",
    "TensorFlowOptions",
    "Trainer",
    "TrainerPolicy",
    "TrainingJob",
    "TrainingJobSpec",
    "TrainingJobStatus",
    "TrainingRuntime",
    "state_of",
    "trainingjob_defaults",
]
