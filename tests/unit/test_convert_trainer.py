"""Kubeflow Trainer v2's TrainJob, TrainingRuntime and ClusterTrainingRuntime, converted.

The samples in samples/legacy (kubeflow-trainjob-*, kubeflow-*runtime*) are one TrainJob per API
generation — v2.0's podSpecOverrides, v2.1's podTemplateOverrides, v2.2 and v2.3's
runtimePatches — and runtimes as Trainer ships them. Each converts with exactly the warnings
below; a converted runtime decodes as kubetrain's; a converted job, expanded from its converted
runtime (and from the runtime kubetrain ships under the name it names), is a job admission takes
and whose pods run the trainer's image and command with the overrides. What Trainer did is
written here from its sources (pkg/apis/trainer/v1alpha1, pkg/runtime/framework/plugins,
manifests/base/runtimes), not from the converter.
"""

from __future__ import annotations

import copy
import pathlib
import random
from typing import Any

import pytest
import yaml

from kubetrain.api import v1beta1, validation, wire
from kubetrain.cli import main
from kubetrain.convert import document, trainer, trainingruntime, trainjob
from kubetrain.operator import expansion, intake, render

ROOT = pathlib.Path(__file__).resolve().parents[2]
LEGACY = ROOT / "samples" / "legacy"
RUNTIMES = ROOT / "config" / "runtimes"
API = "trainer.kubeflow.org/v1alpha1"

AUTO = (
    "not carried over: Trainer started one process per GPU, else one per CPU of resourcesPerNode; kubetrain's "
    "default starts one per GPU the container requests, else one (give a number for more)"
)
GANG = "the gang itself is the operator's --gang-scheduler's (coscheduling, volcano or native), for every job"

# Every sample, with the exact warnings its conversion prints.
SAMPLES: dict[str, list[str]] = {
    "kubeflow-trainjob-v2.0.yaml": [
        f"warning: spec.trainer.numProcPerNode: {AUTO}",
        "warning: spec.podSpecOverrides[0].containers[0].name: becomes pytorch, the trainer's container in "
        "kubetrain's torch-distributed",
        "warning: spec.labels: not carried over: Trainer put these labels on the JobSet and its Jobs, which "
        "kubetrain does not create; the pods' are spec.replicaSpecs.<Type>.template.metadata.labels",
    ],
    "kubeflow-trainjob-v2.1.yaml": [
        "warning: spec.runtimeRef.name: becomes kubetrain's mpi-distributed: Trainer's deepspeed-distributed is "
        "an MPI runtime (mpirun over ssh from a launcher), and so is mpi-distributed",
        "warning: spec.trainer.command: refers to /etc/mpi: kubetrain mounts the hostfile at /etc/kubetrain",
        "warning: spec.trainer.command: mpirun runs as root in kubetrain's mpi-distributed (Trainer's ran as user "
        "1000): it needs --allow-run-as-root",
        "warning: spec.trainer.numNodes: carried over: 2 Workers host the ranks, beside a Launcher that hosts "
        "none (Trainer's launcher was one of the 2 nodes)",
        "warning: spec.trainer: written out as trainer.image: ghcr.io/kubeflow/trainer/deepspeed-runtime, the "
        "image Trainer's runtime ran (kubetrain's mpi-distributed has none); pin the tag your Trainer release ran",
        "warning: spec.podTemplateOverrides[1].spec.containers[0].name: becomes mpi, the trainer's container in "
        "kubetrain's mpi-distributed",
        "warning: spec.podTemplateOverrides[2].targetJobs[0].name: not carried over: kubetrain runs no "
        "model-initializer, so nothing to override",
        "warning: spec.annotations: not carried over: Trainer put these annotations on the JobSet and its Jobs, "
        "which kubetrain does not create; the pods' are spec.replicaSpecs.<Type>.template.metadata.annotations",
        "warning: spec.initializer.model: not carried over: kubetrain runs no model initializer (the runtime's "
        "model-initializer Job is dropped too); fetch hf://google-t5/t5-small in the trainer, or in an "
        "initContainer of spec.replicaSpecs.Worker.template",
    ],
    "kubeflow-trainjob-v2.3.yaml": [
        "warning: spec.runtimePatches[0].trainingRuntimeSpec.template.spec.replicatedJobs[0].template.metadata: "
        "not carried over: labels and annotations of the Job, which kubetrain does not create",
        "warning: spec.runtimePatches[0].trainingRuntimeSpec.template.spec.replicatedJobs[0].template.spec."
        "template.spec.containers[0].name: becomes jax, the trainer's container in kubetrain's jax-distributed",
        "warning: spec.runtimePatches[1].trainingRuntimeSpec: not carried over: kueue.x-k8s.io/manager wrote it "
        "when it admitted the job (its flavour's node selectors and tolerations); Kueue gives kubetrain's job "
        "its own",
        "warning: metadata.labels.kueue.x-k8s.io/queue-name: carried over, also as "
        "spec.runPolicy.schedulingPolicy.queue: kubetrain's job waits in this Kueue LocalQueue as its own Workload",
        "warning: spec.managedBy: not carried over: trainer.kubeflow.org/trainjob-controller is Trainer's own "
        "controller; kubetrain manages the job",
    ],
    "kubeflow-clustertrainingruntime-torch-distributed.yaml": [
        f"warning: spec.mlPolicy.torch.numProcPerNode: {AUTO}",
        "warning: spec.template.spec.replicatedJobs[0].template.spec.template.spec.containers[0].name: becomes "
        "pytorch, as in kubetrain's runtimes, whose name this one has: the jobs converted for it name that "
        "container",
        "warning: metadata.name: kubetrain ships a ClusterTrainingRuntime torch-distributed: this one replaces it "
        "for every job that names it",
    ],
    "kubeflow-clustertrainingruntime-deepspeed-distributed.yaml": [
        "warning: spec.mlPolicy.mpi.sshAuthMountPath: not carried over: kubetrain mounts the job's ssh key at "
        "/root/.ssh and runs ssh as root",
        "warning: spec.mlPolicy.mpi.runLauncherAsNode: not carried over: kubetrain's Launcher hosts no ranks; "
        "numNodes counts the Workers that do, so a job of N nodes runs N Workers beside the Launcher (Trainer: "
        "N pods in all)",
        "warning: spec.template.spec.replicatedJobs[0].template.spec.template.spec.containers[0].name: becomes "
        "mpi, as in kubetrain's runtimes, whose name this one has: the jobs converted for it name that container",
        "warning: spec.template.spec.replicatedJobs[0].template.spec.template.spec.containers[0].readinessProbe."
        "tcpSocket.port: carried over as the Worker's port: sshd listens on 2222, and kubetrain's ssh config "
        "reaches each Worker at its port",
        "warning: spec.template.spec.replicatedJobs[1].template.spec.template.spec.containers[0].name: becomes "
        "mpi, as in kubetrain's runtimes, whose name this one has: the jobs converted for it name that container",
        "warning: spec.template.spec.replicatedJobs[1]: OMPI_MCA_orte_default_hostfile is /etc/kubetrain/hostfile "
        "(Trainer's: /etc/mpi/hostfile)",
        "warning: spec.template.spec.replicatedJobs[1]: kubetrain does not set OMPI_MCA_plm_rsh_args, "
        "OMPI_MCA_orte_set_default_slots: kubetrain's ssh config retries connections itself; the hostfile gives "
        "each worker its slots",
        "warning: metadata.labels.trainer.kubeflow.org/framework: becomes mpi: kubetrain's label names the "
        "runtime's framework",
        "warning: metadata.name: kubetrain convert writes a TrainJob that names deepspeed-distributed as one "
        "that names kubetrain's mpi-distributed: name this runtime in its runtimeRef to use this one",
    ],
    "kubeflow-clustertrainingruntime-jax-distributed.yaml": [
        "warning: spec.template.spec.replicatedJobs[0].template.spec.template.spec.containers[0].name: becomes "
        "jax, as in kubetrain's runtimes, whose name this one has: the jobs converted for it name that container",
        "warning: spec.template.spec.replicatedJobs[0]: kubetrain does not set JAX_COORDINATOR_PORT "
        "(JAX_COORDINATOR_ADDRESS holds the port, as does COORDINATOR_PORT) nor JAX_DISTRIBUTED_BACKEND "
        "(Trainer's: gloo)",
        "warning: metadata.labels.trainer.kubeflow.org/webhook-validation: not carried over: a label of Trainer's "
        "own",
        "warning: metadata.name: kubetrain ships a ClusterTrainingRuntime jax-distributed: this one replaces it "
        "for every job that names it",
    ],
    "kubeflow-trainingruntime-torchtune.yaml": [
        "warning: spec.podGroupPolicy.coscheduling.scheduleTimeoutSeconds: carried over as "
        "spec.runPolicy.schedulingPolicy.scheduleTimeoutSeconds: kubetrain fails the job (reason "
        "ScheduleTimeout) once its pods have been unschedulable this long, where coscheduling let the gang go "
        f"and tried again; {GANG}",
        "warning: spec.template.spec.replicatedJobs[0]: not carried over: kubetrain runs no dataset-initializer "
        "Job; a job made from this runtime fetches its dataset itself (in the trainer, or an initContainer of "
        "spec.replicaSpecs.Worker.template)",
        "warning: spec.template.spec.replicatedJobs[1]: not carried over: kubetrain runs no model-initializer "
        "Job; a job made from this runtime fetches its model itself (in the trainer, or an initContainer of "
        "spec.replicaSpecs.Worker.template)",
        "warning: spec.template.spec.replicatedJobs[2].dependsOn[0]: not carried over: the model-initializer Job "
        "is not carried over",
    ],
}
JOBS = sorted(n for n in SAMPLES if "trainjob" in n)
RUNTIME_SAMPLES = sorted(n for n in SAMPLES if "runtime" in n)
# Each TrainJob sample and the Trainer runtime it names (as Trainer shipped it).
RUNTIME_OF = {
    "kubeflow-trainjob-v2.0.yaml": "kubeflow-clustertrainingruntime-torch-distributed.yaml",
    "kubeflow-trainjob-v2.1.yaml": "kubeflow-clustertrainingruntime-deepspeed-distributed.yaml",
    "kubeflow-trainjob-v2.3.yaml": "kubeflow-clustertrainingruntime-jax-distributed.yaml",
}


def load(name: str) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((LEGACY / name).read_text())
    return data


def warnings_of(converted: document.Converted) -> list[str]:
    return [str(n) for n in converted.notes]


def converted(data: dict[str, Any]) -> dict[str, Any]:
    c = document.convert(data)
    assert c.job is None
    assert c.document is not None
    return c.encoded()


def notes_of(data: dict[str, Any]) -> str:
    return "\n".join(warnings_of(document.convert(data)))


def refused(data: Any) -> list[validation.FieldError]:
    with pytest.raises(validation.ValidationError) as e:
        document.convert(data)
    return list(e.value.errors)


def shipped_runtimes() -> list[dict[str, Any]]:
    return [
        yaml.safe_load(p.read_text())
        for p in sorted(RUNTIMES.glob("*.yaml"))
        if p.name != "kustomization.yaml"
    ]


def a_job(**spec: Any) -> dict[str, Any]:
    body = {"runtimeRef": {"name": "torch-distributed"}, "trainer": {"image": "img", "command": ["python3"]}}
    return {"apiVersion": API, "kind": "TrainJob", "metadata": {"name": "j"}, "spec": {**body, **spec}}


def a_runtime(ml: dict[str, Any], jobs: list[dict[str, Any]] | None = None, **spec: Any) -> dict[str, Any]:
    node = {
        "name": "node",
        "template": {
            "metadata": {"labels": {trainer.ANCESTOR: "trainer"}},
            "spec": {"template": {"spec": {"containers": [{"name": "node", "image": "img"}]}}},
        },
    }
    template = {"spec": {"replicatedJobs": jobs if jobs is not None else [node]}}
    return {
        "apiVersion": API,
        "kind": "ClusterTrainingRuntime",
        "metadata": {"name": "mine"},
        "spec": {"mlPolicy": ml, "template": template, **spec},
    }


def an_mpi_runtime(mpi: dict[str, Any]) -> dict[str, Any]:
    data = a_runtime({"mpi": mpi})
    launcher = {
        "name": "launcher",
        "template": {"spec": {"template": {"spec": {"containers": [{"name": "launcher", "image": "img"}]}}}},
    }
    data["spec"]["template"]["spec"]["replicatedJobs"].append(launcher)
    return data


def pods(job: dict[str, Any], runtimes: list[dict[str, Any]]) -> tuple[intake.Decoded, list[dict[str, Any]]]:
    obj = expansion.expand(job, expansion.from_documents(runtimes)).obj
    decoded = intake.decode(obj, weigh=True)
    return decoded, [o for o in render.render(decoded.job, decoded.framework) if o["kind"] == "Pod"]


# --- the samples --------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_each_sample_converts_with_exactly_its_warnings(name: str) -> None:
    c = document.convert(load(name))
    assert warnings_of(c) == SAMPLES[name]
    assert c.job is None
    assert (LEGACY / name).read_text().startswith("# Source: kubeflow/trainer")


def test_every_trainer_sample_is_listed_here() -> None:
    found = {p.name for p in LEGACY.glob("kubeflow-*.yaml") if "trainjob" in p.name or "runtime" in p.name}
    assert found == set(SAMPLES)


def test_v2_0_podspecoverrides_become_the_workers_template() -> None:
    out = converted(load("kubeflow-trainjob-v2.0.yaml"))
    assert (out["apiVersion"], out["kind"]) == (v1beta1.API_VERSION, "TrainingJob")
    assert out["metadata"] == {"name": "pytorch-mnist", "namespace": "team-vision"}
    spec = out["spec"]
    assert spec["runtimeRef"] == {"kind": "ClusterTrainingRuntime", "name": "torch-distributed"}
    assert spec["trainer"] == {
        "image": "docker.io/kubeflowkatib/pytorch-mnist:v1beta1-45c5727",
        "command": ["torchrun", "/opt/pytorch-mnist/mnist.py", "--epochs=1"],
        "env": [{"name": "NCCL_DEBUG", "value": "INFO"}],
        "numNodes": 2,
        "resourcesPerNode": {"limits": {"nvidia.com/gpu": 1}},
    }
    worker = spec["replicaSpecs"]["Worker"]["template"]["spec"]
    assert worker["volumes"] == [{"name": "mnist-data", "persistentVolumeClaim": {"claimName": "mnist-data"}}]
    assert worker["containers"] == [
        {"name": "pytorch", "volumeMounts": [{"name": "mnist-data", "mountPath": "/opt/pytorch-mnist/data"}]}
    ]
    assert worker["tolerations"][0]["key"] == "nvidia.com/gpu"
    assert set(spec) == {"runtimeRef", "trainer", "replicaSpecs"}


def test_v2_1_podtemplateoverrides_land_on_each_target_in_order() -> None:
    spec = converted(load("kubeflow-trainjob-v2.1.yaml"))["spec"]
    assert spec["runtimeRef"] == {"kind": "ClusterTrainingRuntime", "name": "mpi-distributed"}
    assert spec["trainer"]["procsPerNode"] == "2"  # MPI's slots
    assert spec["trainer"]["image"] == "ghcr.io/kubeflow/trainer/deepspeed-runtime"
    launcher, worker = (spec["replicaSpecs"][t]["template"] for t in ("Launcher", "Worker"))
    meta = {"labels": {"team": "ml-platform"}, "annotations": {"monitoring": "enabled"}}
    assert launcher == {
        "metadata": meta,
        "spec": {"serviceAccountName": "custom-sa", "nodeSelector": {"accelerator": "nvidia-tesla-v100"}},
    }
    assert worker["metadata"] == meta
    assert worker["spec"]["serviceAccountName"] == "custom-sa"  # the first override, kept by the second
    assert worker["spec"]["containers"] == [
        {"name": "mpi", "volumeMounts": [{"name": "shm", "mountPath": "/dev/shm"}]}
    ]


def test_v2_3_runtimepatches_keep_the_users_and_drop_kueues() -> None:
    spec = converted(load("kubeflow-trainjob-v2.3.yaml"))["spec"]
    worker = spec["replicaSpecs"]["Worker"]["template"]
    assert worker["metadata"] == {"labels": {"team": "research"}}
    assert "nodeSelector" not in worker["spec"]
    assert [m["mountPath"] for m in worker["spec"]["containers"][0]["volumeMounts"]] == [
        "/data",
        "/checkpoints",
    ]
    assert spec["runPolicy"] == {"activeDeadlineSeconds": 7200, "schedulingPolicy": {"queue": "research"}}
    assert "managedBy" not in spec


@pytest.mark.parametrize("name", RUNTIME_SAMPLES)
def test_converted_runtimes_decode_as_kubetrains(name: str) -> None:
    out = converted(load(name))
    cls = (
        v1beta1.ClusterTrainingRuntime if out["kind"] == "ClusterTrainingRuntime" else v1beta1.TrainingRuntime
    )
    runtime = wire.structure(out, cls)
    assert runtime.metadata.name == load(name)["metadata"]["name"]
    assert runtime.spec.trainer.replica_type == "Worker"


def test_the_runtimes_framework_replicas_and_trainer_places() -> None:
    torch = converted(load("kubeflow-clustertrainingruntime-torch-distributed.yaml"))
    assert torch["metadata"]["labels"] == {v1beta1.runtime_types.FRAMEWORK_LABEL: "pytorch"}
    assert torch["spec"]["framework"] == {"name": "pytorch"}  # auto: kubetrain's default
    assert torch["spec"]["replicaSpecs"]["Worker"]["replicas"] == 1
    assert torch["spec"]["trainer"] == {"replicaType": "Worker", "commandReplicaTypes": ["Worker"]}
    ds = converted(load("kubeflow-clustertrainingruntime-deepspeed-distributed.yaml"))["spec"]
    assert ds["framework"] == {"name": "mpi", "options": {"mpiImplementation": "OpenMPI"}}
    assert list(ds["replicaSpecs"]) == ["Launcher", "Worker"]
    assert ds["replicaSpecs"]["Worker"]["port"] == 2222
    assert ds["replicaSpecs"]["Launcher"]["restartPolicy"] == "OnFailure"  # JobSet's default, written out
    assert ds["successPolicy"] == {"operator": "All", "targets": [{"replicaType": "Launcher"}]}
    assert ds["trainer"] == {"replicaType": "Worker", "commandReplicaTypes": ["Launcher"]}
    tune = converted(load("kubeflow-trainingruntime-torchtune.yaml"))
    assert (tune["kind"], tune["metadata"]["namespace"]) == ("TrainingRuntime", "team-llm")
    assert tune["spec"]["framework"] == {"name": "pytorch", "pytorch": {"nprocPerNode": "2"}}
    assert list(tune["spec"]["replicaSpecs"]) == ["Worker"]  # the initializers dropped
    assert tune["spec"]["replicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["name"] == "node"
    assert tune["spec"]["runPolicy"] == {"schedulingPolicy": {"scheduleTimeoutSeconds": 120}}


# --- expanded, as admission expands a job -------------------------------------------------------


@pytest.mark.parametrize("name", JOBS)
def test_each_converted_job_expands_from_its_converted_runtime(name: str) -> None:
    job = converted(load(name))
    runtime = converted(load(RUNTIME_OF[name]))
    runtime["metadata"]["name"] = job["spec"]["runtimeRef"]["name"]  # deepspeed-distributed is named anew
    decoded, made = pods(job, [runtime])
    _check_pods(load(name), job, decoded, made)


@pytest.mark.parametrize("name", JOBS)
def test_each_converted_job_expands_from_the_runtime_kubetrain_ships(name: str) -> None:
    job = converted(load(name))
    decoded, made = pods(job, shipped_runtimes())
    _check_pods(load(name), job, decoded, made)


def _check_pods(
    source: dict[str, Any], job: dict[str, Any], decoded: intake.Decoded, made: list[dict[str, Any]]
) -> None:
    """The pods run Trainer's trainer (image, command, nodes) and carry the overrides."""
    fw = decoded.framework
    tr = job["spec"]["trainer"]
    workers = [p for p in made if p["metadata"]["name"].split("-")[-2] == "worker"]
    assert len(workers) == source["spec"]["trainer"]["numNodes"]
    for pod in made:
        containers = pod["spec"]["containers"]
        main = next(c for c in containers if c["name"] == fw.container)
        assert len(containers) == 1, [c["name"] for c in containers]  # an override added no container
        assert main["image"] == tr["image"]
        replica_type = next(
            t for t in decoded.job.spec.replica_specs if f"-{t.lower()}-" in pod["metadata"]["name"]
        )
        overrides = job["spec"].get("replicaSpecs", {}).get(replica_type, {}).get("template", {})
        for label, value in overrides.get("metadata", {}).get("labels", {}).items():
            assert pod["metadata"]["labels"][label] == value
        for volume in overrides.get("spec", {}).get("volumes", []):
            assert volume in pod["spec"]["volumes"]
        for mount in (overrides.get("spec", {}).get("containers") or [{}])[0].get("volumeMounts", []):
            assert mount in main["volumeMounts"]
        if "nodeSelector" in overrides.get("spec", {}):
            assert pod["spec"]["nodeSelector"] == overrides["spec"]["nodeSelector"]
    runs = [p for p in made if tr["command"][0] in (next(iter(p["spec"]["containers"]))).get("command", [])]
    assert runs, "no pod runs the trainer's command"


def test_an_xgboost_job_of_n_nodes_is_a_master_and_n_minus_one_workers() -> None:
    job = a_job(
        runtimeRef={"name": "xgboost-distributed"},
        trainer={"image": "x", "command": ["python3"], "numNodes": 3},
    )
    assert "becomes 2: Trainer's 3 nodes are kubetrain's Master" in notes_of(job)
    out = converted(job)
    assert out["spec"]["trainer"]["numNodes"] == 2
    _, made = pods(out, shipped_runtimes())
    assert sorted(p["metadata"]["name"] for p in made) == ["j-master-0", "j-worker-0", "j-worker-1"]
    # Trainer's own xgboost runtime, converted, gives the same pods.
    runtime = converted(a_runtime({"numNodes": 1, "xgboost": {}}))
    runtime["metadata"]["name"] = "xgboost-distributed"
    assert runtime["spec"]["replicaSpecs"]["Master"] == {
        "restartPolicy": "OnFailure",
        "template": {"spec": {"containers": [{"name": "node", "image": "img"}]}},
    }
    assert runtime["spec"]["replicaSpecs"]["Worker"]["replicas"] == 0
    assert runtime["spec"]["trainer"]["commandReplicaTypes"] == ["Master", "Worker"]
    _, made = pods(out, [runtime])
    assert len(made) == 3


def test_a_custom_runtime_and_its_job_keep_trainers_container_names() -> None:
    runtime = converted(load("kubeflow-trainingruntime-torchtune.yaml"))
    job = a_job(
        runtimeRef={"name": "torchtune-llama3.2-1b", "kind": "TrainingRuntime"},
        trainer={"numNodes": 1},
        podTemplateOverrides=[
            {
                "targetJobs": [{"name": "node"}],
                "spec": {"containers": [{"name": "node", "env": [{"name": "A", "value": "1"}]}]},
            }
        ],
    )
    job["metadata"]["namespace"] = "team-llm"
    out = converted(job)
    assert out["spec"]["replicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["name"] == "node"
    assert (
        "kept as written: a TrainingRuntime torchtune-llama3.2-1b must exist in the job's namespace"
        in notes_of(job)
    )
    _, made = pods(out, [runtime])
    (pod,) = made
    (main,) = pod["spec"]["containers"]
    assert main["image"] == "ghcr.io/kubeflow/trainer/torchtune-trainer"  # the runtime's, the job gives none
    assert {"name": "A", "value": "1"} in main["env"]
    assert main["command"][:2] == ["tune", "run"]


# --- the TrainJob's fields, one by one ----------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "ours", "said"),
    [
        ("torch-distributed", "torch-distributed", None),
        ("jax-distributed", "jax-distributed", None),
        ("xgboost-distributed", "xgboost-distributed", None),
        ("deepspeed-distributed", "mpi-distributed", "Trainer's deepspeed-distributed is an MPI runtime"),
        ("mlx-distributed", "mpi-distributed", "which is not an MLX runtime: kubetrain has none"),
        ("torchtune-llama3.2-1b", "torchtune-llama3.2-1b", "kept as written: a ClusterTrainingRuntime"),
    ],
)
def test_runtime_names_map_to_kubetrains(name: str, ours: str, said: str | None) -> None:
    job = a_job(
        runtimeRef={"name": name, "apiGroup": "trainer.kubeflow.org", "kind": "ClusterTrainingRuntime"}
    )
    job["spec"]["trainer"].pop("command")
    job["spec"]["trainer"]["args"] = ["train.py"]
    assert converted(job)["spec"]["runtimeRef"] == {"kind": "ClusterTrainingRuntime", "name": ours}
    ref = [w for w in warnings_of(document.convert(job)) if w.startswith("warning: spec.runtimeRef.name:")]
    assert [said in w for w in ref] == ([True] if said else [])


def test_a_job_without_an_image_gets_the_image_trainers_runtime_ran() -> None:
    job = a_job(runtimeRef={"name": "jax-distributed"})
    del job["spec"]["trainer"]["image"]
    assert converted(job)["spec"]["trainer"]["image"] == "nvcr.io/nvidia/jax:25.10-py3"
    assert "written out as trainer.image: nvcr.io/nvidia/jax:25.10-py3" in notes_of(job)
    del job["spec"]["trainer"]
    assert converted(job)["spec"]["trainer"] == {"image": "nvcr.io/nvidia/jax:25.10-py3"}
    unknown = a_job(runtimeRef={"name": "mine"})
    del unknown["spec"]["trainer"]
    assert "trainer" not in converted(unknown)["spec"]  # the runtime's own image


def test_num_proc_per_node() -> None:
    def procs(value: Any, runtime: str = "torch-distributed") -> Any:
        job = a_job(runtimeRef={"name": runtime})
        job["spec"]["trainer"]["numProcPerNode"] = value
        return converted(job)["spec"]["trainer"].get("procsPerNode"), notes_of(job)

    assert procs(4) == ("4", "")
    assert procs("8") == ("8", "")
    assert procs("gpu") == ("gpu", "")
    assert procs("auto")[0] is None
    assert AUTO in procs("auto")[1]
    assert procs("cpu")[0] == "cpu"
    assert "torchrun starts one process per CPU of the node" in procs("cpu")[1]
    assert procs(2, "deepspeed-distributed")[0] == "2"
    assert procs(2, "jax-distributed")[0] is None
    assert "Trainer's jax plugin ignored it" in procs(2, "jax-distributed")[1]
    assert "Trainer's xgboost plugin ignored it" in procs(2, "xgboost-distributed")[1]
    for bad, runtime in (
        ("auto", "deepspeed-distributed"),
        ("many", "torch-distributed"),
        (True, "mine"),
        (0, "mine"),
    ):
        job = a_job(runtimeRef={"name": runtime})
        job["spec"]["trainer"]["numProcPerNode"] = bad
        assert [f.path for f in refused(job)] == [("spec", "trainer", "numProcPerNode")]


def test_what_a_trainjob_says_that_does_not_carry_over() -> None:
    job = a_job(
        initializer={"dataset": {"storageUri": "hf://tatsu-lab/alpaca"}, "model": {"storageUri": "s3://b/m"}},
        labels={"a": "b"},
        annotations={"c": "d"},
        managedBy="kueue.x-k8s.io/multikueue",
        suspend=True,
    )
    job["spec"]["trainer"]["resourcesPerNode"] = {"limits": {"cpu": 2}, "claims": [{"name": "gpu"}]}
    said = notes_of(job)
    assert "spec.initializer.dataset: not carried over: kubetrain runs no dataset initializer" in said
    assert "fetch hf://tatsu-lab/alpaca in the trainer" in said
    assert "spec.initializer.model: not carried over" in said
    assert "fetch s3://b/m" in said
    assert "spec.labels: not carried over" in said
    assert "spec.annotations: not carried over" in said
    assert "spec.trainer.resourcesPerNode.claims: not carried over" in said
    assert "spec.managedBy: carried over: kubetrain leaves the job to kueue.x-k8s.io/multikueue" in said
    spec = converted(job)["spec"]
    assert spec["managedBy"] == "kueue.x-k8s.io/multikueue"
    assert spec["runPolicy"] == {"suspend": True}
    assert spec["trainer"]["resourcesPerNode"] == {"limits": {"cpu": 2}}


def test_overrides_of_initializers_and_kueues_are_dropped_with_a_warning() -> None:
    kueue_override = {
        "targetJobs": [{"name": "node"}],
        "metadata": {"labels": {"kueue.x-k8s.io/podset": "node"}},
        "spec": {"nodeSelector": {"pool": "a"}},
    }
    job = a_job(
        podTemplateOverrides=[
            kueue_override,
            {"targetJobs": [{"name": "dataset-initializer"}], "spec": {"serviceAccountName": "s"}},
        ]
    )
    said = notes_of(job)
    assert "spec.podTemplateOverrides[0]: not carried over: Kueue added it when it admitted the job" in said
    assert (
        "spec.podTemplateOverrides[1].targetJobs[0].name: not carried over: kubetrain runs no dataset-initializer"
        in said
    )
    assert "replicaSpecs" not in converted(job)["spec"]


def test_an_override_of_a_launcher_a_shipped_runtime_lacks_is_dropped() -> None:
    job = a_job(podSpecOverrides=[{"targetJobs": [{"name": "launcher"}], "nodeSelector": {"a": "b"}}])
    assert (
        "not carried over: kubetrain's torch-distributed has no launcher, as Trainer's had none"
        in notes_of(job)
    )
    assert "replicaSpecs" not in converted(job)["spec"]
    job["spec"]["runtimeRef"]["name"] = "mine"  # another runtime: it may have one
    assert converted(job)["spec"]["replicaSpecs"] == {
        "Launcher": {"template": {"spec": {"nodeSelector": {"a": "b"}}}}
    }


def test_later_overrides_win_and_named_lists_merge_by_name() -> None:
    job = a_job(
        podSpecOverrides=[
            {
                "targetJobs": [{"name": "node"}],
                "nodeSelector": {"a": "1"},
                "volumes": [{"name": "v", "emptyDir": {}}],
            },
            {
                "targetJobs": [{"name": "node"}],
                "nodeSelector": {"b": "2"},
                "volumes": [{"name": "w", "emptyDir": {}}, {"name": "v", "hostPath": {"path": "/x"}}],
                "tolerations": [{"key": "t", "operator": "Exists"}],
            },
        ]
    )
    worker = converted(job)["spec"]["replicaSpecs"]["Worker"]["template"]["spec"]
    assert worker["nodeSelector"] == {"a": "1", "b": "2"}
    assert worker["volumes"] == [
        {"name": "v", "emptyDir": {}, "hostPath": {"path": "/x"}},
        {"name": "w", "emptyDir": {}},
    ]


# --- the runtime's fields, one by one -----------------------------------------------------------


def test_ml_policies_become_frameworks() -> None:
    def framework(ml: dict[str, Any]) -> Any:
        return converted(a_runtime(ml))["spec"]["framework"]

    assert framework({"torch": {"numProcPerNode": 4}}) == {
        "name": "pytorch",
        "pytorch": {"nprocPerNode": "4"},
    }
    assert framework({"torch": {}}) == {"name": "pytorch"}
    mpi = converted(an_mpi_runtime({"numProcPerNode": 8}))["spec"]["framework"]
    assert mpi == {"name": "mpi", "options": {"slotsPerWorker": 8}}
    mpi = converted(an_mpi_runtime({"numProcPerNode": 1}))["spec"]["framework"]
    assert mpi == {"name": "mpi"}  # Trainer's 1: a slot per GPU, as kubetrain counts them
    assert framework({"jax": {}}) == {"name": "jax"}
    assert framework({"xgboost": {}}) == {"name": "xgboost"}
    assert framework({"numNodes": 2}) == {"name": "generic"}
    assert "Trainer's plain ML): kubetrain's generic framework" in notes_of(a_runtime({"numNodes": 2}))
    assert converted(a_runtime({"numNodes": 3, "jax": {}}))["spec"]["replicaSpecs"]["Worker"]["replicas"] == 3


def test_a_torch_elastic_policy_is_kubetraines_elastic() -> None:
    data = a_runtime(
        {"torch": {"elasticPolicy": {"minNodes": 2, "maxNodes": 8, "maxRestarts": 5, "metrics": []}}}
    )
    spec = converted(data)["spec"]
    assert spec["framework"]["pytorch"] == {"elastic": {"minReplicas": 2, "maxReplicas": 8, "maxRestarts": 5}}
    assert spec["replicaSpecs"]["Worker"]["replicas"] == 8
    assert spec["network"] == {"hostNames": "PerReplica"}
    said = notes_of(data)
    assert (
        "spec.mlPolicy.torch.elasticPolicy.metrics: not carried over: kubetrain creates no HorizontalPodAutoscaler"
        in said
    )
    assert "Trainer's torch plugin left elasticPolicy unimplemented" in said


def test_an_mpi_runtime_without_a_launcher_or_a_success_policy() -> None:
    (error,) = refused(a_runtime({"mpi": {}}))
    assert error.path == ("spec", "replicaSpecs")
    assert (
        error.message
        == "mpi needs at least 1 Launcher (in a job made from the converted ClusterTrainingRuntime)"
    )
    data = an_mpi_runtime({})
    assert (
        "no successPolicy: JobSet waited for every Job, kubetrain's mpi succeeds when its Launcher does"
        in notes_of(data)
    )


def test_pod_group_policies() -> None:
    cos = notes_of(a_runtime({"torch": {}}, podGroupPolicy={"coscheduling": {}}))
    assert f"spec.podGroupPolicy.coscheduling: carried over: {GANG}" in cos
    zero = converted(a_runtime({"torch": {}}, podGroupPolicy={"coscheduling": {"scheduleTimeoutSeconds": 0}}))
    assert zero["spec"]["runPolicy"] == {"schedulingPolicy": {"scheduleTimeoutSeconds": 60}}
    volcano = a_runtime({"torch": {}}, podGroupPolicy={"volcano": {"networkTopology": {"mode": "hard"}}})
    said = notes_of(volcano)
    assert "spec.podGroupPolicy.volcano.networkTopology: not carried over" in said
    assert "runPolicy" not in converted(volcano)["spec"]


def test_the_jobsets_own_fields() -> None:
    data = a_runtime({"torch": {}})
    js = data["spec"]["template"]
    js["metadata"] = {"labels": {"a": "b"}}
    js["spec"].update(
        failurePolicy={
            "maxRestarts": 3,
            "restartStrategy": "Recreate",
            "rules": [{"name": "r", "action": "FailJobSet"}],
        },
        startupPolicy={"startupPolicyOrder": "InOrder"},
        network={"subdomain": "mine", "enableDNSHostnames": True},
        ttlSecondsAfterFinished=100,
        volumeClaimPolicies=[{"templates": []}],
        successPolicy={"operator": "Any", "targetReplicatedJobs": ["node"]},
    )
    job = js["spec"]["replicatedJobs"][0]
    job["replicas"] = 2
    job["template"]["metadata"]["labels"]["team"] = "x"
    job["template"]["spec"].update(backoffLimit=0, parallelism=4)
    job["template"]["spec"]["template"]["spec"]["restartPolicy"] = "Never"
    spec = converted(data)["spec"]
    assert spec["runPolicy"] == {"backoffLimit": 3}
    assert spec["successPolicy"] == {"operator": "Any", "targets": [{"replicaType": "Worker"}]}
    assert spec["replicaSpecs"]["Worker"]["restartPolicy"] == "Never"
    assert "restartPolicy" not in spec["replicaSpecs"]["Worker"]["template"]["spec"]
    said = notes_of(data)
    for expected in (
        "spec.template.metadata: not carried over: labels and annotations of the JobSet",
        "spec.template.spec.failurePolicy.maxRestarts: carried over as spec.runPolicy.backoffLimit",
        "spec.template.spec.failurePolicy.restartStrategy: not carried over",
        "spec.template.spec.failurePolicy.rules: not carried over: JobSet's rules match the child Jobs' failure",
        "spec.template.spec.startupPolicy: not carried over",
        "spec.template.spec.network.subdomain: not carried over",
        "spec.template.spec.ttlSecondsAfterFinished: not carried over: it deleted the JobSet, not the TrainJob",
        "spec.template.spec.volumeClaimPolicies: not carried over: kubetrain creates no PersistentVolumeClaims",
        "spec.template.spec.replicatedJobs[0].replicas: not carried over: Trainer ran one Job of it",
        "spec.template.spec.replicatedJobs[0].template.metadata.labels: not carried over: labels of the Job",
        "spec.template.spec.replicatedJobs[0].template.spec.backoffLimit: not carried over: kubetrain makes the "
        "pods itself, not a Job; its restarts are runPolicy.backoffLimit's",
    ):
        assert expected in said
    assert "parallelism" not in said  # node's: Trainer set it from numNodes itself


# --- bad input: one error per field, with its path, never a traceback ----------------------------


@pytest.mark.parametrize(
    ("change", "path"),
    [
        (lambda d: d["spec"].update(runtimeRef="torch"), ("spec", "runtimeRef")),
        (lambda d: d["spec"].pop("runtimeRef"), ("spec", "runtimeRef")),
        (lambda d: d["spec"]["runtimeRef"].pop("name"), ("spec", "runtimeRef", "name")),
        (lambda d: d["spec"]["runtimeRef"].update(kind="Runtime"), ("spec", "runtimeRef", "kind")),
        (
            lambda d: d["spec"]["runtimeRef"].update(apiGroup="kubeflow.org"),
            ("spec", "runtimeRef", "apiGroup"),
        ),
        (lambda d: d["spec"]["trainer"].update(numNodes="2"), ("spec", "trainer", "numNodes")),
        (lambda d: d["spec"]["trainer"].update(command="python3 train.py"), ("spec", "trainer", "command")),
        (lambda d: d["spec"]["trainer"].update(env={"A": "1"}), ("spec", "trainer", "env")),
        (lambda d: d["spec"]["trainer"].update(env=[{"value": "1"}]), ("spec", "trainer", "env", 0, "name")),
        (lambda d: d["spec"]["trainer"].update(imag="x"), ("spec", "trainer", "imag")),
        (
            lambda d: d["spec"]["trainer"].update(resourcesPerNode={"limits": ["cpu"]}),
            ("spec", "trainer", "resourcesPerNode", "limits"),
        ),
        (lambda d: d["spec"].update(podSpecOverrides={"node": {}}), ("spec", "podSpecOverrides")),
        (
            lambda d: d["spec"].update(podSpecOverrides=[{"volumes": []}]),
            ("spec", "podSpecOverrides", 0, "targetJobs"),
        ),
        (
            lambda d: d["spec"].update(podTemplateOverrides=[{"targetJobs": [{"name": "trainer-node"}]}]),
            ("spec", "podTemplateOverrides", 0, "targetJobs", 0, "name"),
        ),
        (
            lambda d: d["spec"].update(
                podTemplateOverrides=[{"targetJobs": [{"name": "node"}], "spec": {"tolerations": {}}}]
            ),
            ("spec", "podTemplateOverrides", 0, "spec", "tolerations"),
        ),
        (
            lambda d: d["spec"].update(
                podTemplateOverrides=[
                    {
                        "targetJobs": [{"name": "node"}],
                        "spec": {"containers": [{"name": "node", "image": "x"}]},
                    }
                ]
            ),
            ("spec", "podTemplateOverrides", 0, "spec", "containers", 0, "image"),
        ),
        (
            lambda d: d["spec"].update(runtimePatches=[{"trainingRuntimeSpec": {}}]),
            ("spec", "runtimePatches", 0, "manager"),
        ),
        (lambda d: d["spec"].update(activeDeadlineSeconds=0), ("spec", "activeDeadlineSeconds")),
        (lambda d: d["spec"].update(suspend="yes"), ("spec", "suspend")),
        (lambda d: d.update(spec=[]), ("spec",)),
        (lambda d: d.pop("metadata"), ("metadata",)),
    ],
)
def test_a_bad_trainjob_is_one_error_at_its_path(change: Any, path: validation.Path) -> None:
    data = a_job()
    change(data)
    assert [f.path for f in refused(data)] == [path]
    assert notes_of(a_job()) == ""


@pytest.mark.parametrize(
    ("change", "path"),
    [
        (lambda d: d["spec"].update(mlPolicy="torch"), ("spec", "mlPolicy")),
        (lambda d: d["spec"]["mlPolicy"].update(mpi={}), ("spec", "mlPolicy", "mpi")),
        (lambda d: d["spec"]["mlPolicy"].update(numNodes=-1), ("spec", "mlPolicy", "numNodes")),
        (
            lambda d: d["spec"]["mlPolicy"].update(torch={"numProcPerNode": "all"}),
            ("spec", "mlPolicy", "torch", "numProcPerNode"),
        ),
        (lambda d: d["spec"].update(mlPolicy={"flux": {"numProcPerNode": 1}}), ("spec", "mlPolicy", "flux")),
        (lambda d: d["spec"].pop("template"), ("spec", "template")),
        (
            lambda d: d["spec"]["template"]["spec"].update(replicatedJobs={}),
            ("spec", "template", "spec", "replicatedJobs"),
        ),
        (
            lambda d: d["spec"]["template"]["spec"]["replicatedJobs"][0].update(name="trainer-node"),
            ("spec", "template", "spec", "replicatedJobs", 0, "name"),
        ),
        (
            lambda d: d["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"].update(
                template=[]
            ),
            ("spec", "template", "spec", "replicatedJobs", 0, "template", "spec", "template"),
        ),
        (
            lambda d: d["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"][
                "spec"
            ].update(restartPolicy="Sometimes"),
            (
                "spec",
                "template",
                "spec",
                "replicatedJobs",
                0,
                "template",
                "spec",
                "template",
                "spec",
                "restartPolicy",
            ),
        ),
        (
            lambda d: d["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"][
                "spec"
            ].update(containers="node"),
            (
                "spec",
                "template",
                "spec",
                "replicatedJobs",
                0,
                "template",
                "spec",
                "template",
                "spec",
                "containers",
            ),
        ),
        (
            lambda d: d["spec"]["template"]["spec"].update(successPolicy={"targetReplicatedJobs": ["nodes"]}),
            ("spec", "template", "spec", "successPolicy", "targetReplicatedJobs", 0),
        ),
        (lambda d: d["spec"].update(podGroupPolicy={"kai": {}}), ("spec", "podGroupPolicy", "kai")),
    ],
)
def test_a_bad_runtime_is_one_field_refused_at_its_path(change: Any, path: validation.Path) -> None:
    data = a_runtime({"torch": {}})
    change(data)
    # One field, and its errors (a template's containers may be two things wrong at once).
    assert {f.path for f in refused(data)} == {path}


def test_the_command_prints_one_error_line_and_no_traceback(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        (LEGACY / "kubeflow-trainjob-v2.1.yaml").read_text().replace("numNodes: 2", "numNodes: two")
    )
    assert main.main(["convert", str(bad)]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err.splitlines() == [f"error: {bad}:23:5: spec.trainer.numNodes: expected an integer, got 'two'"]
    assert "Traceback" not in err
    assert (
        main.main(
            ["convert", str(LEGACY / "kubeflow-trainjob-v2.0.yaml"), "--to", "kubeflow.org/v1/PyTorchJob"]
        )
        == 1
    )
    assert "--to writes TrainingJobs only" in capsys.readouterr().err


def test_every_part_of_every_sample_of_another_type_converts_or_is_refused() -> None:
    """Each value of each sample replaced by one of another JSON type, at random: the conversion
    gives a document or a ValidationError, never another exception."""
    rng = random.Random(47)
    others: list[Any] = [None, 7, "x", True, [], {}, [1], {"k": "v"}]
    tried = 0
    problems: list[Any] = []
    for name in sorted(SAMPLES):
        doc = load(name)
        paths = list(_paths(doc))
        for path in rng.sample(paths, min(len(paths), 60)):
            for value in rng.sample(others, 3):
                data = copy.deepcopy(doc)
                _set(data, path, value)
                try:
                    document.convert(data)
                except validation.ValidationError as e:
                    problems += [] if e.errors else [(name, path, value)]
                tried += 1
    assert tried > 1000
    assert problems == []


def _paths(value: Any, at: tuple[Any, ...] = ()) -> Any:
    if at:
        yield at
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _paths(v, (*at, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _paths(v, (*at, i))


def _set(data: Any, path: tuple[Any, ...], value: Any) -> None:
    for part in path[:-1]:
        data = data[part]
    data[path[-1]] = value


def test_the_kinds_are_registered_once() -> None:
    for kind in ("TrainJob", "TrainingRuntime", "ClusterTrainingRuntime"):
        found = document.kind_of({"apiVersion": API, "kind": kind})
        assert found is not None
        assert found.kind == kind
        assert found in (*trainjob.KINDS, *trainingruntime.KINDS)
    assert document.kind_of({"apiVersion": "trainer.kubeflow.org/v2alpha1", "kind": "TrainJob"}) is None


@pytest.mark.parametrize(
    "path", sorted((ROOT / "samples" / "v1beta1" / "short").glob("*.yaml")), ids=lambda p: p.stem
)
def test_kubetrain_s_own_job_made_from_a_runtime_passes_through_as_it_is(path: pathlib.Path) -> None:
    data = yaml.safe_load(path.read_text())
    out = document.convert(data)
    assert out.job is None
    assert out.document == data


def test_a_job_made_from_a_runtime_is_checked_in_its_own_parts() -> None:
    data = {
        "apiVersion": v1beta1.API_VERSION,
        "kind": "TrainingJob",
        "metadata": {"name": "j"},
        "spec": {
            "runtimeRef": {"name": 5, "kind": "Bogus"},
            "trainer": {"numNodes": -1},
            "replicaSpecs": {"Worker": [1], "Chief": {"template": {"spec": "x"}}},
        },
    }
    with pytest.raises(validation.ValidationError) as e:
        document.convert(data)
    assert {".".join(map(str, f.path)) for f in e.value.errors} == {
        "spec.runtimeRef.name",
        "spec.runtimeRef.kind",
        "spec.trainer.numNodes",
        "spec.replicaSpecs.Worker",
        "spec.replicaSpecs.Chief.template.spec",
    }
