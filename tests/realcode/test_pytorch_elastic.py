"""Elastic PyTorch with real torchrun agents: the world goes 2 -> 3 -> 2 while training goes on.

Three workers are rendered (the job scaled to its largest), and run as local processes with
exactly their pods' env: torchrun with no flags, reading ``PET_NNODES=2:3``, the c10d
rendezvous at Worker 0 and ``PET_MAX_RESTARTS``. Workers 0 and 1 start; Worker 2 starts
later, as the pod a scale-up creates; later still it gets SIGTERM, as the pod a scale-down
deletes. The script (samples/scripts/elastic_train.py, what the sample runs) resumes from a
shared checkpoint, so the steps count on while the world re-forms around them.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from testkit import replicas
from testkit.builders import a_job
from testkit.kube import eventually

from kubetrain.api import v1beta1
from kubetrain.operator import render
from kubetrain.operator.frameworks import pytorch

SCRIPT = Path(__file__).parents[2] / "samples" / "scripts" / "elastic_train.py"
IMAGE_ENV = {"GLOO_SOCKET_IFNAME": "lo"}  # gloo on lo, whatever the host name resolves to
TIMEOUT = 120.0


def steps(processes: replicas.Processes) -> list[dict[str, Any]]:
    """Every step rank 0 reported, from whichever process was rank 0 at the time, by step."""
    found = processes.outputs() + processes.stopped
    lines = [line for f in found for line in f.stdout.splitlines() if line.startswith("KUBETRAIN-STEP ")]
    return sorted((json.loads(line.split(" ", 1)[1]) for line in lines), key=lambda s: s["step"])


def until(processes: replicas.Processes, what: str, probe: Callable[[], int | None]) -> int:
    """``eventually``, showing every agent's output if it times out."""
    try:
        return eventually(what, probe, timeout=TIMEOUT)
    except AssertionError as e:
        tails = [
            f"--- {f.replica.name} (exit {f.returncode}):\n{f.stderr[-3000:]}" for f in processes.outputs()
        ]
        raise AssertionError("\n".join([str(e), *tails])) from None


def worlds(seen: list[dict[str, Any]]) -> list[int]:
    """The world sizes the steps ran in, each run of equal sizes once."""
    out: list[int] = []
    for s in seen:
        if not out or out[-1] != s["world"]:
            out.append(s["world"])
    return out


def test_torchrun_reforms_the_world_as_the_job_scales_and_training_carries_on(
    torch_version: str, processes: replicas.Processes, tmp_path: Path
) -> None:
    elastic = v1beta1.ElasticPolicy(min_replicas=2, max_replicas=3, rdzv_conf={"last_call_timeout": "1"})
    job = (
        a_job("el")
        .uid("5ca1e")
        .framework("pytorch", pytorch=v1beta1.PyTorchOptions(elastic=elastic))
        .replicas("Worker", 3)
        .build()
    )
    local = replicas.localize(render.render(job, pytorch.FRAMEWORK), container="pytorch", workdir=tmp_path)
    shared = tmp_path / "shared"
    shared.mkdir()
    stop_file = shared / "stop"
    argv = [
        str(Path(sys.executable).with_name("torchrun")),
        str(SCRIPT),
        "--steps=100000",
        f"--checkpoint={shared / 'step'}",
        f"--stop-file={stop_file}",
        "--step-seconds=0.05",
    ]
    w0, w1, w2 = local.of_type("Worker")
    assert w2.env["PET_NNODES"] == "2:3"
    assert "PET_NODE_RANK" not in w2.env
    # Without it, a node that joins a later round waits for a store address nobody writes.
    assert w2.env["TORCH_DISABLE_SHARE_RDZV_TCP_STORE"] == "1"

    def reached(world: int, after: int) -> int | None:
        seen = [s for s in steps(processes) if s["world"] == world and s["step"] > after + 5]
        return seen[-1]["step"] if seen else None

    def agent(r: replicas.Replica) -> dict[str, str]:
        # What distinct pods have and one machine lacks: each its own address to be reached at,
        # and only the endpoint's host (Worker 0) serving the rendezvous store. Every process
        # here would take 127.0.0.2 for its own (it is loopback), and race to serve it.
        conf = f"{r.env['PET_RDZV_CONF']},is_host={str(r is w0).lower()}"
        return {**IMAGE_ENV, "PET_LOCAL_ADDR": r.address, "PET_RDZV_CONF": conf}

    for r in (w0, w1):
        processes.start(r, argv, extra=agent(r))
    two = until(processes, "training in a world of 2", lambda: reached(2, 0))

    processes.start(w2, argv, extra=agent(w2))  # scaled up: the new pod starts
    three = until(processes, "the world to grow to 3", lambda: reached(3, two))

    left = processes.stop(w2)  # scaled down: the pod is deleted, its agent gets SIGTERM
    until(processes, "the world to shrink to 2", lambda: reached(2, three))

    stop_file.touch()
    finished = processes.wait(TIMEOUT)

    assert [f.returncode for f in finished] == [0, 0], "the job ends well on the workers it kept"
    assert left.returncode != 0  # torchrun reports the signal; the pod was deleted, not failed
    seen = steps(processes)
    assert worlds(seen) == [2, 3, 2]
    numbers = [s["step"] for s in seen]
    # Training carried on: every step ran once, in order, across the three worlds.
    assert numbers == list(range(1, len(numbers) + 1))
