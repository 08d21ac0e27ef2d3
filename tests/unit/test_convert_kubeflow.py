"""Kubeflow v1's kinds and MPIJob, converted: Kubeflow's own examples, its defaults, its env.

What Kubeflow did with a document — pod names, the restart policy a pod got, the env of
its main container — comes from ``testkit.kubeflow_kinds``, written from Kubeflow's
sources, not from kubetrain's code. A variable kubetrain sets differently or not at all
must be named in a warning.
"""

from __future__ import annotations

import copy
import json
import pathlib
from typing import Any

import pytest
import yaml
from testkit import kubeflow_kinds

from kubetrain.api import scheme, v1beta1, validation
from kubetrain.cli import main
from kubetrain.convert import document, kinds
from kubetrain.operator import render
from kubetrain.operator.frameworks import registry

LEGACY = pathlib.Path(__file__).resolve().parents[2] / "samples" / "legacy"

# Every sample, with the exact warnings its conversion prints.
SAMPLES: dict[str, list[str]] = {
    "kubeflow-tfjob.yaml": [],
    "kubeflow-pytorchjob.yaml": [],
    "kubeflow-pytorchjob-elastic.yaml": [],
    "kubeflow-mxjob.yaml": [],
    "kubeflow-xgboostjob.yaml": [],
    "kubeflow-paddlejob.yaml": [
        "warning: spec.paddleReplicaSpecs.Worker: kubetrain does not set POD_IP_DUMMY: the rendezvous "
        "replica's PADDLE_MASTER is 127.0.0.1:port instead of $(POD_IP_DUMMY):port",
    ],
    "kubeflow-jaxjob.yaml": [],
    "kubeflow-mpijob-v1.yaml": [
        "warning: spec.mpiReplicaSpecs.Launcher: mpirun reaches the workers over ssh "
        "(OMPI_MCA_plm_rsh_agent=ssh), not kubectl exec, and reads "
        "OMPI_MCA_orte_default_hostfile=/etc/kubetrain/hostfile",
        "warning: spec.mpiReplicaSpecs.Worker: kubetrain reaches workers over ssh with a key in /root/.ssh: "
        "the worker must run sshd (e.g. command: [/usr/sbin/sshd, -De]); Kubeflow ran 'sleep 365d' here and "
        "used kubectl exec",
    ],
    "kubeflow-mpijob-v2beta1.yaml": [
        "warning: spec.sshAuthMountPath: not carried over: kubetrain mounts the job's ssh key at /root/.ssh "
        "and runs ssh as root",
        "warning: spec.mpiReplicaSpecs.Launcher: OMPI_MCA_orte_default_hostfile is /etc/kubetrain/hostfile "
        "(Kubeflow's: /etc/mpi/hostfile)",
        "warning: spec.mpiReplicaSpecs.Launcher: kubetrain does not set OMPI_MCA_plm_rsh_args, "
        "OMPI_MCA_orte_set_default_slots: kubetrain's ssh config retries connections itself; the hostfile "
        "gives each worker its slots",
    ],
}

# Every variable Kubeflow v1 set in these samples' pods (REFERENCE.md §2 and training-operator's
# pkg/controller.v1/*/envvar.go, mxnet.go, xgboost.go; mpi-operator's v2beta1 controller): the
# union over their replicas, so a variable dropped from kubeflow_kinds fails here too.
KUBEFLOW_ENV = {
    "kubeflow-tfjob.yaml": {"TF_CONFIG"},
    "kubeflow-pytorchjob.yaml": {
        "PYTHONUNBUFFERED",
        "MASTER_ADDR",
        "MASTER_PORT",
        "PET_MASTER_ADDR",
        "PET_MASTER_PORT",
        "WORLD_SIZE",
        "RANK",
        "PET_NODE_RANK",
        "PET_NPROC_PER_NODE",
        "PET_NNODES",
    },
    "kubeflow-pytorchjob-elastic.yaml": {
        "PYTHONUNBUFFERED",
        "PET_NPROC_PER_NODE",
        "PET_RDZV_ENDPOINT",
        "PET_RDZV_BACKEND",
        "PET_NNODES",
        "PET_MAX_RESTARTS",
    },
    "kubeflow-mxjob.yaml": {
        "MX_CONFIG",
        "DMLC_PS_ROOT_PORT",
        "DMLC_PS_ROOT_URI",
        "DMLC_NUM_SERVER",
        "DMLC_NUM_WORKER",
        "DMLC_ROLE",
        "DMLC_USE_KUBERNETES",
        "DMLC_WORKER_ID",
    },
    "kubeflow-xgboostjob.yaml": {
        "MASTER_PORT",
        "MASTER_ADDR",
        "WORLD_SIZE",
        "RANK",
        "PYTHONUNBUFFERED",
        "WORKER_PORT",
        "WORKER_ADDRS",
    },
    "kubeflow-paddlejob.yaml": {
        "PYTHONUNBUFFERED",
        "PADDLE_JOB_ID",
        "PADDLE_NNODES",
        "PADDLE_MASTER",
        "POD_IP_DUMMY",
    },
    "kubeflow-jaxjob.yaml": {
        "PYTHONUNBUFFERED",
        "COORDINATOR_PORT",
        "COORDINATOR_ADDRESS",
        "NUM_PROCESSES",
        "PROCESS_ID",
    },
    "kubeflow-mpijob-v1.yaml": {
        "OMPI_MCA_plm_rsh_agent",
        "OMPI_MCA_orte_default_hostfile",
        "NVIDIA_VISIBLE_DEVICES",
        "NVIDIA_DRIVER_CAPABILITIES",
    },
    "kubeflow-mpijob-v2beta1.yaml": {
        "K_MPI_JOB_ROLE",
        "OMPI_MCA_orte_keep_fqdn_hostnames",
        "OMPI_MCA_orte_default_hostfile",
        "OMPI_MCA_plm_rsh_args",
        "OMPI_MCA_orte_set_default_slots",
        "NVIDIA_VISIBLE_DEVICES",
        "NVIDIA_DRIVER_CAPABILITIES",
    },
}


def load(name: str) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((LEGACY / name).read_text())
    return data


def pods(job: v1beta1.TrainingJob) -> dict[str, dict[str, Any]]:
    fw = registry.default().get(job.spec.framework.name)
    return {o["metadata"]["name"]: o for o in render.render(job, fw) if o["kind"] == "Pod"}


def warnings_of(converted: document.Converted) -> list[str]:
    return [str(n) for n in converted.notes]


def check_pods(doc: dict[str, Any], converted: document.Converted) -> set[str]:
    """Every Kubeflow replica is a pod with the old main container and Kubeflow's env or a
    warning naming the variable; returns the variables Kubeflow set."""
    kind = kubeflow_kinds.kind_of(doc)
    norm = kubeflow_kinds.normalise(doc)
    ns = norm["metadata"].get("namespace", "default")
    notes = " ".join(n.message for n in converted.notes)
    rendered = pods(converted.job)
    seen: set[str] = set()
    expected: set[str] = set()
    for replica_type, rs in norm["spec"][kind.specs_field].items():
        for i in range(rs["replicas"]):
            name = kubeflow_kinds.pod_name(norm, replica_type, i)
            expected.add(name)
            pod = rendered[name]
            ours = kubeflow_kinds.main_container(pod, kind.container)
            theirs = kubeflow_kinds.main_container(rs["template"], kind.container)
            assert {f: ours.get(f) for f in ("image", "command", "args")} == {
                f: theirs.get(f) for f in ("image", "command", "args")
            }
            assert pod["spec"]["restartPolicy"] == {"ExitCode": "Never"}.get(
                rs["restartPolicy"], rs["restartPolicy"]
            )
            env = {e["name"]: e.get("value") for e in ours.get("env", [])}
            for var, value in kubeflow_kinds.kubeflow_env(norm, replica_type, i).items():
                seen.add(var)
                if var not in env or not kubeflow_kinds.equivalent(var, value, env[var], ns):
                    assert var in notes, (
                        f"{name}: {var}={value!r}, kubetrain {env.get(var)!r}, and no warning"
                    )
    assert set(rendered) == expected
    return seen


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_kubeflows_examples_convert_to_pods_with_kubeflows_containers_and_env(name: str) -> None:
    doc = load(name)
    converted = document.convert(doc)
    assert warnings_of(converted) == SAMPLES[name]
    assert check_pods(doc, converted) == KUBEFLOW_ENV[name]


# Fields of the samples that a warning says are not carried over, so do not come back.
NOT_CARRIED_OVER = {"kubeflow-mpijob-v2beta1.yaml": ("sshAuthMountPath",)}


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_kubeflows_examples_come_back_as_kubeflow_left_them(name: str) -> None:
    doc = load(name)
    back = document.back(document.convert(doc).job, doc["apiVersion"], doc["kind"])
    expected = kubeflow_kinds.normalise(doc)
    for field in NOT_CARRIED_OVER.get(name, ()):
        del expected["spec"][field]
    assert back == expected


def test_every_sample_names_where_it_comes_from() -> None:
    for path in LEGACY.glob("kubeflow-*.yaml"):
        assert path.read_text().startswith("# Source: kubeflow/"), path
    # Kubeflow Trainer v2's TrainJobs and runtimes are tests/unit/test_convert_trainer.py's.
    trainer = {p.name for p in LEGACY.glob("kubeflow-*.yaml") if "trainjob" in p.name or "runtime" in p.name}
    assert {p.name for p in LEGACY.glob("kubeflow-*.yaml")} - trainer == set(SAMPLES)


# --- defaults -----------------------------------------------------------------------------------


def minimal(key: str, types: tuple[str, ...] | None = None) -> dict[str, Any]:
    kind = kubeflow_kinds.KINDS[key]
    specs = {
        t: {"replicas": 1, "template": {"spec": {"containers": [{"name": kind.container, "image": "img"}]}}}
        for t in types or kind.types
    }
    spec: dict[str, Any] = {kind.specs_field: specs}
    return {"apiVersion": kind.api_version, "kind": kind.kind, "metadata": {"name": "job"}, "spec": spec}


DEFAULT_SHAPES = {
    "TFJob": ("Worker", "PS"),
    "PyTorchJob": ("Master", "Worker"),
    "MXJob": ("Scheduler", "Server", "Worker"),
    "XGBoostJob": ("Master", "Worker"),
    "PaddleJob": ("Worker",),
    "JAXJob": ("Worker",),
    "MPIJob/v1": ("Launcher", "Worker"),
    "MPIJob/v2beta1": ("Launcher", "Worker"),
}
# Kubeflow's restart policy per kind and type when a replica leaves it out, as the
# converted TrainingJob must state it (absent: kubetrain's framework default agrees).
WRITTEN_RESTART_POLICIES = {
    "TFJob": {"Worker": "Never", "PS": "Never"},
    "PyTorchJob": {},
    "MXJob": {"Scheduler": "Never", "Server": "Never", "Worker": "Never"},
    "XGBoostJob": {"Master": "Never", "Worker": "Never"},
    "PaddleJob": {"Worker": "OnFailure"},
    "JAXJob": {"Worker": "Never"},
    "MPIJob/v1": {"Launcher": "Never", "Worker": "Never"},
    "MPIJob/v2beta1": {"Launcher": "OnFailure", "Worker": "Never"},
}


@pytest.mark.parametrize("key", sorted(DEFAULT_SHAPES))
def test_kubeflows_default_restart_policy_is_written_where_kubetrains_differs_without_a_warning(
    key: str,
) -> None:
    converted = document.convert(minimal(key, DEFAULT_SHAPES[key]))
    written = {t: s.restart_policy for t, s in converted.job.spec.replica_specs.items() if s.restart_policy}
    assert written == WRITTEN_RESTART_POLICIES[key]
    assert not [n for n in converted.notes if "restart" in n.message.lower()]


def test_a_pytorchjob_without_nproc_per_node_gets_kubeflows_auto() -> None:
    job = document.convert(minimal("PyTorchJob")).job
    assert job.spec.framework.pytorch == v1beta1.PyTorchOptions(nproc_per_node="auto")


def test_mpijobs_slots_default_to_kubeflows_one_even_for_a_gpu_worker() -> None:
    doc = minimal("MPIJob/v2beta1")
    doc["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["resources"] = {
        "limits": {"nvidia.com/gpu": 4}
    }
    job = document.convert(doc).job
    assert job.spec.framework.options == {"slotsPerWorker": 1}
    worker = job.spec.replica_specs["Worker"].template["spec"]["containers"][0]
    assert worker["command"] == ["/usr/sbin/sshd", "-De"]  # what v2beta1 ran in a worker without one


def test_a_named_port_becomes_the_replicas_port_and_comes_back() -> None:
    doc = minimal("TFJob", ("Worker",))
    doc["spec"]["tfReplicaSpecs"]["Worker"]["replicas"] = 2
    container = doc["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
    container["ports"] = [{"name": "tfjob-port", "containerPort": 3333}]
    converted = document.convert(doc)
    assert converted.job.spec.replica_specs["Worker"].port == 3333
    assert '"job-worker-1.default.svc:3333"' in env_of(converted.job, "job-worker-0")["TF_CONFIG"]
    assert document.back(converted.job, "kubeflow.org/v1", "TFJob") == kubeflow_kinds.normalise(doc)


def env_of(job: v1beta1.TrainingJob, pod: str) -> dict[str, str]:
    return {e["name"]: e["value"] for e in pods(job)[pod]["spec"]["containers"][0]["env"] if "value" in e}


# --- what is read, and how ------------------------------------------------------------------------


def test_keys_and_replica_types_are_read_in_any_spelling() -> None:
    doc = minimal("PyTorchJob")
    spec = doc["spec"]
    spec["PYTORCH_REPLICA_SPECS"] = {
        "master": spec["pytorchReplicaSpecs"]["Master"],
        "WORKER": {**spec["pytorchReplicaSpecs"]["Worker"], "restart_policy": "ExitCode"},
    }
    del spec["pytorchReplicaSpecs"]
    spec["run_policy"] = {"CLEAN_POD_POLICY": "All"}
    job = document.convert(doc).job
    assert list(job.spec.replica_specs) == ["Master", "Worker"]
    assert job.spec.replica_specs["Worker"].restart_policy == v1beta1.RestartPolicy.EXIT_CODE
    assert job.spec.run_policy.clean_pod_policy == v1beta1.CleanPodPolicy.ALL


def errors_of(doc: dict[str, Any]) -> list[str]:
    with pytest.raises(validation.ValidationError) as e:
        document.convert(doc)
    return [str(f) for f in e.value.errors]


def test_unknown_fields_and_types_are_errors_with_their_path() -> None:
    doc = minimal("TFJob", ("Worker",))
    doc["spec"]["tfReplicaSpecs"]["Worker"]["replicaz"] = 2
    doc["spec"]["tfReplicaSpecs"]["Driver"] = doc["spec"]["tfReplicaSpecs"]["Worker"]
    doc["spec"]["worker"] = {}
    assert errors_of(doc) == [
        "spec.tfReplicaSpecs.Worker.replicaz: unknown field",
        "spec.tfReplicaSpecs.Driver: TFJob has no replica type Driver (it has Chief, Master, Worker, PS, Evaluator)",
        "spec.worker: unknown field",
    ]


def test_one_replica_type_twice_and_bad_values_are_errors() -> None:
    doc = minimal("JAXJob")
    specs = doc["spec"]["jaxReplicaSpecs"]
    specs["worker"] = copy.deepcopy(specs["Worker"])
    specs["Worker"]["restartPolicy"] = "Sometimes"
    doc["spec"]["runPolicy"] = {"backoffLimit": -1, "cleanPodPolicy": "Some"}
    assert errors_of(doc) == [
        "spec.jaxReplicaSpecs.Worker.restartPolicy: must be one of Always, OnFailure, Never, ExitCode, got 'Sometimes'",
        "spec.jaxReplicaSpecs.worker: Worker and worker are the same replica type; keep one",
        "spec.runPolicy.cleanPodPolicy: must be one of All, Running, None, got 'Some'",
        "spec.runPolicy.backoffLimit: must be at least 0, got -1",
    ]


def test_the_run_policy_is_carried_over_and_said_where_it_differs() -> None:
    doc = minimal("XGBoostJob")
    doc["spec"]["runPolicy"] = {
        "cleanPodPolicy": "None",
        "ttlSecondsAfterFinished": 60,
        "activeDeadlineSeconds": 3600,
        "backoffLimit": 3,
        "suspend": True,
        "managedBy": "kueue.x-k8s.io/multikueue",
        "schedulingPolicy": {
            "minAvailable": 2,
            "queue": "research",
            "priorityClass": "high",
            "scheduleTimeoutSeconds": 300,
            "minResources": {"cpu": "4"},
        },
    }
    converted = document.convert(doc)
    # Kubeflow's runPolicy.managedBy is the TrainingJob's top-level managedBy, which MultiKueue reads.
    assert converted.job.spec.managed_by == "kueue.x-k8s.io/multikueue"
    assert converted.job.spec.run_policy == v1beta1.RunPolicy(
        clean_pod_policy=v1beta1.CleanPodPolicy.NONE,
        ttl_seconds_after_finished=60,
        active_deadline_seconds=3600,
        backoff_limit=3,
        suspend=True,
        scheduling_policy=v1beta1.SchedulingPolicy(
            min_available=2, queue="research", priority_class="high", schedule_timeout_seconds=300
        ),
    )
    assert warnings_of(converted) == [
        "warning: spec.runPolicy.managedBy: carried over: kubetrain leaves the job to "
        "kueue.x-k8s.io/multikueue, which must know TrainingJobs",
        "warning: spec.runPolicy.schedulingPolicy.queue: carried over: the job waits in this Kueue LocalQueue "
        "(with the operator's --gang-scheduler=volcano: in this Volcano queue, as under Kubeflow)",
        "warning: spec.runPolicy.schedulingPolicy.minResources: not carried over: kubetrain sizes a gang by its "
        "pods (minAvailable), not by resources",
    ]
    del doc["spec"]["runPolicy"]["schedulingPolicy"]["minResources"]
    assert document.back(converted.job, "kubeflow.org/v1", "XGBoostJob") == kubeflow_kinds.normalise(doc)


def test_kubeflow_managing_the_job_itself_is_not_carried_over() -> None:
    doc = minimal("JAXJob")
    doc["spec"]["runPolicy"] = {"managedBy": "kubeflow.org/training-operator"}
    converted = document.convert(doc)
    assert converted.job.spec.manager is None
    assert warnings_of(converted) == [
        "warning: spec.runPolicy.managedBy: not carried over: kubeflow.org/training-operator is JAXJob's own "
        "controller; kubetrain manages the job"
    ]


def test_the_run_policy_where_older_releases_put_it_is_read_too() -> None:
    doc = minimal("TFJob", ("Worker",))
    doc["spec"] |= {"cleanPodPolicy": "All", "backoffLimit": 2, "activeDeadlineSeconds": 60}
    job = document.convert(doc).job
    assert (job.spec.run_policy.clean_pod_policy, job.spec.run_policy.backoff_limit) == (
        v1beta1.CleanPodPolicy.ALL,
        2,
    )
    doc["spec"]["runPolicy"] = {"backoffLimit": 5}
    assert errors_of(doc) == ["spec.backoffLimit: also set in runPolicy (5); keep one"]


def test_tf_operators_v1beta2_tfjob_converts_with_its_rpc_layer_noted() -> None:
    doc = minimal("TFJob", ("Worker",))
    doc["apiVersion"] = "kubeflow.org/v1beta2"
    doc["spec"] |= {"ttlSecondsAfterFinished": 30, "tfRpcLayer": "grpc+verbs"}
    converted = document.convert(doc)
    assert converted.job.spec.run_policy.ttl_seconds_after_finished == 30
    assert warnings_of(converted) == [
        "warning: spec.tfRpcLayer: not carried over: kubetrain's TF_CONFIG has no rpc_layer",
        "warning: spec.tfReplicaSpecs: Kubeflow set no TF_CONFIG for a job of one replica; kubetrain sets one "
        "(a cluster of one)",
    ]


def test_the_template_restart_policy_and_sidecars_are_warned_about() -> None:
    doc = minimal("JAXJob")
    template = doc["spec"]["jaxReplicaSpecs"]["Worker"]["template"]
    template["spec"]["restartPolicy"] = "Always"
    template["spec"]["containers"].append({"name": "sidecar", "image": "proxy"})
    assert warnings_of(document.convert(doc)) == [
        "warning: spec.jaxReplicaSpecs.Worker.template.spec.restartPolicy: ignored, as Kubeflow ignored it: "
        "the replica's restartPolicy decides",
        "warning: spec.jaxReplicaSpecs.Worker.template.spec.containers: Kubeflow set the JAXJob env on every "
        "container; kubetrain sets it on the main container 'jax' only, not on sidecar",
    ]


def test_the_removed_gpu_resource_becomes_nvidia_com_gpu_with_a_warning() -> None:
    doc = minimal("JAXJob")
    container = doc["spec"]["jaxReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
    container["resources"] = {"limits": {"alpha.kubernetes.io/nvidia-gpu": 1}}
    converted = document.convert(doc)
    worker = converted.job.spec.replica_specs["Worker"].template["spec"]["containers"][0]
    assert worker["resources"] == {"limits": {"nvidia.com/gpu": 1}}
    assert warnings_of(converted) == [
        "warning: spec.jaxReplicaSpecs.Worker.template.spec.containers[0].resources.limits."
        "alpha.kubernetes.io/nvidia-gpu: becomes nvidia.com/gpu in container jax: Kubernetes 1.11 removed "
        "alpha.kubernetes.io/nvidia-gpu, which no node offers now (the pod would never be scheduled); "
        "nvidia.com/gpu is the NVIDIA device plugin's name for the GPUs",
    ]


# --- TFJob -----------------------------------------------------------------------------------------


def test_a_tfjob_master_and_evaluator_differ_in_tf_config_as_warned() -> None:
    doc = minimal("TFJob", ("Master", "Worker", "Evaluator"))
    converted = document.convert(doc)
    assert warnings_of(converted) == [
        "warning: spec.tfReplicaSpecs.Master: TF_CONFIG names this replica's task 'chief', not 'master' as "
        "Kubeflow did (TensorFlow 2 refuses a 'master'); its host is still {job}-master-0",
        "warning: spec.tfReplicaSpecs.Evaluator: TF_CONFIG's cluster leaves the evaluator out, as TensorFlow "
        "expects (Kubeflow listed it); its own task is still type 'evaluator'",
    ]
    check_pods(doc, converted)


def test_all_workers_succeeding_is_a_success_policy_over_every_worker() -> None:
    doc = minimal("TFJob", ("Worker", "PS"))
    doc["spec"]["successPolicy"] = "AllWorkers"
    converted = document.convert(doc)
    assert converted.job.spec.success_policy == v1beta1.SuccessPolicy(
        targets=(v1beta1.SuccessTarget(replica_type="Worker"),)
    )
    assert document.back(converted.job, "kubeflow.org/v1", "TFJob")["spec"]["successPolicy"] == "AllWorkers"
    doc = minimal("TFJob", ("Chief", "Worker"))
    doc["spec"] |= {"successPolicy": "AllWorkers", "enableDynamicWorker": True}
    assert warnings_of(document.convert(doc)) == [
        "warning: spec.successPolicy: not carried over: with a Chief it decides the job's success, in Kubeflow too",
        "warning: spec.enableDynamicWorker: not carried over: TF_CONFIG lists every worker (no sparse cluster spec)",
    ]


# --- PyTorchJob --------------------------------------------------------------------------------------


def elastic_job(**policy: Any) -> dict[str, Any]:
    doc = minimal("PyTorchJob", ("Worker",))
    doc["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] = 3
    doc["spec"]["elasticPolicy"] = policy
    return doc


def test_elastic_bounds_default_as_in_kubeflow() -> None:
    for policy, bounds in (
        ({}, (3, 3)),
        ({"maxReplicas": 3}, (3, 3)),
        ({"minReplicas": 2, "maxReplicas": 5}, (2, 5)),
    ):
        elastic = document.convert(elastic_job(**policy)).job.spec.framework.pytorch
        assert elastic is not None
        assert elastic.elastic is not None
        assert (elastic.elastic.min_replicas, elastic.elastic.max_replicas) == bounds
    # Kubeflow ran 3 Workers between bounds of 4 and 4; kubetrain says why it will not.
    assert errors_of(elastic_job(minReplicas=4)) == [
        "spec.replicaSpecs.Worker.replicas: an elastic job's Worker replicas must lie between "
        "framework.pytorch.elastic.minReplicas and maxReplicas (4..4) (in the converted TrainingJob)"
    ]


def test_elastic_metrics_ask_for_a_horizontal_pod_autoscaler_on_the_training_job() -> None:
    doc = elastic_job(
        minReplicas=1, maxReplicas=4, metrics=[{"type": "Resource", "resource": {"name": "cpu"}}]
    )
    assert warnings_of(document.convert(doc)) == [
        "warning: spec.elasticPolicy.metrics: not carried over: create a HorizontalPodAutoscaler with these "
        "metrics whose scaleTargetRef is the TrainingJob (apiVersion training.kubetrain.dev/v1beta1, kind "
        "TrainingJob, its scale subresource sets spec.replicaSpecs.Worker.replicas); Kubeflow created it for "
        "the job",
    ]


def test_the_rendezvous_kubeflow_was_told_is_every_replicas_endpoint_and_comes_back() -> None:
    doc = elastic_job(
        minReplicas=1,
        maxReplicas=3,
        rdzvHost="etcd-service",
        rdzvPort=2379,
        rdzvBackend="etcd",
        rdzvId="run-7",
        rdzvConf=[{"key": "timeout", "value": "900"}, {"key": "last_call_timeout", "value": "30"}],
        maxRestarts=4,
    )
    converted = document.convert(doc)
    env = env_of(converted.job, "job-worker-2")
    assert {
        k: env[k] for k in ("PET_RDZV_ENDPOINT", "PET_RDZV_BACKEND", "PET_RDZV_ID", "PET_MAX_RESTARTS")
    } == {
        "PET_RDZV_ENDPOINT": "etcd-service:2379",
        "PET_RDZV_BACKEND": "etcd",
        "PET_RDZV_ID": "run-7",
        "PET_MAX_RESTARTS": "4",
    }
    assert set(env["PET_RDZV_CONF"].split(",")) == {"timeout=900", "last_call_timeout=30"}
    assert warnings_of(converted) == [
        "warning: spec.elasticPolicy.rdzvHost: carried over as PET_RDZV_ENDPOINT=etcd-service:2379 in every "
        "replica's env: kubetrain's own endpoint is Worker 0 at its port",
    ]
    assert document.back(converted.job, "kubeflow.org/v1", "PyTorchJob") == kubeflow_kinds.normalise(doc)


def test_an_elastic_job_with_a_master_or_two_nproc_spellings_is_an_error() -> None:
    doc = minimal("PyTorchJob")
    doc["spec"] |= {"elasticPolicy": {"nProcPerNode": 2}, "nprocPerNode": "4"}
    assert errors_of(doc)[:2] == [
        "spec.elasticPolicy: kubetrain's elastic jobs have Workers only (the rendezvous assigns ranks): make "
        "the Master a Worker, or drop elasticPolicy",
        "spec.elasticPolicy.nProcPerNode: differs from spec.nprocPerNode ('4'), its current spelling; keep one",
    ]
    doc = elastic_job(nProcPerNode=2, standalone=True)
    converted = document.convert(doc)
    assert converted.job.spec.framework.pytorch == v1beta1.PyTorchOptions(
        nproc_per_node="2", elastic=v1beta1.ElasticPolicy(min_replicas=3, max_replicas=3)
    )
    assert warnings_of(converted) == [
        "warning: spec.elasticPolicy.standalone: not carried over: kubetrain sets no PET_STANDALONE; every Worker "
        "joins the job's rendezvous"
    ]


def test_rank_and_world_size_that_count_processes_differently_are_warned_about() -> None:
    doc = minimal("PyTorchJob")
    doc["spec"]["nprocPerNode"] = "4"
    assert warnings_of(document.convert(doc)) == [
        "warning: spec.nprocPerNode: RANK is the global rank of a pod's first process (node rank x 4); Kubeflow's "
        "RANK was the node rank (still PET_NODE_RANK)"
    ]
    doc = minimal("PyTorchJob")
    worker = doc["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
    worker["resources"] = {"limits": {"nvidia.com/gpu": 8}}
    assert warnings_of(document.convert(doc)) == [
        "warning: spec.pytorchReplicaSpecs.Worker: WORLD_SIZE and RANK count the 8 GPUs a Worker requests as its "
        "processes (nprocPerNode 'auto'); Kubeflow counted one per pod"
    ]


# --- MXJob, PaddleJob ----------------------------------------------------------------------------------


def test_mxtune_is_refused_and_one_worker_is_local_mode() -> None:
    doc = minimal("MXJob", ("Worker",))
    doc["spec"]["jobMode"] = "MXTune"
    doc["spec"]["mxReplicaSpecs"]["TunerServer"] = doc["spec"]["mxReplicaSpecs"]["Worker"]
    assert errors_of(doc) == [
        "spec.mxReplicaSpecs.TunerServer: TunerServer is a replica type of MXTune (TVM auto-tuning), which has "
        "no kubetrain counterpart",
        "spec.jobMode: MXTune (TVM auto-tuning) has no kubetrain counterpart: kubetrain's mxnet runs ps-lite "
        "training (Scheduler, Server, Worker)",
    ]
    doc = minimal("MXJob", ("Worker",))
    converted = document.convert(doc)
    assert converted.job.spec.framework.options == {"mode": "local"}
    assert warnings_of(converted) == [
        "warning: spec.mxReplicaSpecs.Worker: kubetrain does not set DMLC_PS_ROOT_PORT, DMLC_PS_ROOT_URI: one "
        "Worker trains alone (mode local), without a Scheduler; Kubeflow set them empty and 0"
    ]
    check_pods(doc, converted)


def test_a_paddlejobs_elastic_policy_is_not_carried_over() -> None:
    doc = minimal("PaddleJob", ("Master", "Worker"))
    doc["spec"]["elasticPolicy"] = {"minReplicas": 1, "maxReplicas": 4}
    converted = document.convert(doc)
    assert warnings_of(converted) == [
        "warning: spec.elasticPolicy: not carried over: kubetrain runs a PaddleJob's Workers at a fixed count "
        "(replicas change while the job is suspended); no HorizontalPodAutoscaler is created",
        "warning: spec.paddleReplicaSpecs.Master: kubetrain does not set POD_IP_DUMMY: the rendezvous replica's "
        "PADDLE_MASTER is 127.0.0.1:port instead of $(POD_IP_DUMMY):port",
    ]
    check_pods(doc, converted)


# --- MPIJob ---------------------------------------------------------------------------------------------


def test_an_mpijob_v1s_main_container_and_etc_mpi_paths_are_warned_about() -> None:
    doc = minimal("MPIJob/v1")
    doc["spec"]["mainContainer"] = "trainer"
    launcher = doc["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]
    launcher["args"] = [
        "horovodrun",
        "--host-discovery-script",
        "/etc/mpi/discover_hosts.sh",
        "python",
        "t.py",
    ]
    launcher["resources"] = {"limits": {"nvidia.com/gpu": 1}}
    doc["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["command"] = [
        "/usr/sbin/sshd"
    ]
    assert warnings_of(document.convert(doc)) == [
        "warning: spec.mpiReplicaSpecs.Launcher.template.spec.containers[0].args: refers to /etc/mpi: kubetrain "
        "mounts the hostfile and discover_hosts.sh at /etc/kubetrain",
        "warning: spec.mainContainer: not carried over: ranks run where sshd runs; kubetrain's main container is "
        "the one named 'mpi', else the only one",
        "warning: spec.mpiReplicaSpecs.Launcher: mpirun reaches the workers over ssh (OMPI_MCA_plm_rsh_agent=ssh), "
        "not kubectl exec, and reads OMPI_MCA_orte_default_hostfile=/etc/kubetrain/hostfile",
        "warning: spec.mpiReplicaSpecs.Worker: kubetrain reaches workers over ssh with a key in /root/.ssh: the "
        "worker must run sshd (e.g. command: [/usr/sbin/sshd, -De])",
    ]


def test_an_mpijob_v2beta1s_launcher_policies_are_said_and_intel_mpi_carries_over() -> None:
    doc = minimal("MPIJob/v2beta1")
    doc["spec"] |= {
        "mpiImplementation": "Intel",
        "runLauncherAsWorker": True,
        "launcherCreationPolicy": "AtStartup",
        "slotsPerWorker": 2,
    }
    converted = document.convert(doc)
    assert converted.job.spec.framework.options == {"slotsPerWorker": 2, "mpiImplementation": "Intel"}
    assert warnings_of(converted) == [
        "warning: spec.runLauncherAsWorker: not carried over: kubetrain's launcher hosts no ranks; add a Worker "
        "for its share",
        "warning: spec.launcherCreationPolicy: not carried over: kubetrain creates the launcher once every worker "
        "is Ready",
        "warning: spec.mpiReplicaSpecs.Launcher: I_MPI_HYDRA_HOST_FILE is /etc/kubetrain/hostfile (Kubeflow's: "
        "/etc/mpi/hostfile)",
        "warning: spec.mpiReplicaSpecs.Launcher: kubetrain does not set I_MPI_HYDRA_BOOTSTRAP_EXEC_EXTRA_ARGS, "
        "I_MPI_PERHOST: kubetrain's ssh config retries connections itself; the hostfile gives each worker its slots",
    ]


def test_a_launcher_only_mpijob_is_refused_in_kubetrains_terms() -> None:
    doc = minimal("MPIJob/v1", ("Launcher",))
    assert errors_of(doc) == ["spec.replicaSpecs: mpi needs at least 1 Worker (in the converted TrainingJob)"]


# --- back ---------------------------------------------------------------------------------------------


def hub(doc: dict[str, Any]) -> v1beta1.TrainingJob:
    job = scheme.to_hub(scheme.decode(doc))
    assert isinstance(job, v1beta1.TrainingJob)
    return job


def trainingjob(framework: dict[str, Any], **spec: Any) -> dict[str, Any]:
    container = {"name": "main", "image": "img"}
    return {
        "apiVersion": v1beta1.API_VERSION,
        "kind": "TrainingJob",
        "metadata": {"name": "job"},
        "spec": {
            "framework": framework,
            "replicaSpecs": {"Worker": {"replicas": 2, "template": {"spec": {"containers": [container]}}}},
            **spec,
        },
    }


def inexpressible(job: v1beta1.TrainingJob, api_version: str, kind: str) -> list[str]:
    with pytest.raises(kinds.Inexpressible) as e:
        document.back(job, api_version, kind)
    return [str(f) for f in e.value.errors]


def test_what_a_kubeflow_kind_cannot_hold_is_inexpressible_with_its_path() -> None:
    job = hub(
        trainingjob(
            {"name": "pytorch"},
            runtimeId="abc",
            failurePolicy={"rules": [{"name": "oom", "action": "FailJob", "onReasons": ["OOMKilled"]}]},
            successPolicy={"operator": "Any", "targets": [{"replicaType": "Worker"}]},
        )
    )
    assert inexpressible(job, "kubeflow.org/v1", "PyTorchJob") == [
        "spec.runtimeId: PyTorchJob has no run id of its own",
        "spec.failurePolicy.rules: PyTorchJob has no failure policy beyond backoffLimit",
        "spec.successPolicy: PyTorchJob decides success by its own rule",
    ]
    assert inexpressible(job, "kubeflow.org/v1", "JAXJob") == [
        "spec.framework.name: a JAXJob runs jax, not pytorch",
        "spec.runtimeId: JAXJob has no run id of its own",
        "spec.failurePolicy.rules: JAXJob has no failure policy beyond backoffLimit",
        "spec.successPolicy: JAXJob decides success by its own rule",
    ]


def test_a_user_code_budget_is_kubeflows_backoff_limit() -> None:
    job = hub(trainingjob({"name": "jax"}, failurePolicy={"budgets": {"userCode": {"limit": 3}}}))
    assert document.back(job, "kubeflow.org/v1", "JAXJob")["spec"]["runPolicy"] == {"backoffLimit": 3}


def test_mpijob_v1_runs_open_mpi_only_and_writes_kubetrains_slots() -> None:
    doc = trainingjob({"name": "mpi", "options": {"mpiImplementation": "MPICH"}})
    doc["spec"]["replicaSpecs"]["Launcher"] = copy.deepcopy(doc["spec"]["replicaSpecs"]["Worker"]) | {
        "replicas": 1
    }
    gpu = {"limits": {"nvidia.com/gpu": 2}}
    doc["spec"]["replicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["resources"] = gpu
    job = hub(doc)
    assert inexpressible(job, "kubeflow.org/v1", "MPIJob") == [
        "spec.framework.options.mpiImplementation: kubeflow.org/v1 MPIJob runs Open MPI only"
    ]
    back = document.back(job, "kubeflow.org/v2beta1", "MPIJob")
    assert {
        k: back["spec"][k] for k in ("slotsPerWorker", "mpiImplementation", "launcherCreationPolicy")
    } == {
        "slotsPerWorker": 2,
        "mpiImplementation": "MPICH",
        "launcherCreationPolicy": "WaitForWorkersReady",
    }


def test_the_registry_claims_kubeflow_orgs_map_shaped_versions_only() -> None:
    claimed = {(v, k.kind) for k in document.KINDS for v in k.api_versions if v.startswith("kubeflow.org/")}
    mine = {
        ("kubeflow.org/v1", kind)
        for kind in ("TFJob", "PyTorchJob", "MXJob", "XGBoostJob", "PaddleJob", "JAXJob", "MPIJob")
    } | {
        ("kubeflow.org/v1beta1", "TFJob"),
        ("kubeflow.org/v1beta2", "TFJob"),
        ("kubeflow.org/v1beta2", "PyTorchJob"),
        ("kubeflow.org/v2beta1", "MPIJob"),
    }
    assert mine <= claimed
    assert not {c for c in mine if c[0] == "kubeflow.org/v1alpha1"}


# --- the command --------------------------------------------------------------------------------------


def test_kubetrain_convert_prints_the_training_job_and_its_warnings(
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = LEGACY / "kubeflow-paddlejob.yaml"
    assert main.main(["convert", str(path)]) == 0
    out, err = capsys.readouterr()
    job = hub(yaml.safe_load(out))
    assert (job.metadata.name, job.spec.framework.name) == ("paddle-simple", "paddle")
    assert err == (
        f"warning: {path}:9:5: spec.paddleReplicaSpecs.Worker: kubetrain does not set POD_IP_DUMMY: the rendezvous "
        "replica's PADDLE_MASTER is 127.0.0.1:port instead of $(POD_IP_DUMMY):port\n"
    )


def test_kubetrain_convert_refuses_a_bad_file_with_its_line(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = (LEGACY / "kubeflow-jaxjob.yaml").read_text().replace("      replicas: 2", "      replicaz: 2")
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    assert main.main(["convert", str(path)]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err == f"error: {path}:10:7: spec.jaxReplicaSpecs.Worker.replicaz: unknown field\n"


def test_kubetrain_convert_to_writes_a_training_job_back_as_a_kubeflow_kind(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "job.yaml"
    job = scheme.encode(document.convert(load("kubeflow-jaxjob.yaml")).job)
    path.write_text(json.dumps(job))  # YAML is JSON
    assert main.main(["convert", str(path), "--to", "kubeflow.org/v1/JAXJob"]) == 0
    assert yaml.safe_load(capsys.readouterr().out) == kubeflow_kinds.normalise(load("kubeflow-jaxjob.yaml"))


@pytest.mark.parametrize("name", sorted(SAMPLES))
@pytest.mark.parametrize("resources", [["nvidia.com/gpu"], "2", 3, {"limits": ["x"]}, {"limits": 4}])
def test_a_container_of_any_shape_is_an_error_with_its_path_never_a_crash(name: str, resources: Any) -> None:
    """A wrong type where a framework reads the pod (its GPUs: MPIJob's launcher, PyTorchJob's
    nproc) is admission's error at the end, not an exception on the way (found by make bench-files)."""
    data = yaml.safe_load((LEGACY / name).read_text())
    if data["kind"] == "PyTorchJob":
        data["spec"].setdefault("nprocPerNode", "auto")
    for spec in next(v for k, v in data["spec"].items() if k.endswith("ReplicaSpecs")).values():
        for c in spec["template"]["spec"]["containers"]:
            c["resources"] = copy.deepcopy(resources)
    with pytest.raises(validation.ValidationError) as e:
        document.convert(data)
    assert any("resources" in validation.format_path(f.path) for f in e.value.errors), e.value
