"""Every MPI rank contributes rank + 1; MPI_Allreduce must give each the same sum.

Run by the Launcher's ``mpirun`` over the hostfile kubetrain renders; the ranks live on
the Workers, reached through ssh with the job's generated key. Each rank prints one
``KUBETRAIN-RESULT {json}`` line with its host and the sum it received.
"""

import json
import socket

from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
total = comm.allreduce(rank + 1, op=MPI.SUM)
result = {"rank": rank, "size": size, "host": socket.gethostname(), "sum": total, "expected": size * (size + 1) // 2}
print("KUBETRAIN-RESULT " + json.dumps(result), flush=True)
