"""training.kubetrain.dev/v1alpha1 — the legacy, list-shaped TrainingJob.

Served so that manifests written for the first operators keep working; stored as
v1beta1 through lossless conversion (see ``trainingjob_conversion``).
"""

from kubetrain.api.v1alpha1.groupversion_info import API_VERSION, GROUP, KIND, PLURAL, VERSION
from kubetrain.api.v1alpha1.trainingjob_types import (
    Backend,
    ChiefSpec,
    ReplicaSpec,
    ReplicaStatus,
    TerminationPolicy,
    TrainingJob,
    TrainingJobSpec,
    TrainingJobStatus,
)

__all__ = [
    "API_VERSION",
    "GROUP",
    "KIND",
    "PLURAL",
    "VERSION",
    "Backend",
    "ChiefSpec",
    "ReplicaSpec",
    "ReplicaStatus",
    "TerminationPolicy",
    "TrainingJob",
    "TrainingJobSpec",
    "TrainingJobStatus",
]
