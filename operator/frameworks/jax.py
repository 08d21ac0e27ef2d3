"""JAX: multi-controller Workers, one JAX process per pod, coordinated by Worker 0.

Every replica is a ``Worker``. ``jax.distributed.initialize`` needs the coordinator's
address, the number of processes and this process's id; each main container (``jax``)
gets them under both the names of Kubeflow Trainer v2 and those of Kubeflow's v1 JAXJob:

- ``JAX_COORDINATOR_ADDRESS``: Worker 0's ``host:port``;
- ``JAX_NUM_PROCESSES``: the Workers; ``JAX_PROCESS_ID``: this Worker's index;
- ``COORDINATOR_ADDRESS`` (Worker 0's host, without the port), ``COORDINATOR_PORT``,
  ``NUM_PROCESSES``, ``PROCESS_ID``: the same values, as JAXJob v1 spelled them;
- ``PYTHONUNBUFFERED=1``, so logs arrive while the job runs.

JAX 0.10's ``jax.distributed.initialize()`` reads only ``JAX_COORDINATOR_ADDRESS`` by
itself; the program passes ``num_processes`` and ``process_id`` from the env (checked by
the realcode tier, which runs exactly that).

Port 6666 (``jaxjob-port``), on which Worker 0's coordinator listens. Success: every
Worker succeeds (as JAXJob). Restarts: ``ExitCode`` with scope ``Job``: JAX collectives
hang when one process dies and a lone replacement cannot join a running coordinator, so
a signalled or evicted process restarts every Worker, while a user bug (exit code
1-127) fails the job at once.
"""

from collections.abc import Mapping

from kubetrain.api import v1beta1
from kubetrain.operator.frameworks import framework

__all__ = ["FRAMEWORK"]

WORKER = "Worker"


def _env(world: framework.World, replica: framework.Replica) -> Mapping[str, str]:
    coordinator = world.first(WORKER)
    assert coordinator is not None, "validation guarantees a Worker"
    processes = str(len(world.of_type(WORKER)))
    return {
        "JAX_COORDINATOR_ADDRESS": f"{coordinator.host}:{coordinator.port}",
        "JAX_NUM_PROCESSES": processes,
        "JAX_PROCESS_ID": str(replica.index),
        "COORDINATOR_ADDRESS": coordinator.host,
        "COORDINATOR_PORT": str(coordinator.port),
        "NUM_PROCESSES": processes,
        "PROCESS_ID": str(replica.index),
        "PYTHONUNBUFFERED": "1",
    }


FRAMEWORK = framework.Framework(
    name="jax",
    replica_types=(framework.ReplicaType(name=WORKER, min_replicas=1),),
    container="jax",
    port=6666,
    port_name="jaxjob-port",
    restart_policy=v1beta1.RestartPolicy.EXIT_CODE,
    # One dead process hangs every collective of the others.
    restart_scope=v1beta1.RestartScope.JOB,
    success=framework.every(WORKER),
    env=_env,
)
