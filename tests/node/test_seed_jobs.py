"""The first operators' README jobs, converted by ``kubetrain convert``, train on real nodes.

Each seed file in samples/legacy is converted as a user would (``kubetrain convert FILE``) and
created as it comes out. The images their READMEs name are not reachable from here; the nodes
hold stand-ins built under the same names (``devcluster/images.py``: the framework, now, and a
script of samples/scripts that does what the image's program did), so the converted files run
verbatim. What each test reads back is the training's own output: peers found through the env
kubetrain rendered (``TF_CONFIG``, ``DMLC_*``, the MPI hostfile, Caffe2's ``RUN_ID`` and redis),
and a loss that went down.
"""

from __future__ import annotations

import contextlib
import io
import json
import pathlib
import re
from typing import Any

import pytest
import yaml
from testkit import fixtures, jobs
from testkit.kube import eventually
from testkit.pods import IMAGE, logs

from kubetrain.cli import main as cli
from kubetrain.devcluster import cluster as devcluster

pytestmark = pytest.mark.usefixtures("running_operator")

LEGACY = fixtures.ROOT / "samples" / "legacy"
LOSS = re.compile(r"loss (\d+\.\d+) -> (\d+\.\d+)")


def converted(seed: str) -> dict[str, Any]:
    """``kubetrain convert samples/legacy/SEED``'s TrainingJob, as the CLI prints it."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        assert cli.main(["convert", str(LEGACY / seed)]) == 0, err.getvalue()
    job = yaml.safe_load(out.getvalue())
    assert job["kind"] == "TrainingJob"
    return job


def loss(text: str) -> tuple[float, float]:
    first, last = LOSS.findall(text)[-1]
    return float(first), float(last)


def test_the_tfjob_readme_job_trains_with_parameter_servers_and_ends_with_its_chief(
    cluster: devcluster.Cluster, namespace: str
) -> None:
    job = converted("tfjob-readme-default-ps.yaml")  # MASTER, WORKER and two template-less PS
    name = jobs.create(cluster, namespace, job)
    s = jobs.wait_state(cluster, namespace, name, "Succeeded", timeout=300)
    assert s["replicaStatuses"]["Master"]["succeeded"] == 1
    chief = logs(cluster, namespace, f"{name}-master-0")
    # The chief coordinated through TF_CONFIG: one worker, both parameter servers holding variables.
    assert "coordinator up: 1 workers, 2 ps" in chief, chief
    assert "on /job:ps/replica:0/task:0" in chief, chief
    assert "on /job:ps/replica:0/task:1" in chief, chief
    first, last = loss(chief)
    assert last < first / 10, chief
    print(chief)  # for docs/migrating.md (pytest -s)
    # The Worker and the PS never exit by themselves: the chief's exit ended the job, and them.
    assert "Failed" not in {c["type"] for c in s["conditions"] if c["status"] == "True"}
    eventually(
        "the Worker and the PS to be gone",
        lambda: set(jobs.pods(cluster, namespace, name)) == {f"{name}-master-0"},
        timeout=60,
    )
    assert jobs.status(cluster, namespace, name)["state"] == "Succeeded"


def test_the_mxjob_readme_job_trains_with_dist_sync(cluster: devcluster.Cluster, namespace: str) -> None:
    job = converted("mxjob-readme-dist.yaml")  # SCHEDULER, SERVER, WORKER; no command: the image's
    for spec in job["spec"]["replicaSpecs"].values():
        # The README pulls Always; no registry is reachable here, and the stand-in is on the nodes.
        (container,) = spec["template"]["spec"]["containers"]
        assert container.pop("imagePullPolicy") == "Always"
    job["spec"].setdefault("runPolicy", {})["cleanPodPolicy"] = "None"  # keep the worker to read it
    name = jobs.create(cluster, namespace, job)
    jobs.wait_state(cluster, namespace, name, "Succeeded", timeout=300)
    worker = logs(cluster, namespace, f"{name}-worker-0")
    # ps-lite found the scheduler at the DMLC_PS_ROOT_URI kubetrain rendered: a Service name.
    assert f"DMLC_PS_ROOT_URI={name}-scheduler-0" in worker, worker
    assert "kvstore dist_sync" in worker, worker
    first, last = loss(worker)
    assert last < first / 10, worker
    server = logs(cluster, namespace, f"{name}-server-0")
    assert "DMLC_ROLE=server" in server, server
    print(worker)  # for docs/migrating.md (pytest -s)


def test_the_chainerjob_readme_job_trains_with_chainermn_over_the_rendered_hostfile(
    cluster: devcluster.Cluster, namespace: str
) -> None:
    job = converted("chainerjob-readme-mn.yaml")
    # The one change the converter asks for: the old mpiexec reached workers by kubectl exec into
    # a sleeping container, kubetrain's reaches them over ssh.
    for rtype, spec in job["spec"]["replicaSpecs"].items():
        if rtype.startswith("Worker"):
            (container,) = spec["template"]["spec"]["containers"]
            container["command"] = ["sh", "-c", "mkdir -p /run/sshd && exec /usr/sbin/sshd -De"]
            container["readinessProbe"] = {"tcpSocket": {"port": 22}, "periodSeconds": 2}
    name = jobs.create(cluster, namespace, job)
    jobs.wait_state(cluster, namespace, name, "Succeeded", timeout=300)
    master = logs(cluster, namespace, f"{name}-master-0")
    # mpiexec -n 3 -N 1: one rank on each host of the hostfile, the master and both workers.
    ranks = set(re.findall(r"\[rank (\d)/3 (\S+) ", master))
    assert {r for r, _ in ranks} == {"0", "1", "2"}, master
    assert len({host for _, host in ranks}) == 3, ranks
    assert "weights identical across ranks: True" in master, master
    first, last = loss(master)
    assert last < first / 2, master
    print(master)  # for docs/migrating.md (pytest -s)


# A redis for the Caffe2Job README's job to meet through, as its README assumed one: a pod of the
# examples image (Debian's redis-server), behind the Service the README names, in the test's
# namespace. Nothing is saved: the keys live as long as the pod.
REDIS = "redis"
REDIS_POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": REDIS, "labels": {"app": REDIS}},
    "spec": {
        "containers": [
            {
                "name": REDIS,
                "image": IMAGE,
                "command": ["redis-server", "--protected-mode", "no", "--save", "", "--appendonly", "no"],
                "ports": [{"containerPort": 6379}],
                "readinessProbe": {"tcpSocket": {"port": 6379}, "periodSeconds": 1},
            }
        ],
        "terminationGracePeriodSeconds": 1,
    },
}
REDIS_SERVICE = {
    "apiVersion": "v1",
    "kind": "Service",
    "metadata": {"name": "redis-service"},
    "spec": {"selector": {"app": REDIS}, "ports": [{"port": 6379, "targetPort": 6379}]},
}
CAFFE2_TRAINER = "/usr/local/caffe2/caffe2/python/examples/resnet50_trainer.py"
CHECKSUM = re.compile(r"weights sha256 ([0-9a-f]{16}); identical across shards: True")


def trained_shards(
    cluster: devcluster.Cluster, namespace: str, name: str, run_id: str, through: str
) -> list[str]:
    """The two shards' logs, each having met the other under ``run_id`` ``through`` its store, its
    loss fallen fivefold, both with the same weights, bit for bit (gradients averaged over Gloo)."""
    shards = [logs(cluster, namespace, f"{name}-worker-{i}") for i in range(2)]
    for i, text in enumerate(shards):
        assert f"shard {i} of 2 met its peers under run ID {run_id} through {through}" in text, text
        first, last = loss(text)
        assert last < first / 5, text
    assert len({m for text in shards for m in CHECKSUM.findall(text)}) == 1, shards
    return shards


def test_the_caffe2job_readme_job_meets_through_redis_under_its_run_id_and_trains(
    cluster: devcluster.Cluster, namespace: str
) -> None:
    for obj in (REDIS_POD, REDIS_SERVICE):
        cluster.kubectl("create", "-n", namespace, "-f", "-", input=json.dumps(obj))
    cluster.kubectl("wait", "-n", namespace, "--for=condition=Ready", "--timeout=120s", f"pod/{REDIS}")
    job = converted("caffe2job-readme-redis.yaml")  # two workers, redis at redis-service:6379
    (container,) = job["spec"]["replicaSpecs"]["Worker"]["template"]["spec"]["containers"]
    # The one change: the nodes have no GPUs, and a pod asking for two would never be scheduled.
    # hostNetwork stays: the shards run on the nodes' network and resolve redis-service there.
    assert container.pop("resources") == {"limits": {"nvidia.com/gpu": 2}}
    name = jobs.create(cluster, namespace, job)
    jobs.wait_state(cluster, namespace, name, "Succeeded", timeout=300)

    # The RUN_ID kubetrain rendered: the job's UID and the attempt the kubelet filled in.
    uid = (jobs.get_job(cluster, namespace, name) or {})["metadata"]["uid"]
    workers = jobs.pods(cluster, namespace, name)
    env = jobs.env_of(workers[f"{name}-worker-0"])
    run_id = env["RUN_ID"].replace("$(KUBETRAIN_RESTART_ATTEMPT)", env["KUBETRAIN_RESTART_ATTEMPT"])
    assert run_id == f"{uid}-0", env
    # On the host network each shard's port 2222 is its node's: one shard per node.
    assert len({p["spec"]["nodeName"] for p in workers.values()}) == 2, jobs.summary(cluster, namespace, name)
    # Each shard met the other in redis under that RUN_ID, through the Service the README named.
    shards = trained_shards(cluster, namespace, name, run_id, "redis redis-service:6379")
    print(shards[0])  # for docs/migrating.md (pytest -s)

    # redis holds the rendezvous under RUN_ID/: each shard's Gloo address and rank.
    keys = cluster.kubectl("exec", "-n", namespace, REDIS, "--", "redis-cli", "--scan").stdout.split()
    assert {f"{run_id}/0/0/rank_0", f"{run_id}/0/0/rank_1"} <= set(keys), keys
    assert all(k.startswith(f"{run_id}/") for k in keys), keys
    # A run under a run ID used before is refused, as Caffe2's redis store refused it: why RUN_ID
    # carries the job's UID and the attempt. Run beside redis (its address from there: localhost).
    rerun = [f"RUN_ID={run_id}", "SHARD_ID=0", "NUM_SHARDS=2", "REDIS_HOST=127.0.0.1", "REDIS_PORT=6379"]
    again = cluster.kubectl(
        "exec", "-n", namespace, REDIS, "--", "env", *rerun, "python", CAFFE2_TRAINER, check=False
    )
    assert again.returncode == 2, again
    reused = "was already set (perhaps you reused a run ID you have used before?)"
    assert f"rendezvous under run ID {run_id} failed: Value at 0/0/rank_0 {reused}" in again.stdout, again
    print(again.stdout)


def test_the_caffe2job_nfs_example_meets_through_files_under_its_run_id_and_trains(
    cluster: devcluster.Cluster, namespace: str, shared_dir: str
) -> None:
    job = converted("caffe2job-resnet50-nfs.yaml")  # NFS_PATH /share2/public/caffe2/, a hostPath
    template = job["spec"]["replicaSpecs"]["Worker"]["template"]["spec"]
    (container,) = template["containers"]
    # No GPUs here (as above); the hostPath /share2/public is a directory every node sees.
    assert container.pop("resources") == {"limits": {"nvidia.com/gpu": 2}}
    (volume,) = template["volumes"]
    volume["hostPath"]["path"] = shared_dir
    (pathlib.Path(shared_dir) / "caffe2").mkdir()
    name = jobs.create(cluster, namespace, job)
    jobs.wait_state(cluster, namespace, name, "Succeeded", timeout=300)

    uid = (jobs.get_job(cluster, namespace, name) or {})["metadata"]["uid"]
    run_id = f"{uid}-0"  # the $(RUN_ID) of the example's --run_id flag
    trained_shards(cluster, namespace, name, run_id, f"files under /share2/public/caffe2/{run_id}")
    # The rendezvous is a file per key, in the run's own directory of the shared path.
    files = {p.name for p in (pathlib.Path(shared_dir) / "caffe2" / run_id).iterdir()}
    assert {"0%2F0%2Frank_0", "0%2F0%2Frank_1"} <= files, files
