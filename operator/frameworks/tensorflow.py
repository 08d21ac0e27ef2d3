"""TensorFlow: Chief or Master, Worker, PS and Evaluator, wired through TF_CONFIG.

The main container (``tensorflow``) of every replica gets ``TF_CONFIG``::

    {"cluster": {"chief": ["tj-chief-0.ns.svc:2222"], "worker": [...], "ps": [...]},
     "task": {"type": "worker", "index": 0},
     "environment": "cloud"}

Cluster keys are the lower-case replica types, except that a ``Master`` (the TfJob name)
is the ``chief``: TensorFlow 2's distribution strategies refuse a ``master`` task (only
TF1 Estimators, removed in TF 2.16, knew it) — found by running TensorFlow's own
cluster resolver and MultiWorkerMirroredStrategy on this env. The evaluator is not a member of the
training cluster, so it appears only in its own ``task``. ``environment`` is "cloud"
unless ``framework.tensorflow.environment`` says otherwise, because old Estimators
require it. Without a success policy, the chief (or master) decides the job's success,
else worker 0.
"""

import json
from collections.abc import Iterator, Mapping

from kubetrain.api import v1beta1, validation
from kubetrain.operator.frameworks import framework

__all__ = ["FRAMEWORK", "task_type", "tf_config"]

EVALUATOR = "Evaluator"


def task_type(replica_type: str) -> str:
    """The TF_CONFIG task type of a replica type."""
    lower = replica_type.lower()
    return "chief" if lower == "master" else lower


def tf_config(world: framework.World, replica: framework.Replica) -> dict[str, object]:
    cluster: dict[str, list[str]] = {}
    for r in world.replicas:
        if r.type.lower() != EVALUATOR.lower():
            cluster.setdefault(task_type(r.type), []).append(f"{r.host}:{r.port}")
    options = world.job.spec.framework.tensorflow or v1beta1.TensorFlowOptions()
    return {
        "cluster": cluster,
        "task": {"type": task_type(replica.type), "index": replica.index},
        "environment": options.environment,
    }


def _env(world: framework.World, replica: framework.Replica) -> Mapping[str, str]:
    return {"TF_CONFIG": json.dumps(tf_config(world, replica), separators=(",", ":"))}


def _success(spec: v1beta1.TrainingJobSpec) -> v1beta1.SuccessPolicy:
    keys = {k.lower(): k for k in spec.replica_specs}
    decider = keys.get("chief") or keys.get("master") or keys.get("worker") or next(iter(spec.replica_specs))
    return v1beta1.SuccessPolicy(targets=(v1beta1.SuccessTarget(replica_type=decider, index=0),))


def _rules(job: v1beta1.TrainingJob) -> Iterator[validation.FieldError]:
    keys = {k.lower() for k, s in job.spec.replica_specs.items() if s.replicas > 0}
    if {"chief", "master"} <= keys:
        yield validation.FieldError(
            path=("spec", "replicaSpecs"), message="tensorflow takes a Chief or a Master, not both"
        )
    if not keys - {"ps", EVALUATOR.lower()}:
        yield validation.FieldError(
            path=("spec", "replicaSpecs"), message="tensorflow needs a Chief, a Master or a Worker"
        )


FRAMEWORK = framework.Framework(
    name="tensorflow",
    replica_types=(
        framework.ReplicaType(name="Chief", max_replicas=1, master=True),
        framework.ReplicaType(name="Master", max_replicas=1, master=True),
        framework.ReplicaType(name="Worker"),
        framework.ReplicaType(name="PS"),
        framework.ReplicaType(name=EVALUATOR, max_replicas=1),
    ),
    container="tensorflow",
    port=2222,
    port_name="tfjob-port",
    restart_policy=v1beta1.RestartPolicy.ON_FAILURE,
    # Parameter-server training survives the loss of one worker; recreate just that pod.
    restart_scope=v1beta1.RestartScope.POD,
    success=_success,
    env=_env,
    extra_rules=_rules,
)
