"""JAX: jax.distributed.initialize across the Workers, then a psum over every process's device.

Each process contributes ``process_index + 1``: the sum is ``n (n + 1) / 2`` on every
process only if all ``n`` met at Worker 0's coordinator, each with its own id. The Workers run
through the local runner (:mod:`testkit.localrun`).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from testkit import localrun
from testkit.builders import a_job

from kubetrain.api import v1beta1

TIMEOUT = 120.0
WORKERS = 2

# How the process finds its place, as the user's program spells it; {init} is one of INIT.
PROGRAM = """\
import json, os
import jax
import jax.numpy as jnp

{init}
x = jnp.full((jax.local_device_count(),), jax.process_index() + 1.0)
total = jax.pmap(lambda v: jax.lax.psum(v, "i"), axis_name="i")(x)
print(json.dumps({{"count": jax.process_count(), "index": jax.process_index(),
                  "devices": jax.device_count(), "sum": float(total[0])}}))
jax.distributed.shutdown()
"""
INIT = {
    # Kubeflow Trainer v2's names.
    "JAX_*": """jax.distributed.initialize(
    coordinator_address=os.environ["JAX_COORDINATOR_ADDRESS"],
    num_processes=int(os.environ["JAX_NUM_PROCESSES"]),
    process_id=int(os.environ["JAX_PROCESS_ID"]),
    initialization_timeout=90,
)""",
    # Kubeflow JAXJob v1's names.
    "COORDINATOR_*": """jax.distributed.initialize(
    coordinator_address=os.environ["COORDINATOR_ADDRESS"] + ":" + os.environ["COORDINATOR_PORT"],
    num_processes=int(os.environ["NUM_PROCESSES"]),
    process_id=int(os.environ["PROCESS_ID"]),
    initialization_timeout=90,
)""",
    # No arguments: JAX reads JAX_COORDINATOR_ADDRESS itself, but not the count or the id.
    "bare": "jax.distributed.initialize(initialization_timeout=90)",
}
# What the image would set: CPU only (no probing for accelerators), one device per process.
IMAGE_ENV = {"JAX_PLATFORMS": "cpu"}


def run(init: str, workdir: Path, expect: v1beta1.JobState = v1beta1.JobState.SUCCEEDED) -> localrun.Ran:
    program = workdir / "train.py"
    program.write_text(PROGRAM.format(init=INIT[init]))
    command = [sys.executable, "-P", str(program)]
    tmpl = localrun.with_command("jax", command, IMAGE_ENV)
    job = localrun.everything_succeeds(
        a_job("jx").framework("jax").replicas("Worker", WORKERS, tmpl=tmpl).build()
    )
    return localrun.run(job, workdir, timeout=TIMEOUT, expect=expect)


def results(ran: localrun.Ran) -> list[dict[str, Any]]:
    outs = []
    for launch in ran.launches.values():
        (out,) = ran.json(launch.replica)
        assert out["index"] == int(launch.env["JAX_PROCESS_ID"]) == launch.index
        outs.append(out)
    return outs


@pytest.mark.parametrize("init", ["JAX_*", "COORDINATOR_*"])
def test_distributed_initialize_and_psum(init: str, jax_version: str, tmp_path: Path) -> None:
    outs = results(run(init, tmp_path))

    assert sorted(o["index"] for o in outs) == list(range(WORKERS))
    for o in outs:
        assert o["count"] == WORKERS
        assert o["devices"] == WORKERS  # one CPU device per process, every process's seen
        assert o["sum"] == sum(range(1, WORKERS + 1))


def test_distributed_initialize_without_arguments_is_not_enough(jax_version: str, tmp_path: Path) -> None:
    """JAX reads JAX_COORDINATOR_ADDRESS itself, but not JAX_NUM_PROCESSES nor JAX_PROCESS_ID.

    Outside a cluster JAX detects (Slurm, Open MPI, a JobSet or Indexed Job), the program
    must pass the count and the id, as both calls above do.
    """
    ran = run("bare", tmp_path, expect=v1beta1.JobState.FAILED)
    assert any("Number of processes must be defined" in line for line in ran.lines())
