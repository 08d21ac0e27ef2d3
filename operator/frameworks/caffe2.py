"""Caffe2: data-parallel Workers (shards) that meet through a rendezvous backend.

Every replica is a ``Worker``, as in the Caffe2Job operator. Each main container
(``caffe2``) gets:

- ``SHARD_ID`` (its index), ``NUM_SHARDS`` (the Workers) and ``RUN_ID``, one id shared by
  every shard of a run and by no other run (:func:`run_id`);
- per backend (``framework.caffe2.backend.type``):

  - ``none``: nothing more; one Worker only;
  - ``redis``: ``REDIS_HOST`` and ``REDIS_PORT`` (``redisPort``, default 6379), the
    external store of Caffe2's ``RedisStoreHandler``;
  - ``nfs``: ``NFS_PATH``, the shared directory of Caffe2's ``FileStoreHandler``;
  - ``gloo``: Worker 0 is the rendezvous, reached the way ``torch.distributed`` (where
    Caffe2 and gloo live now) expects it: ``MASTER_ADDR`` and ``MASTER_PORT`` (Worker 0's
    Service and port), ``WORLD_SIZE`` (= ``NUM_SHARDS``) and ``RANK`` (= ``SHARD_ID``);

- ``CAFFE2_CONFIG``, the seed operator's JSON with the backend, shard and run added::

      {"cluster": {"worker": ["j-worker-0.ns.svc:2222", ...]},
       "task": {"type": "worker", "index": 0},
       "backend": {"type": "gloo", "masterAddr": "j-worker-0.ns.svc", "masterPort": 2222},
       "shard": {"id": 0, "count": 2},
       "runId": "..."}

  (``backend`` carries ``redisHost``/``redisPort`` for redis and ``nfsPath`` for nfs).

Without a backend, one Worker uses ``none`` and more use ``gloo``: the seed defaulted to
redis, which cannot work without a host. The API already requires ``redisHost`` for redis
and ``nfsPath`` for nfs; this module adds the rule that needs the replica count: ``none``
runs a single Worker.

Port 2222 (``caffe2-port``). Success: every Worker succeeds. Restarts: ``ExitCode`` with
scope ``Job``: the shards all-reduce every step, and a rendezvous is one-shot, so a lone
restarted shard can neither rejoin nor let the others continue; a user bug (exit code
1-127) fails the job at once. Each restart is a new run with a ``RUN_ID`` of its own.
"""

import json
from collections.abc import Iterator, Mapping

from kubetrain.api import v1beta1, validation
from kubetrain.operator.frameworks import framework

__all__ = ["DEFAULT_REDIS_PORT", "FRAMEWORK", "backend", "caffe2_config", "run_id"]

WORKER = "Worker"
DEFAULT_REDIS_PORT = 6379
_TYPE_PATH = ("spec", "framework", "caffe2", "backend", "type")


def backend(spec: v1beta1.TrainingJobSpec) -> v1beta1.Caffe2Backend:
    """The job's backend, or the default: ``none`` for one Worker, ``gloo`` for more."""
    options = spec.framework.caffe2 or v1beta1.Caffe2Options()
    if options.backend is not None:
        return options.backend
    shards = sum(s.replicas for k, s in spec.replica_specs.items() if k.lower() == WORKER.lower())
    kind = v1beta1.Caffe2BackendType.NONE if shards <= 1 else v1beta1.Caffe2BackendType.GLOO
    return v1beta1.Caffe2Backend(type=kind)


def run_id(job: v1beta1.TrainingJob) -> str:
    """``{runtimeId}-{uid}-{attempt}``: unique to one run of one job, shared by its shards.

    Caffe2 prefixes every rendezvous key with the run id, in a store that outlives the run: a
    redis server (``RedisStoreHandler`` sets each key once, with SETNX, and refuses a key that
    exists: "perhaps you reused a run ID") or an NFS directory (``FileStoreHandler``, where a
    key left behind is read at once as this run's: a shard would dial the old run's peers).
    So the id must change whenever a new rendezvous happens:

    - the job's UID, because a job deleted and created again under its name is a new run
      (the name alone, or ``spec.runtimeId`` alone, would come back); the name stands in only
      where the job has no UID yet (``kubetrain render`` of a file);
    - the attempt, because every restart is a new rendezvous (the scope is the whole job: all
      shards start again). It is :data:`~.framework.ATTEMPT`, which the kubelet fills in when
      the container starts, not the attempt as rendered: a pod restarted in place keeps the
      env it was made with, and a shard made again beside shards restarted in place must
      agree with them on the id.

    ``spec.runtimeId``, which the old Caffe2Job's ``RuntimeID`` becomes, comes first, so the
    id still shows it.
    """
    parts = (job.spec.runtime_id, job.metadata.uid or job.metadata.name, framework.ATTEMPT)
    return "-".join(p for p in parts if p)


def _backend_fields(world: framework.World, chosen: v1beta1.Caffe2Backend) -> dict[str, object]:
    match chosen.type:
        case v1beta1.Caffe2BackendType.REDIS:
            return {"redisHost": chosen.redis_host, "redisPort": chosen.redis_port or DEFAULT_REDIS_PORT}
        case v1beta1.Caffe2BackendType.NFS:
            return {"nfsPath": chosen.nfs_path}
        case v1beta1.Caffe2BackendType.GLOO:
            master = world.first(WORKER)
            assert master is not None, "validation guarantees a Worker"
            return {"masterAddr": master.host, "masterPort": master.port}
        case _:
            return {}


def caffe2_config(world: framework.World, replica: framework.Replica) -> dict[str, object]:
    chosen = backend(world.job.spec)
    return {
        "cluster": {"worker": [f"{r.host}:{r.port}" for r in world.of_type(WORKER)]},
        "task": {"type": replica.type.lower(), "index": replica.index},
        "backend": {"type": chosen.type.value, **_backend_fields(world, chosen)},
        "shard": {"id": replica.index, "count": len(world.of_type(WORKER))},
        "runId": run_id(world.job),
    }


def _env(world: framework.World, replica: framework.Replica) -> Mapping[str, str]:
    shards = str(len(world.of_type(WORKER)))
    env = {"SHARD_ID": str(replica.index), "NUM_SHARDS": shards, "RUN_ID": run_id(world.job)}
    chosen = backend(world.job.spec)
    fields = _backend_fields(world, chosen)
    match chosen.type:
        case v1beta1.Caffe2BackendType.REDIS:
            env.update({"REDIS_HOST": str(fields["redisHost"]), "REDIS_PORT": str(fields["redisPort"])})
        case v1beta1.Caffe2BackendType.NFS:
            env["NFS_PATH"] = str(fields["nfsPath"])
        case v1beta1.Caffe2BackendType.GLOO:
            env.update(
                {
                    "MASTER_ADDR": str(fields["masterAddr"]),
                    "MASTER_PORT": str(fields["masterPort"]),
                    "WORLD_SIZE": shards,
                    "RANK": str(replica.index),
                }
            )
    env["CAFFE2_CONFIG"] = json.dumps(caffe2_config(world, replica), separators=(",", ":"))
    return env


def _rules(job: v1beta1.TrainingJob) -> Iterator[validation.FieldError]:
    shards = sum(s.replicas for k, s in job.spec.replica_specs.items() if k.lower() == WORKER.lower())
    if backend(job.spec).type is v1beta1.Caffe2BackendType.NONE and shards > 1:
        yield validation.FieldError(
            path=_TYPE_PATH,
            message=f"the none backend runs a single Worker, not {shards}; use redis, nfs or gloo",
        )


FRAMEWORK = framework.Framework(
    name="caffe2",
    replica_types=(framework.ReplicaType(name=WORKER, min_replicas=1),),
    container="caffe2",
    port=2222,
    port_name="caffe2-port",
    restart_policy=v1beta1.RestartPolicy.EXIT_CODE,
    # Shards all-reduce every step and meet once: one lost shard stops the whole run.
    restart_scope=v1beta1.RestartScope.JOB,
    success=framework.every(WORKER),
    env=_env,
    extra_rules=_rules,
)
