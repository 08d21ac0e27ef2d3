"""PaddlePaddle: ``paddle.distributed.launch`` in collective mode, or PS mode with Masters.

Types ``Master`` (optional, any number) and ``Worker`` (at least one). Without a Master
the job runs in collective mode and Worker 0 is the rendezvous; with Masters it runs in
parameter-server mode, each Master is one server, each Worker one trainer, and Master 0
is the rendezvous. Every main container (``paddle``) gets what the launcher reads from
the environment (it maps ``PADDLE_*`` to its ``--master``, ``--nnodes`` ... flags):

- ``PADDLE_MASTER``: the rendezvous's ``host:port``. The rendezvous replica itself gets
  ``127.0.0.1:port``: the launcher starts its key-value master only when the master's
  host is 127.0.0.1 or the pod's own IP, and a Service name is neither (Kubeflow passes
  ``$(POD_IP)`` through the downward API for the same reason);
- ``PADDLE_NNODES``: every replica of the job (one node per pod);
- ``PADDLE_JOB_ID``: the job's name (as PaddleJob), the prefix of the rendezvous keys;
- ``PYTHONUNBUFFERED=1``;
- collective mode: ``PADDLE_RANK``, the Worker's index, so node ranks follow kubetrain's
  order instead of the order in which pods reach the master (rank 0 is the rendezvous);
- PS mode: ``PADDLE_SERVER_NUM=1`` on Masters and ``PADDLE_TRAINER_NUM=1`` on Workers
  (one server or trainer per pod), which also switches the launcher to PS mode.

Port 36543 (``master``), the port of the launcher's key-value master. Success: every
Worker succeeds (parameter servers wait for the trainers and may never exit on their
own). Restarts: ``ExitCode`` with scope ``Job``: collective training hangs when one rank
dies, and the launcher's rendezvous runs once, so a lone replacement cannot rejoin; a
user bug (exit code 1-127) fails the job at once.
"""

from collections.abc import Mapping

from kubetrain.api import v1beta1
from kubetrain.operator.frameworks import framework

__all__ = ["FRAMEWORK", "rendezvous"]

MASTER = "Master"
WORKER = "Worker"


def rendezvous(world: framework.World) -> framework.Replica:
    """Master 0 in PS mode, else Worker 0."""
    found = world.first(MASTER, WORKER)
    assert found is not None, "validation guarantees a Worker"
    return found


def _env(world: framework.World, replica: framework.Replica) -> Mapping[str, str]:
    master = rendezvous(world)
    host = "127.0.0.1" if replica == master else master.host
    env = {
        "PADDLE_MASTER": f"{host}:{master.port}",
        "PADDLE_NNODES": str(len(world.replicas)),
        "PADDLE_JOB_ID": world.name,
        "PYTHONUNBUFFERED": "1",
    }
    if not world.of_type(MASTER):
        env["PADDLE_RANK"] = str(replica.index)
    elif replica.type.lower() == MASTER.lower():
        env["PADDLE_SERVER_NUM"] = "1"
    else:
        env["PADDLE_TRAINER_NUM"] = "1"
    return env


FRAMEWORK = framework.Framework(
    name="paddle",
    replica_types=(
        framework.ReplicaType(name=MASTER, master=True),
        framework.ReplicaType(name=WORKER, min_replicas=1),
    ),
    container="paddle",
    port=36543,
    port_name="master",
    restart_policy=v1beta1.RestartPolicy.EXIT_CODE,
    # Collectives hang when one rank dies, and the rendezvous runs once per launch.
    restart_scope=v1beta1.RestartScope.JOB,
    success=framework.every(WORKER),
    env=_env,
)
