"""MPI: the Launcher's mpirun reads the generated hostfile and starts every rank on this machine.

A local run (:mod:`testkit.localrun`) puts every replica on this machine: the hostfile names
127.0.0.1 once, with every Worker's slots, and the Launcher runs ``mpirun`` without
``--hostfile`` — Open MPI finds the hostfile through ``OMPI_MCA_orte_default_hostfile``, in the
folder kubetrain's ConfigMap is written to — and starts every rank here: on one machine it needs
no ssh, so the Workers, which only serve ssh (``sshd -De`` in the sample), run no process: each
is a pod that runs until stopped. A real MPI program all-reduces across every slot (1 or 2 ranks
for each Worker). mpirun reaching Workers over ssh with the job's Secret is shown on real nodes
(tests/node/test_training.py).
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from testkit import localrun
from testkit.builders import a_job

TIMEOUT = 120.0
WORKERS = 2

PROGRAM = r"""
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv) {
    int rank, size, mine, sum;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    mine = rank + 1;
    MPI_Allreduce(&mine, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    printf("rank %d of %d sum %d\n", rank, size, sum);
    MPI_Finalize();
    return 0;
}
"""


@pytest.mark.parametrize("slots", [1, 2], ids=["1-slot", "2-slots"])
def test_mpirun_uses_the_hostfile_and_starts_every_rank(
    slots: int, mpirun: str, mpicc: str, tmp_path: Path
) -> None:
    program = tmp_path / "ranks"
    source = tmp_path / "ranks.c"
    source.write_text(PROGRAM)
    subprocess.run([mpicc, "-o", str(program), str(source)], check=True, timeout=60)
    ranks = WORKERS * slots
    # The command of samples/v1beta1/mpi-horovod.yaml: no --hostfile, the env names it.
    argv = [
        mpirun,
        "--allow-run-as-root",
        "-np",
        str(ranks),
        "-bind-to",
        "none",
        "-map-by",
        "slot",
        str(program),
    ]
    sshd = ["/bin/sh", "-c", "mkdir -p /run/sshd && exec /usr/sbin/sshd -De"]
    options = {"slotsPerWorker": slots} if slots > 1 else None
    job = (
        a_job("hv")
        .framework("mpi", options=options)
        .replicas("Launcher", 1, tmpl=localrun.with_command("mpi", argv))
        .replicas("Worker", WORKERS, tmpl=localrun.with_command("mpi", sshd))
        .build()
    )

    ran = localrun.run(job, tmp_path, timeout=TIMEOUT)

    launcher = ran.launches["hv-launcher-0"]
    hostfile = Path(launcher.env["OMPI_MCA_orte_default_hostfile"])
    assert hostfile.is_relative_to(tmp_path)
    assert hostfile.read_text() == f"127.0.0.1 slots={ranks}\n"  # this machine once, every slot
    lines = sorted(re.findall(r"rank \d+ of \d+ sum \d+", "\n".join(ran.lines("launcher-0"))))
    assert lines == sorted(f"rank {r} of {ranks} sum {sum(range(1, ranks + 1))}" for r in range(ranks))
    assert all(ran.launches[f"hv-worker-{i}"].stand_in for i in range(WORKERS))
    assert ran.lines("worker-0") == []  # no sshd ran: mpirun needs none on one machine
