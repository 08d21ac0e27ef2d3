"""Every sample keeps what its opening comment promises, on the full local cluster.

Each sample (samples/v1beta1 and samples/v1alpha1) begins with comments that promise
behaviour: what a failure restarts, what decides success, what env and files each
replica gets. Here each sample is applied as written, its pods are finished the way
the comment describes — an exit code, a reason, an eviction — and the promised outcome
is checked. kwok plays the kubelet, so the images never run: where a comment promises
what only real training shows, the test checks what kubetrain gives the pods (env,
files, objects) instead, and says so.

All samples are applied at once, at the start of the module, with one operator: their
pods come up together, and each test then drives its own job. v1beta1 samples go through
``kubectl create``; v1alpha1 ones through the Python client, which converts them to
v1beta1 as the conversion webhook would (this tier installs the CRD without it;
tests/e2e/test_deploy.py reads them back through the webhook).
"""

from __future__ import annotations

import json
import pathlib
import re
import uuid
from collections.abc import Iterator, Mapping
from typing import Any

import attrs
import pytest
import yaml
from testkit import jobs, operator
from testkit.kube import eventually

from kubetrain import client
from kubetrain.api import scheme, validation, wire
from kubetrain.devcluster import cluster as devcluster
from kubetrain.devcluster import kwok
from kubetrain.operator import render
from kubetrain.operator.frameworks import registry

SAMPLES = jobs.SAMPLES.parent
BETA = sorted(p.name for p in (SAMPLES / "v1beta1").glob("*.yaml"))
ALPHA = sorted(p.name for p in (SAMPLES / "v1alpha1").glob("*.yaml"))
# The second copy of pytorch-ddp, in its own namespace: one copy spends its budget, one is preempted.
SECOND = "pytorch-ddp.yaml"

Pods = dict[str, dict[str, Any]]


@attrs.frozen(kw_only=True)
class Applied:
    """The samples on the cluster: their namespaces, and each sample's job name and pod count."""

    c: devcluster.Cluster
    namespace: str
    second: str  # the namespace of the second pytorch-ddp
    names: Mapping[str, str]
    counts: Mapping[str, int]

    def name(self, sample: str) -> str:
        return self.names[sample]

    def running(self, sample: str, namespace: str | None = None) -> Pods:
        return jobs.running_pods(self.c, namespace or self.namespace, self.names[sample], self.counts[sample])


def load(path: pathlib.Path) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(path.read_text())
    return data


def pod_count(path: pathlib.Path) -> int:
    job = scheme.to_hub(scheme.decode(load(path)))
    return sum(r.replicas for r in job.spec.replica_specs.values())


def new_namespace(c: devcluster.Cluster) -> str:
    name = f"t-{uuid.uuid4().hex[:10]}"
    c.kubectl("create", "namespace", name)
    c.kubectl("wait", "--for=create", "--timeout=60s", "serviceaccount/default", "-n", name)
    return name


@pytest.fixture(scope="module")
def applied(cluster: devcluster.Cluster) -> Iterator[Applied]:
    op = operator.start(cluster)
    namespace, second = new_namespace(cluster), new_namespace(cluster)
    names, counts = {}, {}
    for sample in BETA:
        path = SAMPLES / "v1beta1" / sample
        names[sample] = jobs.create(cluster, namespace, load(path))
        counts[sample] = pod_count(path)
    jobs.create(cluster, second, load(SAMPLES / "v1beta1" / SECOND))
    with client.connect(str(cluster.kubeconfig), namespace=namespace) as kt:
        for sample in ALPHA:
            path = SAMPLES / "v1alpha1" / sample
            (job,) = kt.create_from_file(path)
            names[sample] = job.metadata.name or ""
            counts[sample] = pod_count(path)
    yield Applied(c=cluster, namespace=namespace, second=second, names=names, counts=counts)
    for ns in (namespace, second):
        cluster.kubectl("delete", "namespace", ns, "--wait=false", check=False)
    op.stop()


def uids(pods: Pods) -> dict[str, str]:
    return {n: p["metadata"]["uid"] for n, p in pods.items()}


def replaced(a: Applied, sample: str, before: Pods, which: set[str], namespace: str | None = None) -> Pods:
    """Wait until the pods named ``which`` run anew and every other pod is the one it was."""
    ns = namespace or a.namespace
    old = uids(before)

    def probe() -> Pods | None:
        now = jobs.pods(a.c, ns, a.name(sample))
        up = {
            n: p
            for n, p in now.items()
            if p["status"].get("phase") == "Running" and not p["metadata"].get("deletionTimestamp")
        }
        if set(up) != set(old) or len(now) != len(old):
            return None
        fresh = {n for n in up if up[n]["metadata"]["uid"] != old[n]}
        return up if fresh == which else None

    return eventually(f"{sorted(which)} of {a.name(sample)} to be replaced, and only they", probe, timeout=60)


def restarts(
    a: Applied, sample: str, expected: dict[str, int], namespace: str | None = None
) -> dict[str, Any]:
    ns = namespace or a.namespace
    return eventually(
        f"{a.name(sample)} to count restarts {expected}",
        lambda: (s := jobs.status(a.c, ns, a.name(sample))).get("restarts") == expected and s,
        timeout=30,
        evidence=lambda: jobs.summary(a.c, ns, a.name(sample)),
    )


def ended(a: Applied, sample: str, state: str, namespace: str | None = None) -> dict[str, Any]:
    s = jobs.wait_state(a.c, namespace or a.namespace, a.name(sample), state)
    return jobs.condition(s, state)


def env(pod: dict[str, Any]) -> dict[str, str]:
    return jobs.env_of(pod)


def config_map(a: Applied, sample: str) -> dict[str, str]:
    out = a.c.kubectl("get", "configmap", f"{a.name(sample)}-config", "-n", a.namespace, "-o", "json").stdout
    data: dict[str, str] = json.loads(out)["data"]
    return data


def secret(a: Applied, sample: str) -> dict[str, Any]:
    out = a.c.kubectl("get", "secret", f"{a.name(sample)}-ssh", "-n", a.namespace, "-o", "json").stdout
    obj: dict[str, Any] = json.loads(out)
    return obj


def mounts(pod: dict[str, Any]) -> dict[str, str]:
    return {m["mountPath"]: m["name"] for m in pod["spec"]["containers"][0].get("volumeMounts", [])}


def rendered_env(job: dict[str, Any]) -> dict[str, dict[str, str]]:
    """The main container's env of every pod ``job`` renders (for variants no cluster needs to run)."""
    hub = scheme.to_hub(scheme.decode(job))
    fw = registry.default().get(hub.spec.framework.name)
    return {o["metadata"]["name"]: jobs.env_of(o) for o in render.render(hub, fw) if o["kind"] == "Pod"}


def ready_before(launcher: dict[str, Any], workers: list[dict[str, Any]]) -> bool:
    created = wire.parse_time(launcher["metadata"]["creationTimestamp"])
    return all(
        wire.parse_time(
            next(c for c in w["status"]["conditions"] if c["type"] == "Ready")["lastTransitionTime"]
        )
        <= created
        for w in workers
    )


# --- PyTorch ---------------------------------------------------------------------------------


def test_pytorch_ddp_restarts_the_whole_job_three_times_and_fails_on_the_fourth(applied: Applied) -> None:
    a, sample = applied, "pytorch-ddp.yaml"
    pods = a.running(sample)
    assert {p["spec"]["restartPolicy"] for p in pods.values()} == {"OnFailure"}, "PyTorch's default"
    for n in (1, 2, 3):
        kwok.finish_pod(a.c, a.namespace, "pytorch-ddp-worker-1", 137)
        pods = replaced(a, sample, pods, set(pods))
        s = restarts(a, sample, {"userCode": n})
        assert s["failures"][-1]["class"] == "UserCode"
        assert s["failures"][-1]["exitCode"] == 137
    kwok.finish_pod(a.c, a.namespace, "pytorch-ddp-worker-1", 137)
    failed = ended(a, sample, "Failed")
    assert failed["reason"] == "BackoffLimitExceeded", failed


def test_pytorch_ddp_preemption_restarts_uncharged_and_out_of_memory_fails_at_once(applied: Applied) -> None:
    a, sample, ns = applied, "pytorch-ddp.yaml", applied.second
    pods = a.running(sample, ns)
    kwok.evict_pod(a.c, ns, "pytorch-ddp-worker-0")
    pods = replaced(a, sample, pods, set(pods), ns)
    s = restarts(a, sample, {"uncharged": 1}, ns)
    assert (s["failures"][-1]["rule"], s["failures"][-1]["class"]) == ("preempted", "Infrastructure")
    kwok.finish_pod(a.c, ns, "pytorch-ddp-master-0", 137, reason="OOMKilled")
    failed = ended(a, sample, "Failed", ns)
    assert failed["reason"] == "Rule:outOfMemory", failed
    assert jobs.status(a.c, ns, a.name(sample))["restarts"] == {"uncharged": 1}, "the failure spent nothing"


def test_pytorch_elastic_scales_without_restarts_and_replaces_a_failed_worker_alone(applied: Applied) -> None:
    # The comment's own command; re-forming the world and resuming from the checkpoint need real
    # torchrun processes (tests/realcode/test_pytorch_elastic.py): here, what kubetrain does.
    a, sample = applied, "pytorch-elastic.yaml"
    name = a.name(sample)
    pods = a.running(sample)
    a.c.kubectl("scale", f"tj/{name}", "-n", a.namespace, "--replicas=3")
    grown = jobs.running_pods(a.c, a.namespace, name, 3)
    assert {n: uids(grown)[n] for n in pods} == uids(pods), "the running workers are left alone"
    assert "restarts" not in jobs.status(a.c, a.namespace, name), "nothing restarts or is charged"
    kwok.finish_pod(a.c, a.namespace, f"{name}-worker-1", 137)
    grown = replaced(a, sample, grown, {f"{name}-worker-1"})
    restarts(a, sample, {"userCode": 1})
    a.c.kubectl("scale", f"tj/{name}", "-n", a.namespace, "--replicas=1")
    (left,) = jobs.running_pods(a.c, a.namespace, name, 1).values()
    assert left["metadata"]["uid"] == grown[f"{name}-worker-0"]["metadata"]["uid"], "the highest go"


def test_pytorch_tensorboard_runs_one_tensorboard_on_the_shared_log_volume(applied: Applied) -> None:
    a, sample = applied, "pytorch-tensorboard.yaml"
    name = a.name(sample)
    a.running(sample)
    s = jobs.wait_state(a.c, a.namespace, name, "Running")
    assert s["tensorboard"]["address"] == f"http://{name}-tensorboard.{a.namespace}.svc:6006"
    deployment = json.loads(
        a.c.kubectl("get", "deployment", f"{name}-tensorboard", "-n", a.namespace, "-o", "json").stdout
    )
    pod = deployment["spec"]["template"]["spec"]
    (logs,) = [v for v in pod["volumes"] if "hostPath" in v]
    assert logs["hostPath"]["path"] == "/tmp/kubetrain-tensorboard"
    (mount,) = [m for c in pod["containers"] for m in c.get("volumeMounts", []) if m["name"] == logs["name"]]
    assert mount["readOnly"] is True
    # "an emptyDir is refused": each pod would get its own.
    job = load(SAMPLES / "v1beta1" / sample)
    for spec in job["spec"]["replicaSpecs"].values():
        spec["template"]["spec"]["volumes"] = [{"name": "logs", "emptyDir": {}}]
    with pytest.raises(validation.ValidationError, match="emptyDir"):
        scheme.decode(job)
    # `kubetrain tensorboard pytorch-tb` opening it locally needs a real TensorBoard: tests/node.


# --- TensorFlow, MXNet, XGBoost, JAX, Paddle, Caffe2 -------------------------------------------


def test_tensorflow_ps_recreates_a_signalled_worker_alone_and_the_chief_decides(applied: Applied) -> None:
    a, sample = applied, "tensorflow-ps.yaml"
    pods = a.running(sample)
    kwok.finish_pod(a.c, a.namespace, "tensorflow-ps-worker-1", 143)
    replaced(a, sample, pods, {"tensorflow-ps-worker-1"})
    s = restarts(a, sample, {"userCode": 1})
    assert s["failures"][-1]["rule"] == "signalled"
    kwok.finish_pod(a.c, a.namespace, "tensorflow-ps-chief-0", 0)
    ended(a, sample, "Succeeded")


def test_mxnet_recreates_a_lost_server_alone_and_restarts_the_job_when_the_scheduler_is_lost(
    applied: Applied,
) -> None:
    a, sample = applied, "mxnet.yaml"
    pods = a.running(sample)
    kwok.evict_pod(a.c, a.namespace, "mxnet-dist-server-0")
    pods = replaced(a, sample, pods, {"mxnet-dist-server-0"})
    restarts(a, sample, {"infrastructure": 1})
    kwok.finish_pod(a.c, a.namespace, "mxnet-dist-scheduler-0", 137)
    pods = replaced(a, sample, pods, set(pods))
    assert (
        restarts(a, sample, {"infrastructure": 1, "userCode": 1})["failures"][-1]["rule"] == "schedulerLost"
    )
    kwok.evict_pod(a.c, a.namespace, "mxnet-dist-scheduler-0")
    pods = replaced(a, sample, pods, set(pods))
    s = restarts(a, sample, {"infrastructure": 2, "userCode": 1})
    # Once stopped, an evicted container is reported killed (137), which schedulerLost matches too;
    # a lost node reports no exit code, which only schedulerDisrupted matches.
    assert s["failures"][-1]["class"] == "Infrastructure"
    assert s["failures"][-1]["rule"] in {"schedulerDisrupted", "schedulerLost"}
    # ps-lite reads DMLC_ROLE, the scheduler's DMLC_PS_ROOT_URI/PORT and DMLC_NUM_SERVER/WORKER.
    for name, pod in pods.items():
        e = env(pod)
        assert e["DMLC_ROLE"] == name.split("-")[2]
        assert (e["DMLC_PS_ROOT_URI"], e["DMLC_PS_ROOT_PORT"]) == (
            f"mxnet-dist-scheduler-0.{a.namespace}.svc",
            "9091",
        )
        assert (e["DMLC_NUM_SERVER"], e["DMLC_NUM_WORKER"]) == ("2", "2")
    kwok.finish_pod(a.c, a.namespace, "mxnet-dist-worker-0", 0)
    kwok.finish_pod(a.c, a.namespace, "mxnet-dist-worker-1", 0)
    ended(a, sample, "Succeeded")


def test_xgboost_restarts_every_member_and_the_master_decides(applied: Applied) -> None:
    a, sample = applied, "xgboost.yaml"
    pods = a.running(sample)
    e = env(pods["xgboost-iris-worker-1"])
    assert (e["DMLC_TRACKER_URI"], e["DMLC_TRACKER_PORT"]) == (
        f"xgboost-iris-master-0.{a.namespace}.svc",
        "9999",
    )
    assert (e["DMLC_TASK_ID"], e["DMLC_NUM_WORKER"]) == ("2", "3")
    kwok.finish_pod(a.c, a.namespace, "xgboost-iris-worker-1", 137)
    replaced(a, sample, pods, set(pods))
    restarts(a, sample, {"userCode": 1})
    kwok.finish_pod(a.c, a.namespace, "xgboost-iris-master-0", 0)
    ended(a, sample, "Succeeded")


def test_jax_gives_the_coordinator_and_restarts_the_job_but_fails_on_a_program_error(
    applied: Applied,
) -> None:
    a, sample = applied, "jax.yaml"
    pods = a.running(sample)
    for i in (0, 1):
        e = env(pods[f"jax-simple-worker-{i}"])
        coordinator = f"jax-simple-worker-0.{a.namespace}.svc"
        assert (e["JAX_COORDINATOR_ADDRESS"], e["JAX_NUM_PROCESSES"], e["JAX_PROCESS_ID"]) == (
            f"{coordinator}:6666",
            "2",
            str(i),
        )
        assert (e["COORDINATOR_ADDRESS"], e["COORDINATOR_PORT"], e["NUM_PROCESSES"], e["PROCESS_ID"]) == (
            coordinator,
            "6666",
            "2",
            str(i),
        )
    kwok.finish_pod(a.c, a.namespace, "jax-simple-worker-1", 137)
    replaced(a, sample, pods, set(pods))
    restarts(a, sample, {"userCode": 1})
    kwok.finish_pod(a.c, a.namespace, "jax-simple-worker-0", 1)
    assert ended(a, sample, "Failed")["reason"] == "PermanentExitCode"


def test_paddle_worker_0_hosts_the_rendezvous_and_masters_would_switch_to_ps_mode(applied: Applied) -> None:
    # The launcher itself cannot run on kwok: the env it reads is what is checked.
    a, sample = applied, "paddle.yaml"
    pods = a.running(sample)
    w0, w1 = env(pods["paddle-collective-worker-0"]), env(pods["paddle-collective-worker-1"])
    assert w0["PADDLE_MASTER"] == "127.0.0.1:36543"
    assert w1["PADDLE_MASTER"] == f"paddle-collective-worker-0.{a.namespace}.svc:36543"
    for i, e in enumerate((w0, w1)):
        assert (e["PADDLE_NNODES"], e["PADDLE_JOB_ID"], e["PADDLE_RANK"]) == (
            "2",
            "paddle-collective",
            str(i),
        )
    job = load(SAMPLES / "v1beta1" / sample)
    job["spec"]["replicaSpecs"]["Master"] = job["spec"]["replicaSpecs"]["Worker"] | {"replicas": 1}
    ps = rendered_env(job)
    assert ps["paddle-collective-master-0"]["PADDLE_MASTER"] == "127.0.0.1:36543"
    assert ps["paddle-collective-master-0"]["PADDLE_SERVER_NUM"] == "1"
    assert ps["paddle-collective-worker-0"]["PADDLE_MASTER"] == "paddle-collective-master-0.default.svc:36543"
    assert ps["paddle-collective-worker-0"]["PADDLE_TRAINER_NUM"] == "1"


def test_caffe2_shards_get_the_redis_wiring_their_flags_name(applied: Applied) -> None:
    a, sample = applied, "caffe2.yaml"
    pods = a.running(sample)
    for i in (0, 1):
        pod = pods[f"caffe2-resnet50-worker-{i}"]
        e = env(pod)
        assert (e["SHARD_ID"], e["NUM_SHARDS"]) == (str(i), "2")
        assert (
            e["RUN_ID"]
            == f"resnet50r1-{pod['metadata']['ownerReferences'][0]['uid']}-$({render.RESTART_ATTEMPT_ENV})"
        )
        assert (e["REDIS_HOST"], e["REDIS_PORT"]) == ("redis.default.svc", "6379")
        # Kubernetes expands $(VAR) in args from the container's env: every one the flags use is there.
        used = {v for arg in pod["spec"]["containers"][0]["args"] for v in re.findall(r"\$\((\w+)\)", arg)}
        assert used
        assert used <= set(e)
    # Without a backend: one Worker uses none (no rendezvous), more use gloo with Worker 0 as it.
    job = load(SAMPLES / "v1beta1" / sample)
    del job["spec"]["framework"]["caffe2"]
    gloo = rendered_env(job)
    assert gloo["caffe2-resnet50-worker-1"]["MASTER_ADDR"] == "caffe2-resnet50-worker-0.default.svc"
    job["spec"]["replicaSpecs"]["Worker"]["replicas"] = 1
    assert "MASTER_ADDR" not in rendered_env(job)["caffe2-resnet50-worker-0"]


# --- MPI, Chainer ----------------------------------------------------------------------------


def test_mpi_allreduce_launcher_waits_for_ready_workers_and_alone_decides(applied: Applied) -> None:
    a, sample = applied, "mpi-allreduce.yaml"
    pods = a.running(sample)
    launcher = pods["mpi-allreduce-launcher-0"]
    assert ready_before(launcher, [p for n, p in pods.items() if "-worker-" in n])
    assert config_map(a, sample)["hostfile"] == "".join(
        f"mpi-allreduce-worker-{i}.{a.namespace}.svc slots=1\n" for i in (0, 1)
    )
    hostfile = env(launcher)["OMPI_MCA_orte_default_hostfile"]
    assert mounts(launcher)[str(pathlib.PurePosixPath(hostfile).parent)] == "kubetrain-config"
    assert "authorized_keys" in secret(a, sample)["data"]
    assert all(mounts(p)["/root/.ssh"] == "kubetrain-secret" for p in pods.values())
    kwok.finish_pod(a.c, a.namespace, "mpi-allreduce-launcher-0", 0)
    ended(a, sample, "Succeeded")  # the Workers' sshd never exits


def test_mpi_horovod_slots_come_from_gpus_and_any_restart_recreates_the_world(applied: Applied) -> None:
    a, sample = applied, "mpi-horovod.yaml"
    pods = a.running(sample)
    assert config_map(a, sample)["hostfile"] == "".join(
        f"mpi-horovod-worker-{i}.{a.namespace}.svc slots=2\n" for i in (0, 1)
    )
    kwok.finish_pod(a.c, a.namespace, "mpi-horovod-worker-0", 137)
    pods = replaced(a, sample, pods, set(pods))
    assert ready_before(pods["mpi-horovod-launcher-0"], [p for n, p in pods.items() if "-worker-" in n])
    restarts(a, sample, {"userCode": 1})
    kwok.finish_pod(a.c, a.namespace, "mpi-horovod-launcher-0", 0)
    ended(a, sample, "Succeeded")


def test_chainer_hostfile_lists_the_master_first_and_slots_add_up_to_mpiexec_n(applied: Applied) -> None:
    a, sample = applied, "chainer.yaml"
    pods = a.running(sample)
    ns = a.namespace
    hostfile = config_map(a, sample)["hostfile"]
    assert hostfile == (
        f"chainer-master-0.{ns}.svc slots=1\n"
        f"chainer-workercpu-0.{ns}.svc slots=1\n"
        f"chainer-workergpu-0.{ns}.svc slots=2\n"
        f"chainer-workergpu-1.{ns}.svc slots=2\n"
    )
    slots = sum(int(line.rsplit("=", 1)[1]) for line in hostfile.splitlines())
    command = pods["chainer-master-0"]["spec"]["containers"][0]["command"][-1]
    assert f"mpiexec -n {slots} " in command
    assert all(mounts(p)["/root/.ssh"] == "kubetrain-secret" for p in pods.values())


# --- Generic ---------------------------------------------------------------------------------


def test_generic_ranks_by_type_then_index_and_recreates_a_signalled_replica_alone(applied: Applied) -> None:
    a, sample = applied, "generic.yaml"
    pods = a.running(sample)
    ranks = {n: (env(p)["KUBETRAIN_RANK"], env(p)["KUBETRAIN_WORLD_SIZE"]) for n, p in pods.items()}
    assert ranks == {
        "generic-actors-actor-0": ("0", "3"),
        "generic-actors-actor-1": ("1", "3"),
        "generic-actors-learner-0": ("2", "3"),
    }
    service = json.loads(
        a.c.kubectl("get", "service", "generic-actors-learner-0", "-n", a.namespace, "-o", "json").stdout
    )
    assert service["spec"]["ports"][0]["port"] == 2222
    kwok.finish_pod(a.c, a.namespace, "generic-actors-actor-1", 137)
    replaced(a, sample, pods, {"generic-actors-actor-1"})
    restarts(a, sample, {"userCode": 1})


# --- v1alpha1 --------------------------------------------------------------------------------


def test_legacy_tfjob_is_stored_as_v1beta1_reads_back_as_v1alpha1_and_the_master_decides(
    applied: Applied,
) -> None:
    a, sample = applied, "tfjob-master-worker-ps.yaml"
    name = a.name(sample)
    pods = a.running(sample)
    stored = jobs.get_job(a.c, a.namespace, name)
    assert stored is not None
    assert sorted(stored["spec"]["replicaSpecs"]) == ["Master", "PS", "Worker"]
    # What the conversion webhook answers for a v1alpha1 read (tests/e2e/test_deploy.py goes through it).
    legacy = scheme.convert_unstructured(stored, "training.kubetrain.dev/v1alpha1")
    assert sorted(r["replicaType"] for r in legacy["spec"]["replicaSpecs"]) == ["MASTER", "PS", "WORKER"]
    chief = legacy["spec"]["terminationPolicy"]["chief"]
    assert (chief["replicaName"], chief.get("replicaIndex", 0)) == ("MASTER", 0)
    config = json.loads(env(pods[f"{name}-worker-0"])["TF_CONFIG"])
    assert config["cluster"]["chief"] == [f"{name}-master-0.{a.namespace}.svc:2222"]
    assert config["cluster"]["ps"] == [f"{name}-ps-0.{a.namespace}.svc:2223"]
    kwok.finish_pod(a.c, a.namespace, f"{name}-master-0", 0)
    ended(a, sample, "Succeeded")


def test_legacy_mxjob_gives_every_replica_dmlc_and_mx_config(applied: Applied) -> None:
    a, sample = applied, "mxjob-scheduler-server-worker.yaml"
    for name, pod in a.running(sample).items():
        e = env(pod)
        assert e["DMLC_ROLE"] == name.split("-")[2]
        assert e["DMLC_PS_ROOT_URI"] == f"mxjob-legacy-scheduler-0.{a.namespace}.svc"
        assert json.loads(e["MX_CONFIG"])["task"]["type"] == e["DMLC_ROLE"]


def test_legacy_caffe2_shards_get_the_run_id_and_redis(applied: Applied) -> None:
    a, sample = applied, "caffe2-redis.yaml"
    for i in range(3):
        pod = a.running(sample)[f"caffe2-legacy-worker-{i}"]
        e = env(pod)
        assert (e["SHARD_ID"], e["NUM_SHARDS"]) == (str(i), "3")
        assert (
            e["RUN_ID"]
            == f"resnet50run1-{pod['metadata']['ownerReferences'][0]['uid']}-$({render.RESTART_ATTEMPT_ENV})"
        )
        assert (e["REDIS_HOST"], e["REDIS_PORT"]) == ("redis.default.svc", "6379")


def test_legacy_chainer_master_waits_for_workers_and_the_key_is_made_once(applied: Applied) -> None:
    a, sample = applied, "chainer-mpi.yaml"
    pods = a.running(sample)
    master = pods["chainer-legacy-master-0"]
    assert ready_before(master, [p for n, p in pods.items() if "-worker-" in n])
    assert (
        config_map(a, sample)["hostfile"]
        .splitlines()[0]
        .startswith(f"chainer-legacy-master-0.{a.namespace}.svc")
    )
    key = secret(a, sample)
    kwok.finish_pod(a.c, a.namespace, "chainer-legacy-worker-1", 137)
    replaced(a, sample, pods, set(pods))
    again = secret(a, sample)
    assert (again["metadata"]["uid"], again["data"]) == (key["metadata"]["uid"], key["data"]), (
        "one key per job"
    )
