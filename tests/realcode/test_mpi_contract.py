"""MPI: the Launcher's mpirun reads the generated hostfile and reaches the Workers over ssh.

As in a cluster: each Worker runs sshd that trusts the job's Secret (its
``authorized_keys``); the Launcher runs ``mpirun`` without ``--hostfile`` — Open MPI finds
the hostfile through ``OMPI_MCA_orte_default_hostfile`` and starts its daemons with
``OMPI_MCA_plm_rsh_agent=ssh``, using the Secret's key and ssh config — and a real MPI
program all-reduces across every slot of the hostfile (1 or 2 ranks on each Worker).

Only what a pod's filesystem and network would give is supplied: the Launcher's ``ssh`` is
wrapped to read the Secret's files from their local directory (in a pod they are
``~/.ssh``) and to reach sshd at the port standing in for 22; each Worker's sshd gives
its sessions a shared-memory directory of their own (a pod's /dev/shm); Open MPI's
traffic is kept on lo (see LOOPBACK).
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest
from testkit import replicas
from testkit.builders import a_job

from kubetrain.operator import render
from kubetrain.operator.frameworks import mpi

TIMEOUT = 120.0
WORKERS = 2
# Pods talk over eth0, which is why the Launcher's env excludes lo; here every replica is on
# lo, so Open MPI's traffic (ranks and daemons) is kept there instead.
LOOPBACK: dict[str, str | None] = {
    "OMPI_MCA_btl_tcp_if_exclude": None,
    "OMPI_MCA_btl_tcp_if_include": "lo",
    "OMPI_MCA_oob_tcp_if_include": "lo",
}

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


def sshd_argv(sshd: str, worker: replicas.Replica, port: int) -> list[str]:
    """sshd as a Worker runs it (``sshd -De``), reading what the pod's ~/.ssh would hold."""
    host_key = worker.root / "ssh_host_ed25519_key"
    # Each pod has a /dev/shm of its own; here the Workers share the machine's, and Open MPI
    # names its shared-memory segments by host name (the machine's, for every Worker).
    shm = worker.root / "dev-shm"
    shm.mkdir()
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(host_key)], check=True, timeout=60
    )
    return [
        sshd,
        "-D",
        "-e",
        "-f",
        "/dev/null",
        "-h",
        str(host_key),
        "-o",
        f"ListenAddress={worker.address}:{port}",
        "-o",
        f"AuthorizedKeysFile={worker.file('/root/.ssh/authorized_keys')}",
        # The Secret's files are links into its volume in a pod; here they are in a temp dir.
        "-o",
        "StrictModes=no",
        "-o",
        "PasswordAuthentication=no",
        "-o",
        "UsePAM=no",
        "-o",
        "PidFile=none",
        "-o",
        f"SetEnv=OMPI_MCA_btl_vader_backing_directory={shm}",
    ]


def ssh_wrapper(ssh: str, launcher: replicas.Replica, port: int) -> Path:
    """An ``ssh`` first on the Launcher's PATH: the real one, with the pod's ~/.ssh and port."""
    bin_dir = launcher.root / "bin"
    bin_dir.mkdir()
    wrapper = bin_dir / "ssh"
    config, key = launcher.file("/root/.ssh/config"), launcher.file("/root/.ssh/id_ed25519")
    wrapper.write_text(f'#!/bin/sh\nexec {ssh} -F {config} -i {key} -o IdentitiesOnly=yes -p {port} "$@"\n')
    wrapper.chmod(0o755)
    return bin_dir


@pytest.mark.parametrize("slots", [1, 2], ids=["1-slot", "2-slots"])
def test_mpirun_uses_hostfile_and_ssh_secret(
    slots: int, mpirun: str, mpicc: str, sshd: str, ssh: str, processes: replicas.Processes, tmp_path: Path
) -> None:
    if os.geteuid() != 0:
        pytest.fail("sshd must run as root, as it does in the Workers", pytrace=False)
    Path("/run/sshd").mkdir(exist_ok=True)  # sshd's privilege-separation directory, as the sample makes
    program = tmp_path / "ranks"
    source = tmp_path / "ranks.c"
    source.write_text(PROGRAM)
    subprocess.run([mpicc, "-o", str(program), str(source)], check=True, timeout=60)

    options = {"slotsPerWorker": slots} if slots > 1 else None
    job = (
        a_job("hv")
        .framework("mpi", options=options)
        .replicas("Launcher", 1)
        .replicas("Worker", WORKERS)
        .build()
    )
    local = replicas.localize(render.render(job, mpi.FRAMEWORK), container="mpi", workdir=tmp_path / "pods")
    port = local.ports[mpi.SSH_PORT]
    launcher, workers = local.one("Launcher"), local.of_type("Worker")
    hostfile = Path(launcher.env["OMPI_MCA_orte_default_hostfile"]).read_text()
    assert hostfile == "".join(f"{w.address} slots={slots}\n" for w in workers)

    for w in workers:
        processes.start(w, sshd_argv(sshd, w, port), daemon=True)
    for w in workers:  # the Launcher starts once every Worker is Ready (sshd listening)
        replicas.wait_listening(w.address, port)
    bin_dir = ssh_wrapper(ssh, launcher, port)
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
    path = f"{bin_dir}:{os.environ.get('PATH', '/usr/bin:/bin')}"
    processes.start(launcher, argv, extra={"PATH": path, **LOOPBACK})
    (finished,) = processes.wait(TIMEOUT)

    lines = sorted(re.findall(r"rank \d+ of \d+ sum \d+", finished.stdout))
    assert lines == sorted(f"rank {r} of {ranks} sum {sum(range(1, ranks + 1))}" for r in range(ranks))
    # Every Worker's sshd let the Launcher in with the Secret's key: the ranks ran there.
    for out in processes.outputs(daemons=True):
        assert "Accepted publickey for root" in out.stderr, out.stderr
