"""Kubeflow Training Operator v1's TFJob, PyTorchJob, MXJob, XGBoostJob, PaddleJob and JAXJob.

Each kind is a :class:`~kubetrain.convert.kubeflowjob.Flavour` of the shape they share
(:mod:`kubetrain.convert.kubeflowjob` reads and writes it) plus its own fields:

- TFJob: ``successPolicy: AllWorkers`` (without a Chief or Master) is a success policy
  over every Worker. TF_CONFIG differs from Kubeflow's on purpose, and notes say where:
  a ``Master``'s task is ``chief`` (TensorFlow 2 refuses ``master``), the evaluator is
  not a member of the cluster, and a one-replica job gets a TF_CONFIG too.
  ``enableDynamicWorker`` (a sparse cluster spec) is not carried over. tf-operator's
  v1beta1 and v1beta2 TFJob, the same map with the run policy in the spec, are read too.
- PyTorchJob: :mod:`kubetrain.convert.pytorchjob`.
- MXJob: ``MXTrain`` only — a single Worker is kubetrain's ``local`` mode, a Scheduler
  makes it ``dist``; MXTune (TVM auto-tuning) has no counterpart and is refused.
- XGBoostJob and JAXJob: nothing of their own.
- PaddleJob: ``elasticPolicy`` is not carried over (kubetrain runs its Workers at a
  fixed count).

Kubeflow's default restart policy is written out where kubetrain's framework has another
(Never for TFJob, MXJob, XGBoostJob, JAXJob; OnFailure for PaddleJob).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from kubetrain.api import v1beta1
from kubetrain.convert import kinds, kubeflowjob, pytorchjob, reader

__all__ = ["JAXJOB", "KINDS", "MXJOB", "PADDLEJOB", "TFJOB", "XGBOOSTJOB"]

GROUP = kubeflowjob.GROUP
V1 = f"{GROUP}/v1"


def _tfjob(doc: reader.Reader, *, legacy: bool) -> dict[str, Any]:
    r = kubeflowjob.begin(doc, TFJOB)
    success = r.spec.text("successPolicy", choices=("", "AllWorkers"))
    chief = [t for t in ("Chief", "Master") if t in r.replicas]
    if success == "AllWorkers" and chief:
        r.spec.note(
            f"not carried over: with a {chief[0]} it decides the job's success, in Kubeflow too",
            "successPolicy",
        )
    elif success == "AllWorkers":
        r.success_policy = {"operator": "All", "targets": [{"replicaType": "Worker"}]}
    if r.spec.truth("enableDynamicWorker"):
        r.spec.note(
            "not carried over: TF_CONFIG lists every worker (no sparse cluster spec)", "enableDynamicWorker"
        )
    if legacy and r.spec.text("tfRpcLayer"):
        r.spec.note("not carried over: kubetrain's TF_CONFIG has no rpc_layer", "tfRpcLayer")
    if "Master" in r.paths:
        r.note(
            r.paths["Master"],
            "TF_CONFIG names this replica's task 'chief', not 'master' as Kubeflow did (TensorFlow 2 "
            "refuses a 'master'); its host is still {job}-master-0",
        )
    if "Evaluator" in r.paths:
        r.note(
            r.paths["Evaluator"],
            "TF_CONFIG's cluster leaves the evaluator out, as TensorFlow expects (Kubeflow listed it); "
            "its own task is still type 'evaluator'",
        )
    if sum(r.count(t) for t in r.replicas) == 1:
        r.spec.note(
            "Kubeflow set no TF_CONFIG for a job of one replica; kubetrain sets one (a cluster of one)",
            TFJOB.specs_field,
        )
    else:
        kubeflowjob.env_notes(r, dict.fromkeys(r.replicas, ("TF_CONFIG",)), {})
    return r.finish()


def _mxjob(doc: reader.Reader) -> dict[str, Any]:
    r = kubeflowjob.begin(doc, MXJOB)
    mode = r.spec.text("jobMode", choices=("MXTrain", "MXTune"))
    if mode == "MXTune":
        r.spec.error(
            "MXTune (TVM auto-tuning) has no kubetrain counterpart: kubetrain's mxnet runs ps-lite "
            "training (Scheduler, Server, Worker)",
            "jobMode",
        )
    counted = {t for t in r.replicas if r.count(t) > 0}
    if counted == {"Worker"} and r.count("Worker") == 1:
        r.framework["options"] = {"mode": "local"}
    env = {t: (*MX_ENV, "DMLC_WORKER_ID") if t == "Worker" else MX_ENV for t in r.replicas}
    kubeflowjob.env_notes(r, env, MX_WHY)
    return r.finish()


# Kubeflow's env of every MXJob replica (pkg/controller.v1/mxnet/mxnet.go); Workers add DMLC_WORKER_ID.
MX_ENV = (
    "MX_CONFIG",
    "DMLC_PS_ROOT_PORT",
    "DMLC_PS_ROOT_URI",
    "DMLC_NUM_SERVER",
    "DMLC_NUM_WORKER",
    "DMLC_ROLE",
    "DMLC_USE_KUBERNETES",
)
MX_WHY = {
    "DMLC_PS_ROOT_PORT": "one Worker trains alone (mode local), without a Scheduler; Kubeflow set them empty and 0",
    "DMLC_PS_ROOT_URI": "one Worker trains alone (mode local), without a Scheduler; Kubeflow set them empty and 0",
    "DMLC_WORKER_ID": "BytePS reads it",
}


def _xgboostjob(doc: reader.Reader) -> dict[str, Any]:
    r = kubeflowjob.begin(doc, XGBOOSTJOB)
    # pkg/controller.v1/xgboost/xgboost.go
    env: tuple[str, ...] = ("MASTER_PORT", "MASTER_ADDR", "WORLD_SIZE", "RANK", "PYTHONUNBUFFERED")
    if sum(r.count(t) for t in r.replicas) > 1:
        env = (*env, "WORKER_PORT", "WORKER_ADDRS")
    kubeflowjob.env_notes(r, dict.fromkeys(r.replicas, env), {})
    return r.finish()


def _paddlejob(doc: reader.Reader) -> dict[str, Any]:
    r = kubeflowjob.begin(doc, PADDLEJOB)
    r.spec.drop(
        "not carried over: kubetrain runs a PaddleJob's Workers at a fixed count (replicas change "
        "while the job is suspended); no HorizontalPodAutoscaler is created",
        "elasticPolicy",
    )
    # pkg/controller.v1/paddlepaddle/envvar.go: the rendezvous (Master 0 in PS mode, else
    # Worker 0) learns its own IP as POD_IP_DUMMY; in PS mode each pod is one server or trainer.
    ps = "Master" in r.replicas
    common: tuple[str, ...] = ("PYTHONUNBUFFERED", "PADDLE_JOB_ID", "PADDLE_NNODES", "PADDLE_MASTER")
    env = dict.fromkeys(r.replicas, common)
    rendezvous = "Master" if ps else "Worker"
    if rendezvous in env:
        env[rendezvous] = (*env[rendezvous], "POD_IP_DUMMY")
    if ps:
        for t in env:
            env[t] = (*env[t], "PADDLE_SERVER_NUM" if t == "Master" else "PADDLE_TRAINER_NUM")
    why = {
        "POD_IP_DUMMY": "the rendezvous replica's PADDLE_MASTER is 127.0.0.1:port instead of $(POD_IP_DUMMY):port"
    }
    kubeflowjob.env_notes(r, env, why)
    return r.finish()


def _jaxjob(doc: reader.Reader) -> dict[str, Any]:
    r = kubeflowjob.begin(doc, JAXJOB)
    # pkg/controller.v1/jax/envvar.go
    env = ("PYTHONUNBUFFERED", "COORDINATOR_PORT", "COORDINATOR_ADDRESS", "NUM_PROCESSES", "PROCESS_ID")
    kubeflowjob.env_notes(r, dict.fromkeys(r.replicas, env), {})
    return r.finish()


def _write_tfjob(job: v1beta1.TrainingJob, out: dict[str, Any], problems: kubeflowjob.Problems) -> None:
    spec = job.spec
    options = spec.framework.tensorflow
    if options is not None and options.environment != "cloud":
        problems.append(
            kubeflowjob.problem(
                ("framework", "tensorflow", "environment"), "Kubeflow's TF_CONFIG environment is cloud"
            )
        )
    success = spec.success_policy
    workers = v1beta1.SuccessPolicy(targets=(v1beta1.SuccessTarget(replica_type="Worker"),))
    chief = any(k.lower() in ("chief", "master") for k in spec.replica_specs)
    if success == workers and not chief:
        out["spec"]["successPolicy"] = "AllWorkers"
    elif success is not None and success != TFJOB.fw.success(spec):
        problems.append(
            kubeflowjob.problem(
                ("successPolicy",), "TFJob's success is its chief's, worker 0's, or AllWorkers"
            )
        )


def _write_mxjob(job: v1beta1.TrainingJob, out: dict[str, Any], problems: kubeflowjob.Problems) -> None:
    out["spec"]["jobMode"] = "MXTrain"


# --- the kinds -------------------------------------------------------------------------------

TFJOB = kubeflowjob.Flavour(
    kind="TFJob",
    framework="tensorflow",
    specs_field="tfReplicaSpecs",
    types=("Chief", "Master", "Worker", "PS", "Evaluator"),
    restart_policy=v1beta1.RestartPolicy.NEVER,
    port_name="tfjob-port",
    env_everywhere=False,  # TF_CONFIG went to the tensorflow container only
)
MXJOB = kubeflowjob.Flavour(
    kind="MXJob",
    framework="mxnet",
    specs_field="mxReplicaSpecs",
    types=("Scheduler", "Server", "Worker"),
    restart_policy=v1beta1.RestartPolicy.NEVER,
    port_name="mxjob-port",
    unsupported={
        t: f"{t} is a replica type of MXTune (TVM auto-tuning), which has no kubetrain counterpart"
        for t in ("TunerTracker", "TunerServer", "Tuner")
    },
)
XGBOOSTJOB = kubeflowjob.Flavour(
    kind="XGBoostJob",
    framework="xgboost",
    specs_field="xgbReplicaSpecs",
    types=("Master", "Worker"),
    restart_policy=v1beta1.RestartPolicy.NEVER,
    port_name="xgboostjob-port",
)
PADDLEJOB = kubeflowjob.Flavour(
    kind="PaddleJob",
    framework="paddle",
    specs_field="paddleReplicaSpecs",
    types=("Master", "Worker"),
    restart_policy=v1beta1.RestartPolicy.ON_FAILURE,
    port_name="master",
)
JAXJOB = kubeflowjob.Flavour(
    kind="JAXJob",
    framework="jax",
    specs_field="jaxReplicaSpecs",
    types=("Worker",),
    restart_policy=v1beta1.RestartPolicy.NEVER,
    port_name="jaxjob-port",
)


def _kind(
    flavour: kubeflowjob.Flavour,
    to_job: Callable[[reader.Reader], dict[str, Any]],
    extra: kubeflowjob.Extra | None = None,
    versions: tuple[str, ...] = (V1,),
    writes: bool = True,
    own_success: bool = False,
) -> kinds.Kind:
    return kinds.Kind(
        kind=flavour.kind,
        api_versions=versions,
        to_job=to_job,
        from_job=functools.partial(kubeflowjob.write_kind, flavour, extra, own_success=own_success)
        if writes
        else None,
    )


KINDS: tuple[kinds.Kind, ...] = (
    _kind(TFJOB, functools.partial(_tfjob, legacy=False), _write_tfjob, own_success=True),
    # tf-operator's earlier versions: the same map, the run policy in the spec itself.
    _kind(
        TFJOB,
        functools.partial(_tfjob, legacy=True),
        versions=(f"{GROUP}/v1beta2", f"{GROUP}/v1beta1"),
        writes=False,
    ),
    *pytorchjob.KINDS,
    _kind(MXJOB, _mxjob, _write_mxjob),
    _kind(XGBOOSTJOB, _xgboostjob),
    _kind(PADDLEJOB, _paddlejob),
    _kind(JAXJOB, _jaxjob),
)
