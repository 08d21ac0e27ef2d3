"""The PyTorch env contract: torch.distributed's MASTER_*/WORLD_SIZE/RANK and torchrun's PET_*."""

from typing import Any

from testkit.builders import a_job, container, template
from testkit.rendered import framework_env

from kubetrain.api import v1beta1
from kubetrain.operator import render
from kubetrain.operator.frameworks import pytorch


def envs(job: v1beta1.TrainingJob) -> dict[str, dict[str, str]]:
    out = {}
    for o in render.render(job, pytorch.FRAMEWORK):
        if o["kind"] == "Pod":
            c = o["spec"]["containers"][0]
            out[o["metadata"]["name"]] = framework_env(c)
    return out


def test_master_and_workers() -> None:
    job = a_job("ddp").namespace("ml").replicas("Master", 1).replicas("Worker", 2).build()
    env = envs(job)
    for name, rank in (("ddp-master-0", 0), ("ddp-worker-0", 1), ("ddp-worker-1", 2)):
        assert env[name]["MASTER_ADDR"] == env[name]["PET_MASTER_ADDR"] == "ddp-master-0.ml.svc"
        assert env[name]["MASTER_PORT"] == env[name]["PET_MASTER_PORT"] == "23456"
        assert env[name]["WORLD_SIZE"] == "3"
        assert env[name]["RANK"] == env[name]["PET_NODE_RANK"] == str(rank)
        assert env[name]["PET_NNODES"] == "3"
        assert env[name]["PET_NPROC_PER_NODE"] == "1"


def test_without_a_master_worker_zero_is_rank_zero() -> None:
    env = envs(a_job("w").replicas("Worker", 2).build())
    assert env["w-worker-0"]["MASTER_ADDR"] == "w-worker-0.default.svc"
    assert [env[f"w-worker-{i}"]["RANK"] for i in (0, 1)] == ["0", "1"]


def test_processes_per_node_follow_the_gpus_requested() -> None:
    gpu = template(container("pytorch", resources={"limits": {"nvidia.com/gpu": 4}}))
    env = envs(a_job("g").replicas("Master", 1, tmpl=gpu).replicas("Worker", 1, tmpl=gpu).build())
    assert env["g-worker-0"]["PET_NPROC_PER_NODE"] == "4"
    assert env["g-worker-0"]["WORLD_SIZE"] == "8"
    assert env["g-worker-0"]["RANK"] == "4"  # first process of node 1


def test_nproc_per_node_option_wins_over_gpus() -> None:
    gpu = template(container("pytorch", resources={"limits": {"nvidia.com/gpu": 4}}))
    job = (
        a_job("g")
        .framework("pytorch", pytorch=v1beta1.PyTorchOptions(nproc_per_node="2"))
        .replicas("Worker", 2, tmpl=gpu)
        .build()
    )
    assert envs(job)["g-worker-1"]["PET_NPROC_PER_NODE"] == "2"
    assert envs(job)["g-worker-1"]["WORLD_SIZE"] == "4"


def test_elastic_rendezvous() -> None:
    elastic = v1beta1.ElasticPolicy(
        min_replicas=1, max_replicas=4, rdzv_conf={"timeout": "900"}, max_restarts=3
    )
    job = (
        a_job("e")
        .uid("1234")
        .framework("pytorch", pytorch=v1beta1.PyTorchOptions(elastic=elastic))
        .replicas("Worker", 2)
        .build()
    )
    env = envs(job)["e-worker-1"]
    assert env["PET_NNODES"] == "1:4"
    assert env["PET_RDZV_BACKEND"] == "c10d"
    assert env["PET_RDZV_ENDPOINT"] == "e-worker-0:23456"
    assert env["PET_RDZV_ID"] == "1234"
    assert env["PET_RDZV_CONF"] == "timeout=900"
    assert env["PET_MAX_RESTARTS"] == "3"
    assert "PET_NODE_RANK" not in env, "the rendezvous assigns node ranks"


def test_a_whole_job_restart_is_the_default_scope() -> None:
    # One dead rank hangs every other rank of a DDP job.
    assert pytorch.FRAMEWORK.restart_scope is v1beta1.RestartScope.JOB


def test_success_follows_the_master_else_all_workers() -> None:
    with_master = a_job("m").replicas("Master", 1).replicas("Worker", 2).build()
    workers = a_job("w").replicas("Worker", 2).build()
    assert pytorch.FRAMEWORK.success(with_master.spec).targets == (
        v1beta1.SuccessTarget(replica_type="Master", index=0),
    )
    assert pytorch.FRAMEWORK.success(workers.spec) == v1beta1.SuccessPolicy(
        targets=(v1beta1.SuccessTarget(replica_type="Worker"),)
    )


def test_env_lands_in_the_pytorch_container_only() -> None:
    tmpl = template(container("pytorch"), container("logger"))
    pod: dict[str, Any] = next(
        o
        for o in render.render(a_job("p").replicas("Worker", 1, tmpl=tmpl).build(), pytorch.FRAMEWORK)
        if o["kind"] == "Pod"
    )
    logger = pod["spec"]["containers"][1]
    assert logger["name"] == "logger"
    assert "env" not in logger
