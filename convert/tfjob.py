"""TfJob, the first TensorFlow operator's kind, as a TrainingJob of framework ``tensorflow``.

Three groups served it, each a little richer than the one before: ``mlkube.io/v1beta1``
(``TfJob``), ``tensorflow.org/v1alpha1`` (``TfJob``; adds ``tfImage``, ``terminationPolicy``
and ``IsDefaultPS``) and ``kubeflow.org/v1alpha1`` (``TFJob``; adds ``schedulerName``). A
document lists its replicas: ``replicas`` (default 1), ``template``, ``tfPort`` (default
2222) and ``tfReplicaType`` (``MASTER``, ``WORKER`` or ``PS``, default ``MASTER``), which
become ``replicaSpecs.Master``, ``Worker`` and ``PS`` with their port.

What changes, and is said so:

- TF_CONFIG names the MASTER's task ``chief``: TensorFlow 2 refuses ``master`` (see
  :mod:`kubetrain.operator.frameworks.tensorflow`). Every MASTER gets a note.
- The old operator decided the job by the MASTER's exit code — 1-127 permanent, 128-255
  retryable — and restarted the others whatever their code. Every replica gets
  ``restartPolicy: ExitCode``, that same classification, now for every replica; a
  template's own restart policy is a note.
- A PS without a template (or with ``IsDefaultPS``) ran the operator's own gRPC server on
  ``tfImage``. kubetrain has no default replica, so the converter writes that server as
  the PS template: ``tfImage`` running TensorFlow's ``Server`` from TF_CONFIG.
- ``tensorboard`` becomes ``spec.tensorboard`` when its ``logDir`` lies on a volume the
  replicas share — kubetrain mounts that volume itself, so ``volumes`` and
  ``volumeMounts`` are notes — and is a note, with the reason, when it does not.
- ``terminationPolicy.chief`` becomes a ``successPolicy`` naming that replica, unless it is
  the MASTER, which kubetrain's TensorFlow decides by anyway. ``schedulerName`` goes
  into every template, where the old operator put it.

Written back (``--to``), a TrainingJob must use the kind's replica types, ExitCode
restarts and nothing the kind has no field for (:func:`seeds.expressible`).
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Iterator, Mapping
from typing import Any

import attrs

from kubetrain.api import v1beta1, validation
from kubetrain.api.v1beta1 import tensorboard_types
from kubetrain.convert import kinds, reader, seeds
from kubetrain.operator.frameworks import tensorflow

__all__ = ["DEFAULT_PS_IMAGE", "KINDS", "PS_SERVER", "default_ps_template"]

TYPES = ("MASTER", "WORKER", "PS")
DEFAULT_PORT = 2222
# tensorflow.org/v1alpha1's DefaultTFImage, the default parameter server's image.
DEFAULT_PS_IMAGE = "tensorflow/tensorflow:1.3.0"
# The operator's grpc_tensorflow_server.py, reading TF_CONFIG instead of flags;
# tf.distribute.Server on TensorFlow 1.14 and later, tf.train.Server before.
PS_SERVER = (
    "import json, os; import tensorflow as tf; "
    "c = json.loads(os.environ['TF_CONFIG']); "
    "s = getattr(getattr(tf, 'distribute', None), 'Server', None) or tf.train.Server; "
    "s(tf.train.ClusterSpec(c['cluster']), job_name=c['task']['type'], "
    "task_index=c['task']['index']).join()"
)
_RESTART = v1beta1.RestartPolicy.EXIT_CODE
_WHY = f"restartPolicy {seeds.EXIT_CODE}"
_FW = tensorflow.FRAMEWORK


@attrs.frozen(kw_only=True)
class _Version:
    """What one group's TfJob had beyond the first."""

    api_version: str
    kind: str
    termination: bool  # terminationPolicy
    tf_image: bool  # tfImage, and IsDefaultPS on a replica
    scheduler_name: bool


_MLKUBE = _Version(
    api_version="mlkube.io/v1beta1", kind="TfJob", termination=False, tf_image=False, scheduler_name=False
)
_TENSORFLOW = _Version(
    api_version="tensorflow.org/v1alpha1", kind="TfJob", termination=True, tf_image=True, scheduler_name=False
)
_KUBEFLOW = _Version(
    api_version="kubeflow.org/v1alpha1", kind="TFJob", termination=True, tf_image=True, scheduler_name=True
)


def default_ps_template(image: str | None) -> dict[str, Any]:
    """The parameter server the old operator ran for a PS without a template."""
    return {
        "spec": {
            "containers": [
                {
                    "name": "tensorflow",
                    "image": image or DEFAULT_PS_IMAGE,
                    "command": ["python", "-c", PS_SERVER],
                }
            ]
        }
    }


# --- TfJob -> TrainingJob -----------------------------------------------------------------


def _to_job(version: _Version, doc: reader.Reader) -> dict[str, Any]:
    meta, spec = kinds.opening(doc)
    if spec is None:
        return {}
    runtime = seeds.runtime_id(spec)
    tf_image = spec.text("tfImage") if version.tf_image else None
    scheduler = spec.text("schedulerName") if version.scheduler_name else None
    if not spec.has("replicaSpecs"):
        spec.error("required: the list of replicas", "replicaSpecs")
    entries = [_replica(version, r, tf_image, scheduler) for r in spec.items("replicaSpecs")]
    replicas = seeds.unique(spec, (r for r, _ in entries))
    used_image = any(default for _, default in entries)
    success = _success(version, spec, replicas)
    board = _tensorboard(spec, replicas, tf_image)
    used_image = used_image or (board is not None and tf_image is not None)
    if tf_image is not None and not used_image:
        spec.note(
            "not carried over: the operator ran it only as the default parameter server and as "
            "TensorBoard, and this job has neither",
            "tfImage",
        )
    spec.finish()
    return seeds.document(
        metadata=meta,
        framework={"name": _FW.name},
        runtime_id=runtime,
        replicas=replicas,
        restart_policy=_RESTART,
        success=success,
        tensorboard=board,
    )


def _replica(
    version: _Version, r: reader.Reader, tf_image: str | None, scheduler: str | None
) -> tuple[seeds.Replica | None, bool]:
    """One entry of replicaSpecs, and whether it runs the default parameter server."""
    old = r.text("tfReplicaType", choices=TYPES, default="MASTER", ignore_case=True)
    count = r.integer("replicas", default=1, minimum=0) or 0
    port = r.integer("tfPort", default=DEFAULT_PORT, minimum=1, maximum=65535)
    is_default_ps = r.take("IsDefaultPS") if version.tf_image else None
    if is_default_ps is not None and not isinstance(is_default_ps, bool):
        r.error(f"expected true or false, got {is_default_ps!r}", "IsDefaultPS")
    if old is None:
        r.rest()  # the type is wrong: the rest of the entry means nothing to check
        return None, False
    if old == "MASTER" and count != 1:
        r.error(f"a MASTER runs exactly 1 replica, not {count}", "replicas")
    if old == "MASTER":
        r.note(
            "MASTER becomes replica type Master, whose TF_CONFIG task type is chief, not master "
            "(TensorFlow 2 refuses master): code that looks for master in TF_CONFIG must look for chief",
            "tfReplicaType",
        )
    default_ps = old == "PS" and (is_default_ps is True or not r.has("template"))
    if default_ps:
        if r.has("template"):
            r.error("IsDefaultPS runs the operator's parameter server: drop the template or IsDefaultPS")
        template: dict[str, Any] | None = default_ps_template(tf_image)
        r.note(
            f"no template: kubetrain has no default parameter server, so the job gets the one the "
            f"operator ran: {tf_image or DEFAULT_PS_IMAGE} serving TensorFlow's gRPC server from TF_CONFIG"
        )
    else:
        template = seeds.template(r, container=_FW.container, restart_policy=_RESTART, why=_WHY)
        if template is None and not r.has("template"):
            r.error(f"required: the pod template of the {old} replicas", "template")
    r.finish()
    if template is None:
        return None, default_ps
    if scheduler is not None:
        template["spec"]["schedulerName"] = scheduler
    return (
        seeds.Replica(
            type=seeds.hub_type(old),
            path=r.path,
            replicas=count,
            port=None if port == _FW.port else port,
            template=template,
        ),
        default_ps,
    )


def _success(
    version: _Version, spec: reader.Reader, replicas: Mapping[str, seeds.Replica]
) -> tuple[str, int] | None:
    """The chief, when it is not the replica kubetrain's TensorFlow decides by anyway."""
    chief = seeds.chief(spec, replicas) if version.termination else None
    # Any error so far (a bad chief, a MASTER that did not read) may explain a missing MASTER.
    if chief is None and not spec.findings.errors:
        if "Master" not in replicas:
            also = " (or terminationPolicy.chief naming another replica)" if version.termination else ""
            spec.error(f"a TfJob needs a MASTER{also}: its exit decided the job", "replicaSpecs")
            return None
        chief = ("Master", 0)
    if chief is None:
        return None
    default = _FW.success(_spec_of(replicas)).targets[0]
    return None if (default.replica_type, default.index) == chief else chief


def _spec_of(replicas: Mapping[str, seeds.Replica]) -> v1beta1.TrainingJobSpec:
    """Enough of a TrainingJob spec to ask the framework for its default success policy."""
    return v1beta1.TrainingJobSpec(
        framework=v1beta1.FrameworkSpec(name=_FW.name),
        replica_specs={
            k: v1beta1.ReplicaSpec(replicas=r.replicas, template=r.template) for k, r in replicas.items()
        },
    )


def _tensorboard(
    spec: reader.Reader, replicas: Mapping[str, seeds.Replica], tf_image: str | None
) -> dict[str, Any] | None:
    tb = spec.child("tensorboard")
    if tb is None:
        return None
    log_dir = tb.text("logDir")
    image = tb.text("image")
    volumes = tb.take("volumes")
    mounts = tb.take("volumeMounts")
    service_type = tb.text("serviceType")
    tb.finish()
    if log_dir is None:
        tb.error("required: the directory TensorBoard reads", "logDir")
        return None
    templates = [(k, r.template) for k, r in replicas.items()]
    if not log_dir.startswith("/"):
        tb.note(
            f"not carried over: kubetrain's TensorBoard reads logDir from a volume the replicas share, "
            f"and {log_dir} is not a path in them; run TensorBoard on it yourself"
        )
        return None
    problems = tensorboard_types.log_dir_errors(log_dir, templates)
    if problems:
        hint = (
            "; mount the volume of tensorboard.volumes in the replicas at logDir to keep TensorBoard"
            if volumes
            else ""
        )
        tb.note("not carried over: " + "; ".join(p.message for p in problems) + hint)
        return None
    shared = tensorboard_types.shared_volume(log_dir, templates)
    if volumes or mounts:
        name = shared.mount.get("name") if shared is not None else None
        tb.note(
            f"not carried over: kubetrain mounts the replicas' volume {name!r} under logDir "
            "read-only in TensorBoard's pod",
            "volumes" if volumes else "volumeMounts",
        )
    if service_type is not None and service_type != "ClusterIP":
        tb.note(
            f"{service_type} not carried over: kubetrain's TensorBoard Service is ClusterIP; "
            "reach it with `kubetrain tensorboard JOB` or expose it yourself",
            "serviceType",
        )
    out: dict[str, Any] = {"logDir": log_dir}
    if image or tf_image:
        out["image"] = image or tf_image
    return out


# --- TrainingJob -> TfJob -----------------------------------------------------------------


def _from_job(version: _Version, job: v1beta1.TrainingJob) -> dict[str, Any]:
    seeds.raise_if(_inexpressible(version, job))
    spec: dict[str, Any] = {}
    if job.spec.runtime_id is not None:
        spec["RuntimeId"] = job.spec.runtime_id
    items = []
    for key in _FW.order(job.spec.replica_specs):
        r = job.spec.replica_specs[key]
        item: dict[str, Any] = {"replicas": r.replicas, "tfReplicaType": seeds.old_type(key)}
        if (r.port or DEFAULT_PORT) != DEFAULT_PORT:
            item["tfPort"] = r.port
        item["template"] = copy.deepcopy(dict(r.template))
        items.append(item)
    spec["replicaSpecs"] = items
    chief = seeds.single_target(job, _FW)
    if version.termination and chief is not None and chief != ("Master", 0):
        spec["terminationPolicy"] = {
            "chief": {"replicaName": seeds.old_type(chief[0]), "replicaIndex": chief[1]}
        }
    board = job.spec.tensorboard
    if board is not None:
        spec["tensorboard"] = {"logDir": board.log_dir}
        if board.image is not None:
            if version.tf_image:
                spec["tfImage"] = board.image
            else:
                spec["tensorboard"]["image"] = board.image
    # apiVersion first, as people write it; document.back sets the one asked for.
    return {
        "apiVersion": version.api_version,
        "kind": version.kind,
        "metadata": seeds.metadata_of(job),
        "spec": spec,
    }


def _inexpressible(version: _Version, job: v1beta1.TrainingJob) -> Iterator[validation.FieldError]:
    name = f"{version.api_version} {version.kind}"
    yield from seeds.expressible(
        job, name, _FW, types=("Master", "Worker", "PS"), restart_policies=(_RESTART,), tensorboard=True
    )
    options = job.spec.framework.tensorflow
    if options is not None and options != v1beta1.TensorFlowOptions():
        yield validation.FieldError(
            path=("spec", "framework", "tensorflow", "environment"),
            message=f"{name} always sets TF_CONFIG's environment to cloud",
        )
    chief = seeds.single_target(job, _FW)
    if chief is None:
        yield validation.FieldError(
            path=("spec", "successPolicy"), message=f"{name} decides the job by one replica only"
        )
    elif not version.termination and chief != ("Master", 0):
        yield validation.FieldError(
            path=("spec", "successPolicy"),
            message=f"{name} decides the job by its MASTER only (terminationPolicy came later)",
        )
    master = job.spec.replica_specs.get("Master")
    if master is not None and master.replicas != 1:
        yield validation.FieldError(
            path=("spec", "replicaSpecs", "Master", "replicas"), message=f"{name} runs exactly 1 MASTER"
        )


def _kind(version: _Version) -> kinds.Kind:
    return kinds.Kind(
        kind=version.kind,
        api_versions=(version.api_version,),
        to_job=functools.partial(_to_job, version),
        from_job=functools.partial(_from_job, version),
        spellings=tuple({"TfJob", "TFJob"} - {version.kind}),
    )


KINDS: tuple[kinds.Kind, ...] = tuple(_kind(v) for v in (_MLKUBE, _TENSORFLOW, _KUBEFLOW))
