"""PyTorch: gloo's all_reduce across the replicas, through MASTER_ADDR/RANK and through torchrun's PET_*.

Every replica adds ``rank + 1``: the sum on every rank is ``n (n + 1) / 2`` only if all
``n`` processes met at the master's address, each with its own rank.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from testkit import replicas
from testkit.builders import a_job

from kubetrain.api import v1beta1
from kubetrain.operator import render
from kubetrain.operator.frameworks import pytorch

TIMEOUT = 120.0
# Not part of the contract: keeps gloo's own connections on lo, whatever the host name resolves to.
IMAGE_ENV = {"GLOO_SOCKET_IFNAME": "lo"}

# What a training script does: init_process_group() with no arguments reads the env
# (env://: MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE), as torchrun's children do too.
ALL_REDUCE = """\
import datetime, json, os
import torch
import torch.distributed as dist

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=90))
t = torch.tensor([float(dist.get_rank() + 1)])
dist.all_reduce(t)
keys = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "GROUP_RANK", "LOCAL_WORLD_SIZE", "TORCHELASTIC_RUN_ID")
result = {"rank": dist.get_rank(), "world": dist.get_world_size(), "sum": t.item(),
          "env": {k: os.environ.get(k) for k in keys}}
# One write per line: torchrun's processes share stdout, and print() writes the newline apart.
os.write(1, (json.dumps(result) + "\\n").encode())
dist.destroy_process_group()
"""


def local_job(job: v1beta1.TrainingJob, workdir: Path) -> replicas.LocalJob:
    return replicas.localize(render.render(job, pytorch.FRAMEWORK), container="pytorch", workdir=workdir)


def script(replica: replicas.Replica) -> str:
    path = replica.root / "train.py"
    path.write_text(ALL_REDUCE)
    return str(path)


def results(finished: list[replicas.Finished]) -> list[dict[str, Any]]:
    """Every JSON line the processes printed (torchrun's workers print one each)."""
    return [json.loads(line) for f in finished for line in f.stdout.splitlines() if line.startswith("{")]


def torchrun() -> str:
    return str(Path(sys.executable).with_name("torchrun"))


@pytest.mark.parametrize(
    ("masters", "host_names"),
    [(1, v1beta1.HostNames.PER_REPLICA), (0, v1beta1.HostNames.PER_REPLICA), (1, v1beta1.HostNames.PER_JOB)],
    ids=["master-and-workers", "workers-only", "per-job-host-names"],
)
def test_all_reduce_through_master_addr_and_rank(
    masters: int,
    host_names: v1beta1.HostNames,
    torch_version: str,
    processes: replicas.Processes,
    tmp_path: Path,
) -> None:
    builder = a_job("tj").framework("pytorch").with_spec(network=v1beta1.NetworkSpec(host_names=host_names))
    if masters:
        builder = builder.replicas("Master", masters)
    job = builder.replicas("Worker", 3 - masters).build()
    local = local_job(job, tmp_path)
    master = f"tj-{'master' if masters else 'worker'}-0"
    per_job = host_names is v1beta1.HostNames.PER_JOB
    # MASTER_ADDR's name is one the job's own Services make resolvable (here: a loopback address).
    assert (f"{master}.tj.default.svc" if per_job else f"{master}.default.svc") in local.hosts

    for r in local.replicas:
        processes.start(r, [sys.executable, "-P", script(r)], extra=IMAGE_ENV)
    finished = processes.wait(TIMEOUT)

    for f in finished:
        (out,) = results([f])
        assert out["rank"] == int(f.replica.env["RANK"])
        assert out["world"] == 3
        assert out["sum"] == 1 + 2 + 3
    assert sorted(out["rank"] for out in results(finished)) == [0, 1, 2]
    assert local.replicas[0].env["RANK"] == "0"  # the Master, else Worker 0, is rank 0


def test_all_reduce_through_torchrun_pet_env(
    torch_version: str, processes: replicas.Processes, tmp_path: Path
) -> None:
    job = a_job("tr").framework("pytorch").replicas("Master", 1).replicas("Worker", 2).build()
    local = local_job(job, tmp_path)

    # torchrun takes every setting from PET_*: no flags, as in samples/v1beta1/pytorch-ddp.yaml.
    for r in local.replicas:
        processes.start(r, [torchrun(), script(r)], extra=IMAGE_ENV)
    finished = processes.wait(TIMEOUT)

    outs = results(finished)
    assert sorted(o["rank"] for o in outs) == [0, 1, 2]
    assert all(o["world"] == 3 and o["sum"] == 6 for o in outs)
    for f in finished:
        (out,) = results([f])
        # One process per node: the node rank torchrun used is the one kubetrain gave.
        assert out["env"]["GROUP_RANK"] == f.replica.env["PET_NODE_RANK"]
        assert out["rank"] == int(f.replica.env["RANK"])


def test_all_reduce_through_torchrun_two_processes_per_node(
    torch_version: str, processes: replicas.Processes, tmp_path: Path
) -> None:
    job = (
        a_job("np")
        .framework("pytorch", pytorch=v1beta1.PyTorchOptions(nproc_per_node="2"))
        .replicas("Master", 1)
        .replicas("Worker", 1)
        .build()
    )
    local = local_job(job, tmp_path)

    for r in local.replicas:
        processes.start(r, [torchrun(), script(r)], extra=IMAGE_ENV)
    finished = processes.wait(TIMEOUT)

    outs = results(finished)
    assert sorted(o["rank"] for o in outs) == [0, 1, 2, 3]
    assert all(o["world"] == 4 and o["sum"] == 1 + 2 + 3 + 4 for o in outs)
    for f in finished:
        node_outs = results([f])
        assert {o["env"]["GROUP_RANK"] for o in node_outs} == {f.replica.env["PET_NODE_RANK"]}
        # kubetrain's RANK and WORLD_SIZE are the node's first global rank and the world.
        assert min(o["rank"] for o in node_outs) == int(f.replica.env["RANK"])
        assert f.replica.env["WORLD_SIZE"] == "4"


def test_all_reduce_through_torchrun_elastic_c10d_rendezvous(
    torch_version: str, processes: replicas.Processes, tmp_path: Path
) -> None:
    elastic = v1beta1.ElasticPolicy(min_replicas=3, max_replicas=3, max_restarts=0)
    job = (
        a_job("el")
        .uid("0f1e2d3c")
        .framework("pytorch", pytorch=v1beta1.PyTorchOptions(elastic=elastic))
        .replicas("Worker", 3)
        .build()
    )
    local = local_job(job, tmp_path)
    assert local.one("Worker").env["PET_RDZV_BACKEND"] == "c10d"

    for r in local.replicas:
        processes.start(r, [torchrun(), script(r)], extra=IMAGE_ENV)
    finished = processes.wait(TIMEOUT)

    outs = results(finished)
    assert sorted(o["rank"] for o in outs) == [0, 1, 2]
    assert all(o["world"] == 3 and o["sum"] == 6 for o in outs)
    assert {o["env"]["TORCHELASTIC_RUN_ID"] for o in outs} == {"0f1e2d3c"}
