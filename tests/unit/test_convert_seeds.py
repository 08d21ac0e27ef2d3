"""`kubetrain convert` of the first operators' jobs, as their documentation printed them.

The samples in samples/legacy are those documents (each names its source). Every one must
convert into a TrainingJob the cluster admits, with exactly the warnings below, and render
pods that run the old containers with the variables the old operator set. What the old
operators set is written out here from their documentation and code (docs/migrating.md
cites them), not taken from kubetrain's frameworks.
"""

from __future__ import annotations

import json
import pathlib
from typing import Any

import pytest
import yaml
from testkit import seed_kinds

from kubetrain.api import scheme, v1beta1, validation
from kubetrain.cli import main
from kubetrain.convert import chainerjob, document, kinds, mxjob, tfjob
from kubetrain.operator.frameworks import framework

LEGACY = pathlib.Path(__file__).resolve().parents[2] / "samples" / "legacy"
SEED_SAMPLES = sorted(p for p in LEGACY.glob("*.yaml") if not p.name.startswith(("kubeflow-", "mpijob")))
RESTART = (
    "the pod gets restartPolicy Never from the replica's restartPolicy {why}ExitCode: exit codes 1-127 fail "
    "the job at once, 128-255 and lost pods are restarted, as the old operator classified them{end}"
)
TF_RESTART = "OnFailure not carried over: " + RESTART.format(why="", end="")
MX_RESTART = "OnFailure not carried over: " + RESTART.format(why="(kubetrain's MXNet default, ", end=")")
MASTER = (
    "MASTER becomes replica type Master, whose TF_CONFIG task type is chief, not master (TensorFlow 2 "
    "refuses master): code that looks for master in TF_CONFIG must look for chief"
)
SSH = (
    "workers are reached over ssh with a per-job key (Secret example-job-mn-ssh at /root/.ssh), not by "
    "kubectl exec: run sshd in each set's chainer container (mkdir -p /run/sshd && exec /usr/sbin/sshd -De; "
    "the image needs openssh-server) instead of sleeping"
)
MPIEXEC = (
    "mpiexec finds the hostfile at /etc/kubetrain/hostfile (OMPI_MCA_orte_default_hostfile) and starts ranks "
    "with OMPI_MCA_plm_rsh_agent=ssh; /kubeflow/chainer-operator (its hostfile, kubexec.sh, KUBECTL_DIR) is "
    "gone, and only the master's chainer container gets OMPI_MCA_*"
)


def mx_restarts(restarted: str = "SERVERs and WORKERs") -> str:
    return (
        f"the operator restarted the {restarted} whenever they exited, whatever the exit code; kubetrain's MXNet "
        "default (ExitCode, one pod) fails the job when any exits with 1-127, and recreates the pod for 128-255 "
        "or when it is lost. For the old behaviour set restartPolicy: OnFailure on Server and Worker: the "
        "kubelet then restarts a failed one whatever its exit code, each restart spending runPolicy.backoffLimit "
        "(default 6)"
    )


GPU = (
    "becomes nvidia.com/gpu in container tensorflow: Kubernetes 1.11 removed alpha.kubernetes.io/nvidia-gpu, "
    "which no node offers now (the pod would never be scheduled); nvidia.com/gpu is the NVIDIA device "
    "plugin's name for the GPUs"
)


def hostnet(job: str) -> str:
    return (
        "kept, though no longer needed: the operator created no Services, so workers met over the hosts' "
        f"network; kubetrain gives each worker a headless Service ({job}-worker-{{i}}), which resolves there "
        "too (the pods get dnsPolicy ClusterFirstWithHostNet), and on the host network its port 2222 is the "
        "node's, so two workers cannot share a node"
    )


WARNINGS: dict[str, list[str]] = {
    "tfjob-readme-default-ps.yaml": [
        f"spec.replicaSpecs[0].tfReplicaType: {MASTER}",
        f"spec.replicaSpecs[0].template.spec.restartPolicy: {TF_RESTART}",
        f"spec.replicaSpecs[1].template.spec.restartPolicy: {TF_RESTART}",
        "spec.replicaSpecs[2]: no template: kubetrain has no default parameter server, so the job gets the one "
        "the operator ran: tensorflow/tensorflow:1.3.0 serving TensorFlow's gRPC server from TF_CONFIG",
    ],
    "tfjob-readme-tensorboard-azure.yaml": [
        f"spec.replica_specs[0].tfReplicaType: {MASTER}",
        f"spec.replica_specs[0].template.spec.restartPolicy: {TF_RESTART}",
        "spec.replica_specs[0].template.spec.containers[0].resources.limits.alpha.kubernetes.io/nvidia-gpu: "
        + GPU,
        "spec.tensorboard: not carried over: /tmp/tensorflow is on no volume of the replicas: mount one the pods "
        "share (a ReadWriteMany persistentVolumeClaim, nfs, or hostPath where all pods share a disk) at "
        "/tmp/tensorflow or above it in a replica's container; mount the volume of tensorboard.volumes in the "
        "replicas at logDir to keep TensorBoard",
    ],
    "mxjob-readme-dist.yaml": [
        *(f"spec.replicaSpecs[{i}].template.spec.restartPolicy: {MX_RESTART}" for i in range(3)),
        f"spec.replicaSpecs: {mx_restarts()}",
        "spec.replicaSpecs: PS_VERBOSE=2, which this operator set in every mxnet container, is not set: add it "
        "to a template's env for ps-lite's verbose logs",
    ],
    "mxjob-deepinsight-dist.yaml": [
        *(f"spec.replicaSpecs[{i}].template.spec.restartPolicy: {MX_RESTART}" for i in range(3)),
        f"spec.replicaSpecs: {mx_restarts()}",
    ],
    "mxjob-kubeflow-dist.yaml": [
        *(f"spec.replicaSpecs[{i}].template.spec.restartPolicy: {MX_RESTART}" for i in range(3)),
        f"spec.replicaSpecs: {mx_restarts('SERVERs and WORKERs (but WORKER 0, whose exit decided the job)')}",
    ],
    "caffe2job-readme-redis.yaml": [f"spec.replicaSpecs.template.spec.hostNetwork: {hostnet('example-job')}"],
    "caffe2job-resnet50-nfs.yaml": [
        f"spec.replicaSpecs.template.spec.hostNetwork: {hostnet('example-job-1')}"
    ],
    "chainerjob-readme-mn.yaml": [f"spec.workerSets: {SSH}", f"spec.master: {MPIEXEC}"],
    "chainerjob-reference.yaml": [
        "spec.master.backoffLimit: carried over as runPolicy.backoffLimit, the restarts of the whole job that "
        "user code may cause (exit codes 128-255); exit codes 1-127 now fail the job at once",
        f"spec.workerSets: {SSH}",
        f"spec.master: {MPIEXEC}",
    ],
}


def load(name: str) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((LEGACY / name).read_text())
    return data


def convert(data: dict[str, Any]) -> document.Converted:
    return document.convert(data)


def errors_of(data: dict[str, Any]) -> list[str]:
    with pytest.raises(validation.ValidationError) as e:
        document.convert(data)
    return [str(f) for f in e.value.errors]


def rendered(name: str) -> dict[str, dict[str, Any]]:
    return seed_kinds.pods(convert(load(name)).job)


def test_every_sample_of_a_first_kind_names_its_source_and_has_its_warnings_here() -> None:
    assert sorted(p.name for p in SEED_SAMPLES) == sorted(WARNINGS)
    for path in SEED_SAMPLES:
        assert path.read_text().startswith("# "), path


@pytest.mark.parametrize("name", sorted(WARNINGS))
def test_a_documented_job_converts_with_exactly_its_warnings(name: str) -> None:
    converted = convert(load(name))
    assert [str(n).removeprefix("warning: ") for n in converted.notes] == WARNINGS[name]
    assert all(str(n).startswith("warning: ") for n in converted.notes)


# --- TfJob --------------------------------------------------------------------------------


def test_tfjob_master_worker_and_default_ps_get_the_old_tf_config() -> None:
    pods = rendered("tfjob-readme-default-ps.yaml")
    assert sorted(pods) == [
        "example-job-master-0",
        "example-job-ps-0",
        "example-job-ps-1",
        "example-job-worker-0",
    ]
    for name, (task, index) in {
        "example-job-master-0": ("chief", 0),  # the old master, under the name TensorFlow 2 takes
        "example-job-worker-0": ("worker", 0),
        "example-job-ps-0": ("ps", 0),
        "example-job-ps-1": ("ps", 1),
    }.items():
        config = json.loads(seed_kinds.env(pods[name])["TF_CONFIG"])
        assert config["task"] == {"type": task, "index": index}
        assert config["environment"] == "cloud"
        assert {k: len(v) for k, v in config["cluster"].items()} == {"chief": 1, "worker": 1, "ps": 2}
        assert all(a.endswith(":2222") for v in config["cluster"].values() for a in v)
    master = seed_kinds.main_container(pods["example-job-master-0"])
    assert master["image"] == "gcr.io/tf-on-k8s-dogfood/tf_sample:dc944ff"
    ps = seed_kinds.main_container(pods["example-job-ps-1"])
    assert ps["image"] == "tensorflow/tensorflow:1.3.0"  # tensorflow.org/v1alpha1's DefaultTFImage
    assert ps["command"][:2] == ["python", "-c"]
    assert "Server" in ps["command"][2]
    # The old operator classified the MASTER's exit code; now every replica is classified.
    job = convert(load("tfjob-readme-default-ps.yaml")).job
    assert {s.restart_policy for s in job.spec.replica_specs.values()} == {v1beta1.RestartPolicy.EXIT_CODE}
    assert job.spec.success_policy is None  # the Master decides, as kubetrain's TensorFlow does


def test_tfjob_tensorboard_on_a_volume_the_replicas_share_is_carried_over() -> None:
    data = load("tfjob-readme-tensorboard-azure.yaml")
    template = data["spec"]["replica_specs"][0]["template"]["spec"]
    template["volumes"] = [
        {"name": "azurefile", "azureFile": {"secretName": "azure-secret", "shareName": "data"}}
    ]
    template["containers"][0]["volumeMounts"] = [{"name": "azurefile", "mountPath": "/tmp/tensorflow"}]
    data["spec"]["tensorboard"]["serviceType"] = "LoadBalancer"
    data["spec"]["tfImage"] = "tensorflow/tensorflow:1.15.5"
    converted = convert(data)
    board = converted.job.spec.tensorboard
    assert board is not None
    assert (board.log_dir, board.image) == ("/tmp/tensorflow", "tensorflow/tensorflow:1.15.5")
    assert [str(n) for n in converted.notes][3:] == [
        "warning: spec.tensorboard.volumes: not carried over: kubetrain mounts the replicas' volume 'azurefile' "
        "under logDir read-only in TensorBoard's pod",
        "warning: spec.tensorboard.serviceType: LoadBalancer not carried over: kubetrain's TensorBoard Service is "
        "ClusterIP; reach it with `kubetrain tensorboard JOB` or expose it yourself",
    ]
    back = document.back(converted.job, "kubeflow.org/v1alpha1", "TFJob")
    assert (back["spec"]["tensorboard"], back["spec"]["tfImage"]) == (
        {"logDir": "/tmp/tensorflow"},
        "tensorflow/tensorflow:1.15.5",
    )
    # The first TfJob had no tfImage: its TensorBoard names its image itself (deepinsight's fork).
    first = document.back(converted.job, "mlkube.io/v1beta1", "TfJob")
    assert first["spec"]["tensorboard"] == {
        "logDir": "/tmp/tensorflow",
        "image": "tensorflow/tensorflow:1.15.5",
    }


def test_tfjob_terminationpolicy_scheduler_name_and_runtime_id_are_carried_over() -> None:
    data = load("tfjob-readme-default-ps.yaml")
    data["spec"]["RuntimeId"] = "76no"
    data["spec"]["schedulerName"] = "kube-batch"
    data["spec"]["terminationPolicy"] = {"chief": {"replicaName": "WORKER", "replicaIndex": 0}}
    job = convert(data).job
    assert job.spec.runtime_id == "76no"
    assert job.spec.success_policy == v1beta1.SuccessPolicy(
        targets=(v1beta1.SuccessTarget(replica_type="Worker", index=0),)
    )
    assert {s.template["spec"]["schedulerName"] for s in job.spec.replica_specs.values()} == {"kube-batch"}


@pytest.mark.parametrize(
    ("change", "error"),
    [
        (
            lambda s: s["replicaSpecs"][1].update(tfReplicaTyp="WORKER"),
            "spec.replicaSpecs[1].tfReplicaTyp: unknown field",
        ),
        (
            lambda s: s["replicaSpecs"][0].update(replicas=2),
            "spec.replicaSpecs[0].replicas: a MASTER runs exactly 1 replica, not 2",
        ),
        (
            lambda s: s["replicaSpecs"].append(dict(s["replicaSpecs"][1])),
            "spec.replicaSpecs[3]: WORKER is listed twice (first at spec.replicaSpecs[1]); merge them",
        ),
        (
            lambda s: s["replicaSpecs"][1].update(tfReplicaType="CHIEF"),
            "spec.replicaSpecs[1].tfReplicaType: must be one of MASTER, WORKER, PS, got 'CHIEF'",
        ),
        (
            lambda s: s["replicaSpecs"][1].update(tfPort="2222"),
            "spec.replicaSpecs[1].tfPort: expected an integer, got '2222'",
        ),
        (
            lambda s: s["replicaSpecs"][1].pop("template"),
            "spec.replicaSpecs[1].template: required: the pod template of the WORKER replicas",
        ),
        (
            lambda s: s["replicaSpecs"][1]["template"]["spec"].update(
                containers=[{"name": "x"}, {"name": "y"}]
            ),
            "spec.replicaSpecs[1].template.spec.containers: name one container 'tensorflow', as the old operator "
            "required, or keep a single container",
        ),
        (
            lambda s: s.update(terminationPolicy={"chief": {"replicaName": "WORKER", "replicaIndex": 3}}),
            "spec.terminationPolicy.chief.replicaName: no replica WORKER[3] in this job",
        ),
        (
            lambda s: s.update(RuntimeId="Run-1"),
            "spec.RuntimeId: 'Run-1' cannot be kubetrain's spec.runtimeId: use 1 to 16 lower-case letters or digits",
        ),
        (
            lambda s: s["replicaSpecs"].pop(0),
            "spec.replicaSpecs: a TfJob needs a MASTER (or terminationPolicy.chief naming another replica): its "
            "exit decided the job",
        ),
    ],
)
def test_a_bad_tfjob_is_an_error_at_its_path(change: Any, error: str) -> None:
    data = load("tfjob-readme-default-ps.yaml")
    change(data["spec"])
    assert errors_of(data) == [error]


def test_the_first_tfjob_has_no_later_fields_and_needs_its_master() -> None:
    data = load("tfjob-readme-default-ps.yaml")
    data["apiVersion"], data["kind"] = "mlkube.io/v1beta1", "TfJob"
    data["spec"]["tfImage"] = "tensorflow/tensorflow:1.3.0"
    assert errors_of(data) == ["spec.tfImage: unknown field"]
    del data["spec"]["tfImage"]
    data["spec"]["replicaSpecs"].pop(0)
    assert errors_of(data) == ["spec.replicaSpecs: a TfJob needs a MASTER: its exit decided the job"]


def test_the_removed_gpu_resource_becomes_nvidia_com_gpu_in_requests_and_limits_with_a_warning() -> None:
    data = load("tfjob-readme-tensorboard-azure.yaml")
    master = data["spec"]["replica_specs"][0]["template"]["spec"]
    master["containers"][0]["resources"] = {
        "requests": {"cpu": "1", "alpha.kubernetes.io/nvidia-gpu": 2},
        "limits": {"alpha.kubernetes.io/nvidia-gpu": 2, "memory": "1Gi"},
    }
    master["initContainers"] = [
        {"name": "warm", "image": "busybox", "resources": {"limits": {"alpha.kubernetes.io/nvidia-gpu": 1}}}
    ]
    converted = convert(data)
    spec = converted.job.spec.replica_specs["Master"].template["spec"]
    # Each where it stood, the other resources kept.
    assert spec["containers"][0]["resources"] == {
        "requests": {"cpu": "1", "nvidia.com/gpu": 2},
        "limits": {"nvidia.com/gpu": 2, "memory": "1Gi"},
    }
    assert spec["initContainers"][0]["resources"] == {"limits": {"nvidia.com/gpu": 1}}
    at = "spec.replica_specs[0].template.spec"
    gpu = [str(n).removeprefix("warning: ") for n in converted.notes if "nvidia" in str(n)]
    assert gpu == [
        f"{at}.initContainers[0].resources.limits.alpha.kubernetes.io/nvidia-gpu: "
        + GPU.replace("container tensorflow", "container warm"),
        f"{at}.containers[0].resources.requests.alpha.kubernetes.io/nvidia-gpu: {GPU}",
        f"{at}.containers[0].resources.limits.alpha.kubernetes.io/nvidia-gpu: {GPU}",
    ]
    # The frameworks count the GPUs now (they read */gpu).
    assert framework.gpus_requested(spec["containers"][0]) == 2


def test_a_container_asking_for_both_gpu_names_keeps_todays() -> None:
    data = load("mxjob-readme-dist.yaml")
    worker = data["spec"]["replicaSpecs"][2]["template"]["spec"]["containers"][0]
    worker["resources"] = {"limits": {"nvidia.com/gpu": 1, "alpha.kubernetes.io/nvidia-gpu": 4}}
    converted = convert(data)
    spec = converted.job.spec.replica_specs["Worker"].template["spec"]
    assert spec["containers"][0]["resources"] == {"limits": {"nvidia.com/gpu": 1}}
    assert (
        "warning: spec.replicaSpecs[2].template.spec.containers[0].resources.limits.alpha.kubernetes.io/"
        "nvidia-gpu: not carried over: container mxnet asks for nvidia.com/gpu too (1); Kubernetes 1.11 removed "
        "alpha.kubernetes.io/nvidia-gpu, which no node offers now (the pod would never be scheduled)"
    ) in [str(n) for n in converted.notes]


# --- MXJob --------------------------------------------------------------------------------


def test_the_readme_mxjob_gets_the_dmlc_variables_its_operator_set() -> None:
    pods = rendered("mxjob-readme-dist.yaml")
    assert sorted(pods) == ["mx-test-dist-scheduler-0", "mx-test-dist-server-0", "mx-test-dist-worker-0"]
    scheduler = pods["mx-test-dist-scheduler-0"]["spec"]["hostname"]
    for role in ("scheduler", "server", "worker"):
        pod = pods[f"mx-test-dist-{role}-0"]
        env = seed_kinds.env(pod)
        assert env["DMLC_ROLE"] == role
        assert env["DMLC_PS_ROOT_URI"].split(".")[0] == scheduler
        assert env["DMLC_PS_ROOT_PORT"] == "9000"  # fioravanzo.org's default mxPort
        assert (env["DMLC_NUM_SERVER"], env["DMLC_NUM_WORKER"], env["DMLC_USE_KUBERNETES"]) == ("1", "1", "1")
        assert seed_kinds.main_container(pod)["image"] == "stefanofioravanzo/mxnet-linear-dist:cpu"
    job = convert(load("mxjob-readme-dist.yaml")).job
    # Its operator decided the job by the SCHEDULER (terminationPolicy's default there).
    assert job.spec.success_policy == v1beta1.SuccessPolicy(
        targets=(v1beta1.SuccessTarget(replica_type="Scheduler", index=0),)
    )
    assert job.spec.framework.options == {"mode": "dist"}


def test_kubeflows_mxjob_keeps_the_schedulers_port_its_chief_and_cleanup() -> None:
    pods = rendered("mxjob-kubeflow-dist.yaml")
    assert len(pods) == 5
    assert {seed_kinds.env(p)["DMLC_PS_ROOT_PORT"] for p in pods.values()} == {"9000"}
    job = convert(load("mxjob-kubeflow-dist.yaml")).job
    assert job.spec.replica_specs["Scheduler"].port == 9000
    assert job.spec.replica_specs["Worker"].port is None  # PsRootPort's default, 9091, is kubetrain's
    assert job.spec.run_policy.clean_pod_policy is v1beta1.CleanPodPolicy.ALL  # cleanupPodPolicy's default
    assert job.spec.success_policy == v1beta1.SuccessPolicy(
        targets=(v1beta1.SuccessTarget(replica_type="Worker", index=0),)
    )


def test_deepinsights_mxjob_is_decided_by_its_scheduler_in_dist_mode_and_its_worker_in_local() -> None:
    job = convert(load("mxjob-deepinsight-dist.yaml")).job
    assert job.spec.success_policy is not None
    assert job.spec.success_policy.targets[0].replica_type == "Scheduler"
    data = load("mxjob-deepinsight-dist.yaml")
    data["spec"]["jobMode"] = "local"
    data["spec"]["replicaSpecs"] = data["spec"]["replicaSpecs"][2:]
    local = convert(data).job
    assert local.spec.framework.options == {"mode": "local"}
    assert local.spec.success_policy is not None
    assert local.spec.success_policy.targets[0].replica_type == "Worker"
    assert "DMLC_PS_ROOT_URI" not in seed_kinds.env(seed_kinds.pods(local)["example-dist-job-worker-0"])
    del data["spec"]["jobMode"]
    assert errors_of(data) == ["spec.jobMode: required: local or dist"]


def test_servers_and_workers_no_longer_restart_whatever_their_exit_code_and_onfailure_brings_it_back() -> (
    None
):
    # The README: "Servers are automatically restarted if they exit", "Workers are ...".
    notes = [str(n) for n in convert(load("mxjob-readme-dist.yaml")).notes]
    assert f"warning: spec.replicaSpecs: {mx_restarts()}" in notes
    # What the warning says to set is a job kubetrain runs: the kubelet restarts those pods.
    job = convert(load("mxjob-readme-dist.yaml")).job
    document = scheme.encode(job)
    for key in ("Server", "Worker"):
        document["spec"]["replicaSpecs"][key]["restartPolicy"] = "OnFailure"
    pods = seed_kinds.pods(scheme.to_hub(scheme.decode(document)))
    assert {n.rsplit("-", 2)[1]: p["spec"]["restartPolicy"] for n, p in pods.items()} == {
        "scheduler": "Never",
        "server": "OnFailure",
        "worker": "OnFailure",
    }
    # A lone WORKER in local mode decided its job by its own exit code: nothing changes there.
    data = load("mxjob-deepinsight-dist.yaml")
    data["spec"]["jobMode"] = "local"
    data["spec"]["replicaSpecs"] = data["spec"]["replicaSpecs"][2:]
    assert not any("whenever they exited" in str(n) for n in convert(data).notes)


@pytest.mark.parametrize(
    ("change", "error"),
    [
        (
            lambda s: s["replicaSpecs"][0].update(mxReplicaTyp="SERVER"),
            "spec.replicaSpecs[0].mxReplicaTyp: unknown field",
        ),
        (
            lambda s: s["replicaSpecs"][0].update(replicas=2),
            "spec.replicaSpecs[0].replicas: a SCHEDULER runs exactly 1 replica, not 2",
        ),
        (
            lambda s: s["replicaSpecs"][0].update(mxPort=0),
            "spec.replicaSpecs[0].mxPort: must be between 1 and 65535, got 0",
        ),
        (lambda s: s.update(jobMode="cluster"), "spec.jobMode: must be one of local, dist, got 'cluster'"),
        (
            lambda s: s["replicaSpecs"].pop(0),
            "spec.replicaSpecs: the job's outcome follows SCHEDULER 0, which this job lacks",
        ),
    ],
)
def test_a_bad_mxjob_is_an_error_at_its_path(change: Any, error: str) -> None:
    data = load("mxjob-readme-dist.yaml")
    change(data["spec"])
    assert errors_of(data) == [error]


# --- Caffe2Job ----------------------------------------------------------------------------


def test_caffe2_shards_get_their_ids_the_run_and_the_backend() -> None:
    for name, job, backend in (
        ("caffe2job-readme-redis.yaml", "example-job", {"REDIS_HOST": "redis-service", "REDIS_PORT": "6379"}),
        ("caffe2job-resnet50-nfs.yaml", "example-job-1", {"NFS_PATH": "/share2/public/caffe2/"}),
    ):
        pods = rendered(name)
        assert sorted(pods) == [f"{job}-worker-0", f"{job}-worker-1"]
        for i in range(2):
            pod = pods[f"{job}-worker-{i}"]
            env = seed_kinds.env(pod)
            assert (env["SHARD_ID"], env["NUM_SHARDS"]) == (str(i), "2")
            # The run's own: the job's UID (here its name, as no UID exists yet) and the attempt.
            assert env["RUN_ID"] == f"{job}-$(KUBETRAIN_RESTART_ATTEMPT)"
            # Kept on the host's network, the pods still resolve the Services and REDIS_HOST.
            assert (pod["spec"]["hostNetwork"], pod["spec"]["dnsPolicy"]) == (True, "ClusterFirstWithHostNet")
            assert {k: env[k] for k in backend} == backend
            config = json.loads(env["CAFFE2_CONFIG"])
            assert config["task"] == {"type": "worker", "index": i}
            assert len(config["cluster"]["worker"]) == 2
    args = seed_kinds.main_container(rendered("caffe2job-resnet50-nfs.yaml")["example-job-1-worker-0"])[
        "args"
    ]
    assert "--file_store_path=$(NFS_PATH)" in args  # Kubernetes expands it from the env above


def test_caffe2_defaults_and_the_first_releases_backend_field() -> None:
    data = load("caffe2job-readme-redis.yaml")
    del data["spec"]["backendSpecs"]
    converted = convert(data)
    assert converted.job.spec.framework.caffe2 is None  # kubetrain's default for two: gloo
    assert [str(n) for n in converted.notes][1:] == [
        "warning: spec.backendSpecs: absent: the operator chose redis (with no host) for more than one worker; "
        "kubetrain chooses gloo, with Worker 0 the rendezvous (MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK)"
    ]
    data["spec"]["Backend"] = "gloo"
    options = convert(data).job.spec.framework.caffe2
    assert options is not None
    assert options.backend == v1beta1.Caffe2Backend(type=v1beta1.Caffe2BackendType.GLOO)
    data["spec"]["RuntimeID"] = "1529307087"
    assert convert(data).job.spec.runtime_id == "1529307087"


@pytest.mark.parametrize(
    ("change", "error"),
    [
        (
            lambda s: s["backendSpecs"].pop("redisHost"),
            "spec.backendSpecs.redisHost: required for the redis backend",
        ),
        (
            lambda s: s["backendSpecs"].update(backendType="none"),
            "spec.backendSpecs: the none backend runs a single worker, not 2",
        ),
        (lambda s: s["replicaSpecs"].update(replica=2), "spec.replicaSpecs.replica: unknown field"),
        (
            lambda s: s["replicaSpecs"].update(replicas=0),
            "spec.replicaSpecs.replicas: must be at least 1, got 0",
        ),
        (
            lambda s: s["backendSpecs"].update(backendType="mpi"),
            "spec.backendSpecs.backendType: must be one of none, redis, nfs, gloo, got 'mpi'",
        ),
    ],
)
def test_a_bad_caffe2job_is_an_error_at_its_path(change: Any, error: str) -> None:
    data = load("caffe2job-readme-redis.yaml")
    change(data["spec"])
    assert errors_of(data) == [error]


def test_caffe2_sidecars_no_longer_get_the_shard_variables() -> None:
    data = load("caffe2job-readme-redis.yaml")
    data["spec"]["replicaSpecs"]["template"]["spec"]["containers"].append(
        {"name": "log-shipper", "image": "x"}
    )
    assert [str(n) for n in convert(data).notes][:1] == [
        "warning: spec.replicaSpecs.template.spec.containers: only the caffe2 container gets SHARD_ID, "
        "NUM_SHARDS, RUN_ID, the backend's variables and CAFFE2_CONFIG; the operator set them in every "
        "container (here also log-shipper)"
    ]


# --- ChainerJob ---------------------------------------------------------------------------


def test_chainer_master_and_worker_set_share_one_hostfile_master_first() -> None:
    pods = rendered("chainerjob-reference.yaml")
    assert sorted(p for p in pods if p != "<files>") == [
        "example-job-mn-master-0",
        "example-job-mn-workerws0-0",
        "example-job-mn-workerws0-1",
    ]
    hosts = [line.split() for line in pods["<files>"]["hostfile"].splitlines()]
    assert [(h.split(".")[0], s) for h, s in hosts] == [
        ("example-job-mn-master-0", "slots=1"),
        ("example-job-mn-workerws0-0", "slots=1"),
        ("example-job-mn-workerws0-1", "slots=1"),
    ]
    master = seed_kinds.env(pods["example-job-mn-master-0"])
    assert master["OMPI_MCA_btl_tcp_if_exclude"] == "lo,docker0"
    job = convert(load("chainerjob-reference.yaml")).job
    assert (job.spec.run_policy.active_deadline_seconds, job.spec.run_policy.backoff_limit) == (6000, 60)


def test_chainer_slots_one_count_for_all_becomes_an_option_and_mixed_counts_are_notes() -> None:
    data = load("chainerjob-reference.yaml")
    data["spec"]["master"]["mpiConfig"]["slots"] = 2
    data["spec"]["workerSets"]["ws0"]["mpiConfig"]["slots"] = 2
    assert convert(data).job.spec.framework.options == {"slotsPerWorker": 2}
    data["spec"]["workerSets"]["ws0"]["mpiConfig"]["slots"] = 3
    converted = convert(data)
    assert converted.job.spec.framework.options is None
    assert [str(n) for n in converted.notes][1:3] == [
        "warning: spec.master.mpiConfig.slots: 2 not carried over: kubetrain gives every host the same "
        "slotsPerWorker, or its GPUs; this one gets 1",
        "warning: spec.workerSets.ws0.mpiConfig.slots: 3 not carried over: kubetrain gives every host the same "
        "slotsPerWorker, or its GPUs; this one gets 1",
    ]


def test_worker_set_names_become_replica_types_and_back() -> None:
    assert [chainerjob.worker_type(n) for n in ("ws0", "gpu-workers", "worker", "Worker")] == [
        "WorkerWs0",
        "WorkerGpuWorkers",
        "Worker",
        "Worker",
    ]
    assert [chainerjob.set_name(t) for t in ("WorkerWs0", "Worker")] == ["ws0", "worker"]
    data = load("chainerjob-readme-mn.yaml")
    data["spec"]["workerSets"]["ws-0"] = data["spec"]["workerSets"]["ws0"]
    assert errors_of(data) == [
        "spec.workerSets.ws-0: worker sets ws0 and ws-0 both become replica type WorkerWs0; rename one"
    ]


def test_a_bad_chainerjob_is_an_error_at_its_path() -> None:
    data = load("chainerjob-reference.yaml")
    data["spec"]["backend"] = "nccl"
    data["spec"]["master"]["slots"] = 1
    data["spec"]["workerSets"]["ws0"]["mpiConfig"]["slots"] = 0
    assert errors_of(data) == [
        "spec.backend: must be one of mpi, got 'nccl'",
        "spec.master.slots: unknown field",
        "spec.workerSets.ws0.mpiConfig.slots: must be at least 1, got 0",
    ]


# --- back to the old kinds ----------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        "mxjob-readme-dist.yaml",
        "mxjob-kubeflow-dist.yaml",
        "caffe2job-readme-redis.yaml",
        "chainerjob-readme-mn.yaml",
    ],
)
def test_a_converted_job_written_back_is_its_document_with_the_old_defaults_filled_in(name: str) -> None:
    data = load(name)
    back = document.back(convert(data).job, data["apiVersion"], data["kind"])
    normal = json.loads(json.dumps(data))
    spec = normal["spec"]
    entries = spec["replicaSpecs"] if isinstance(spec.get("replicaSpecs"), list) else []
    for entry in entries:
        entry["template"]["spec"].pop("restartPolicy", None)
    if data["kind"] == "MXJob" and "fioravanzo" in data["apiVersion"]:
        spec["jobMode"] = "dist"
        spec["terminationPolicy"] = {"chief": {"replicaName": "SCHEDULER", "replicaIndex": 0}}
    if data["apiVersion"] == "kubeflow.org/v1alpha1" and data["kind"] == "MXJob":
        spec["terminationPolicy"] = {"chief": {"replicaName": "WORKER", "replicaIndex": 0}}
        spec["cleanupPodPolicy"] = "All"
    assert back == {k: v for k, v in normal.items() if k != "apiVersion"} | {"apiVersion": data["apiVersion"]}


def test_the_default_ps_comes_back_written_out() -> None:
    data = load("tfjob-readme-default-ps.yaml")
    back = document.back(convert(data).job, data["apiVersion"], data["kind"])
    assert back["spec"]["replicaSpecs"][2] == {
        "replicas": 2,
        "tfReplicaType": "PS",
        "template": tfjob.default_ps_template(None),
    }


def test_what_an_old_kind_cannot_hold_is_an_error_at_its_path_in_the_trainingjob() -> None:
    job = scheme.to_hub(
        scheme.decode(yaml.safe_load((LEGACY.parent / "v1beta1" / "tensorflow-ps.yaml").read_text()))
    )
    with pytest.raises(kinds.Inexpressible) as e:
        document.back(job, "kubeflow.org/v1alpha1", "TFJob")
    assert [str(f) for f in e.value.errors] == [
        "spec.replicaSpecs.Chief: kubeflow.org/v1alpha1 TFJob has replica types MASTER, WORKER, PS only",
        "spec.replicaSpecs.PS.restartPolicy: kubeflow.org/v1alpha1 TFJob restarts by exit code only (ExitCode); "
        "Always cannot be written",
        "spec.failurePolicy: kubeflow.org/v1alpha1 TFJob has no failure rules, budgets or restart scopes: it "
        "classified exit codes only",
    ]
    # kubeflow's MXJob was decided by WORKER 0; deepinsight's by its SCHEDULER, whatever one wrote.
    mx = convert(load("mxjob-kubeflow-dist.yaml")).job
    with pytest.raises(kinds.Inexpressible) as e:
        document.back(mx, "mxnet.mlkube.io/v1beta1", "MxJob")
    assert [str(f) for f in e.value.errors] == [
        "spec.runPolicy.cleanPodPolicy: mxnet.mlkube.io/v1beta1 MxJob has no field for runPolicy.cleanPodPolicy",
        "spec.successPolicy: mxnet.mlkube.io/v1beta1 MxJob decides a dist job by SCHEDULER 0",
    ]


# --- the command --------------------------------------------------------------------------


def test_kubetrain_convert_of_the_mxnet_readmes_mxjob_prints_a_trainingjob_and_its_warnings(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path
) -> None:
    path = LEGACY / "mxjob-readme-dist.yaml"
    assert main.main(["convert", str(path)]) == 0
    out, err = capsys.readouterr()
    printed = yaml.safe_load(out)
    assert printed == json.loads(json.dumps(scheme.encode(convert(load(path.name)).job)))
    assert printed["spec"]["replicaSpecs"]["Scheduler"]["port"] == 9000
    lines = [f"{path}:{n}" for n in ("17:11", "26:11", "35:11", "8:3", "8:3")]
    assert err.splitlines() == [
        f"warning: {where}: {w}" for where, w in zip(lines, WARNINGS[path.name], strict=True)
    ]
    # ... and back, from what it printed.
    converted = tmp_path / "job.yaml"
    converted.write_text(out)
    assert main.main(["convert", str(converted), "--to", "fioravanzo.org/v1alpha1/MXJob"]) == 0
    back = yaml.safe_load(capsys.readouterr().out)
    assert back["kind"] == "MXJob"
    assert back["apiVersion"] == "fioravanzo.org/v1alpha1"
    assert [r["mxReplicaType"] for r in back["spec"]["replicaSpecs"]] == ["SCHEDULER", "SERVER", "WORKER"]


def test_kubetrain_convert_of_a_bad_document_exits_1_with_the_line_and_path(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path
) -> None:
    bad = tmp_path / "mxjob.yaml"
    bad.write_text(
        (LEGACY / "mxjob-readme-dist.yaml")
        .read_text()
        .replace("mxReplicaType: SERVER", "mxReplicaTyp: SERVER")
    )
    assert main.main(["convert", str(bad)]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err.splitlines()[0] == f"error: {bad}:19:7: spec.replicaSpecs[1].mxReplicaTyp: unknown field"


def test_every_old_kind_here_is_registered_once_with_its_spellings() -> None:
    found = {
        (v, k)
        for kind in (*tfjob.KINDS, *mxjob.KINDS)
        for v in kind.api_versions
        for k in (kind.kind, *kind.spellings)
    }
    assert ("fioravanzo.org/v1alpha1", "MXJob") in found
    assert ("tensorflow.org/v1alpha1", "TFJob") in found
    assert document.kind_of({"apiVersion": "mlkube.io/v1beta1", "kind": "MxJob"}) is not None


def test_the_conversions_docs_migrating_shows_are_what_kubetrain_convert_prints(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = LEGACY.parents[1]
    text = (root / "docs" / "migrating.md").read_text()
    blocks = [b.split("```")[0] for b in text.split("```console\n$ kubetrain convert samples/legacy/")[1:]]
    assert len(blocks) == 15  # one per first kind, every Kubeflow sample, a Trainer v2 job and runtime
    monkeypatch.chdir(root)
    for block in blocks:
        name, shown = block.split("\n", 1)
        assert main.main(["convert", f"samples/legacy/{name}"]) == 0
        out, err = capsys.readouterr()
        warnings = err.splitlines()
        # A console shows the warnings before or after the YAML, as the terminal interleaved them.
        assert shown.splitlines() in (out.splitlines() + warnings, warnings + out.splitlines()), name
