"""Every MPI rank contributes rank + 1; MPI_Allreduce must give each the same sum.

Run by the Launcher's ``mpirun`` over the hostfile kubetrain renders; the ranks live on
the Workers, reached through ssh with the job's generated key. Each rank prints one
``KUBETRAIN-RESULT {json}`` line with its host and the sum it received, and what it knows of its
attempt (the env ``mpirun -x`` passes on from the Launcher).

``--fail-after SECONDS`` keeps the ranks up after the allreduce (their rendezvous) and makes the
last one exit with code 1 that long after it, in every attempt (KUBETRAIN_RESTART_ATTEMPT) below
``--fail-attempts``; later attempts stay up until stopped. It shows restarts, and times them.

Each rank reports its progress to the file kubetrain names in KUBETRAIN_PROGRESS_FILE when the
job has ``spec.progress`` (through kubetrain_progress.py beside this script): step 0 of 1 before
the allreduce, step 1 of 1 and the sum after it. The ranks run in the Workers' pods, started by
ssh, so they see the variable only if ``mpirun -x KUBETRAIN_PROGRESS_FILE`` passes it on.
"""

import argparse
import json
import os
import socket
import time

import kubetrain_progress
from mpi4py import MPI

parser = argparse.ArgumentParser()
parser.add_argument("--fail-after", type=float, default=None)
parser.add_argument("--fail-attempts", type=int, default=1)
args = parser.parse_args()

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
kubetrain_progress.report(0, total=1)
total = comm.allreduce(rank + 1, op=MPI.SUM)
kubetrain_progress.report(1, total=1, sum=total)
if rank == 0:  # the sum is all this program has to keep: its checkpoint, said on the progress line
    kubetrain_progress.checkpointed(1, kubetrain_progress.checkpoint_requested())
print(f"rank {rank}/{size} on {socket.gethostname()} joined the rendezvous", flush=True)
attempt = int(os.environ.get("KUBETRAIN_RESTART_ATTEMPT", "0"))
restarts = int(os.environ.get("KUBETRAIN_RESTARTS", "0"))
reason = os.environ.get("KUBETRAIN_LAST_RESTART_REASON", "")
print(f"rank {rank} attempt {attempt} after {restarts} restart(s), last: {reason or '-'}", flush=True)
result = {
    "rank": rank,
    "size": size,
    "host": socket.gethostname(),
    "sum": total,
    "expected": size * (size + 1) // 2,
}
print("KUBETRAIN-RESULT " + json.dumps(result), flush=True)
if args.fail_after is not None:
    if attempt < args.fail_attempts and rank == size - 1:
        time.sleep(args.fail_after)
        print(f"rank {rank} fails at step 0", flush=True)
        os._exit(1)
    while True:  # runs on; answers a checkpoint kubetrain asks for before a stop (spec.checkpoint)
        request = kubetrain_progress.checkpoint_requested()
        if rank == 0 and request is not None:
            kubetrain_progress.checkpointed(1, request)
        time.sleep(1)
