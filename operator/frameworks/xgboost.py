"""XGBoost: a Master that runs the rabit tracker and trains as rank 0, and Workers.

One ``Master`` is required; ``Worker`` replicas are optional. Ranks follow the
framework's order: the Master is rank 0, Worker ``i`` is rank ``i + 1``. Each main
container (``xgboost``) gets Kubeflow's XGBoostJob env:

- ``MASTER_ADDR``, ``MASTER_PORT``: the Master's Service and port;
- ``WORLD_SIZE``: Master plus Workers; ``RANK``: as above;
- ``WORKER_PORT`` and ``WORKER_ADDRS`` (the Workers' hosts, comma-separated, in index
  order), only when the job has Workers — LightGBM's machine list is built from them;
- ``PYTHONUNBUFFERED=1``;

and what xgboost's rabit / collective reads to join the tracker:
``DMLC_TRACKER_URI`` (= ``MASTER_ADDR``), ``DMLC_TRACKER_PORT`` (= ``MASTER_PORT``),
``DMLC_TASK_ID`` (= ``RANK``) and ``DMLC_NUM_WORKER`` (= ``WORLD_SIZE``). The Master's
program starts the tracker (``xgboost.tracker.RabitTracker``) on ``MASTER_PORT`` for
``WORLD_SIZE`` workers and then joins it itself, as the Kubeflow examples do.

Port 9999 (``xgboostjob-port``). Success: the Master succeeds (it holds the tracker and
the final model). Restarts: ``ExitCode`` with scope ``Job``: rabit's all-reduce hangs
when one member dies and the tracker does not re-admit a lone replacement in current
xgboost, so the whole job restarts on a signal or eviction; a user bug (exit code
1-127) fails the job at once.
"""

from collections.abc import Mapping

from kubetrain.api import v1beta1
from kubetrain.operator.frameworks import framework

__all__ = ["FRAMEWORK"]

MASTER = "Master"
WORKER = "Worker"


def _env(world: framework.World, replica: framework.Replica) -> Mapping[str, str]:
    master = world.first(MASTER)
    assert master is not None, "validation guarantees a Master"
    workers = world.of_type(WORKER)
    rank = str(world.replicas.index(replica))
    size = str(len(world.replicas))
    env = {
        "MASTER_ADDR": master.host,
        "MASTER_PORT": str(master.port),
        "WORLD_SIZE": size,
        "RANK": rank,
    }
    if workers:
        env["WORKER_PORT"] = str(workers[0].port)
        env["WORKER_ADDRS"] = ",".join(w.host for w in workers)
    env.update(
        {
            "DMLC_TRACKER_URI": master.host,
            "DMLC_TRACKER_PORT": str(master.port),
            "DMLC_TASK_ID": rank,
            "DMLC_NUM_WORKER": size,
            "PYTHONUNBUFFERED": "1",
        }
    )
    return env


FRAMEWORK = framework.Framework(
    name="xgboost",
    replica_types=(
        framework.ReplicaType(name=MASTER, min_replicas=1, max_replicas=1, master=True),
        framework.ReplicaType(name=WORKER),
    ),
    container="xgboost",
    port=9999,
    port_name="xgboostjob-port",
    restart_policy=v1beta1.RestartPolicy.EXIT_CODE,
    # rabit's all-reduce hangs when one member dies; restart every member together.
    restart_scope=v1beta1.RestartScope.JOB,
    success=framework.first(MASTER),
    env=_env,
)
