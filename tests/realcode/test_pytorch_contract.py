"""PyTorch: gloo's all_reduce across the replicas, through MASTER_ADDR/RANK and through torchrun's PET_*.

Every replica adds ``rank + 1``: the sum on every rank is ``n (n + 1) / 2`` only if all
``n`` processes met at the master's address, each with its own rank. The replicas run through
the local runner (:mod:`testkit.localrun`): each with its pod's env, at 127.0.0.1 and a port of
its own.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from testkit import localrun
from testkit.builders import JobBuilder, a_job

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


def script(workdir: Path) -> str:
    path = workdir / "train.py"
    path.write_text(ALL_REDUCE)
    return str(path)


def torchrun() -> str:
    return str(Path(sys.executable).with_name("torchrun"))


def replicas(builder: JobBuilder, counts: dict[str, int], command: list[str]) -> v1beta1.TrainingJob:
    for t, n in counts.items():
        if n:
            builder = builder.replicas(t, n, tmpl=localrun.with_command("pytorch", command, IMAGE_ENV))
    return localrun.everything_succeeds(builder.build())


@pytest.mark.parametrize(
    ("masters", "host_names"),
    [(1, v1beta1.HostNames.PER_REPLICA), (0, v1beta1.HostNames.PER_REPLICA), (1, v1beta1.HostNames.PER_JOB)],
    ids=["master-and-workers", "workers-only", "per-job-host-names"],
)
def test_all_reduce_through_master_addr_and_rank(
    masters: int, host_names: v1beta1.HostNames, torch_version: str, tmp_path: Path
) -> None:
    builder = a_job("tj").framework("pytorch").with_spec(network=v1beta1.NetworkSpec(host_names=host_names))
    job = replicas(
        builder, {"Master": masters, "Worker": 3 - masters}, [sys.executable, "-P", script(tmp_path)]
    )
    master = f"tj-{'master' if masters else 'worker'}-0"
    per_job = host_names is v1beta1.HostNames.PER_JOB
    # In a cluster MASTER_ADDR names the master by a name the job's own Services make resolvable;
    # here it is this machine.
    in_cluster = render.render(job, pytorch.FRAMEWORK)
    (addr,) = {
        e["value"]
        for o in in_cluster
        if o["kind"] == "Pod"
        for e in o["spec"]["containers"][0]["env"]
        if e["name"] == "MASTER_ADDR"
    }
    assert addr == (f"{master}.tj.default.svc" if per_job else f"{master}.default.svc")
    services = {o["metadata"]["name"] for o in in_cluster if o["kind"] == "Service"}
    assert ("tj" if per_job else master) in services

    ran = localrun.run(job, tmp_path, timeout=TIMEOUT)

    for launch in ran.launches.values():
        (out,) = ran.json(launch.replica)
        assert out["rank"] == int(launch.env["RANK"])
        assert out["world"] == 3
        assert out["sum"] == 1 + 2 + 3
        assert launch.env["MASTER_ADDR"] == "127.0.0.1"
    assert sorted(out["rank"] for out in ran.json()) == [0, 1, 2]
    assert ran.env(master)["RANK"] == "0"  # the Master, else Worker 0, is rank 0


def test_all_reduce_through_torchrun_pet_env(torch_version: str, tmp_path: Path) -> None:
    # torchrun takes every setting from PET_*: no flags, as in samples/v1beta1/pytorch-ddp.yaml.
    job = replicas(
        a_job("tr").framework("pytorch"), {"Master": 1, "Worker": 2}, [torchrun(), script(tmp_path)]
    )

    ran = localrun.run(job, tmp_path, timeout=TIMEOUT)

    outs = ran.json()
    assert sorted(o["rank"] for o in outs) == [0, 1, 2]
    assert all(o["world"] == 3 and o["sum"] == 6 for o in outs)
    for launch in ran.launches.values():
        (out,) = ran.json(launch.replica)
        # One process per node: the node rank torchrun used is the one kubetrain gave.
        assert out["env"]["GROUP_RANK"] == launch.env["PET_NODE_RANK"]
        assert out["rank"] == int(launch.env["RANK"])


def test_all_reduce_through_torchrun_two_processes_per_node(torch_version: str, tmp_path: Path) -> None:
    builder = a_job("np").framework("pytorch", pytorch=v1beta1.PyTorchOptions(nproc_per_node="2"))
    job = replicas(builder, {"Master": 1, "Worker": 1}, [torchrun(), script(tmp_path)])

    ran = localrun.run(job, tmp_path, timeout=TIMEOUT)

    outs = ran.json()
    assert sorted(o["rank"] for o in outs) == [0, 1, 2, 3]
    assert all(o["world"] == 4 and o["sum"] == 1 + 2 + 3 + 4 for o in outs)
    for launch in ran.launches.values():
        node_outs = ran.json(launch.replica)
        assert {o["env"]["GROUP_RANK"] for o in node_outs} == {launch.env["PET_NODE_RANK"]}
        # kubetrain's RANK and WORLD_SIZE are the node's first global rank and the world.
        assert min(o["rank"] for o in node_outs) == int(launch.env["RANK"])
        assert launch.env["WORLD_SIZE"] == "4"


def test_all_reduce_through_torchrun_elastic_c10d_rendezvous(torch_version: str, tmp_path: Path) -> None:
    elastic = v1beta1.ElasticPolicy(min_replicas=3, max_replicas=3, max_restarts=0)
    builder = (
        a_job("el").uid("0f1e2d3c").framework("pytorch", pytorch=v1beta1.PyTorchOptions(elastic=elastic))
    )
    job = replicas(builder, {"Worker": 3}, [torchrun(), script(tmp_path)])

    ran = localrun.run(job, tmp_path, timeout=TIMEOUT)

    assert ran.env("el-worker-0")["PET_RDZV_BACKEND"] == "c10d"
    # On one machine Worker 0 alone serves the rendezvous store, as its pod does in a cluster.
    assert [ran.env(f"el-worker-{i}")["PET_RDZV_CONF"] for i in range(3)] == [
        "is_host=true",
        "is_host=false",
        "is_host=false",
    ]
    outs = ran.json()
    assert sorted(o["rank"] for o in outs) == [0, 1, 2]
    assert all(o["world"] == 3 and o["sum"] == 6 for o in outs)
    assert {o["env"]["TORCHELASTIC_RUN_ID"] for o in outs} == {"0f1e2d3c"}
