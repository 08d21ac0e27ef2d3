"""MXNet: ps-lite parameter-server training with a Scheduler, Servers and Workers.

Two modes, chosen by ``framework.options.mode`` (default ``dist``), as in the first
MXJob operator:

- ``dist``: exactly one ``Scheduler``, at least one ``Server`` and at least one ``Worker``;
- ``local``: a single ``Worker`` and nothing else (``kvstore=local`` on one pod).

The Scheduler is the master replica type. It accepts 0-1 replicas in the type table so
that ``local`` mode validates; ``dist`` mode then requires it. Every main container
(``mxnet``) gets what ps-lite reads:

- ``DMLC_ROLE``: ``scheduler``, ``server`` or ``worker``;
- ``DMLC_PS_ROOT_URI``, ``DMLC_PS_ROOT_PORT``: the Scheduler's host and *its* port (only
  in ``dist`` mode: ``local`` has no scheduler);
- ``DMLC_NUM_SERVER``, ``DMLC_NUM_WORKER``: the Servers and Workers of the job;
- ``DMLC_USE_KUBERNETES=1``: ps-lite's scheduler then binds 0.0.0.0 instead of resolving
  its own Service name, which fails before the Service has an endpoint;
- ``DMLC_WORKER_ID``, on Workers only: the Worker's index, which BytePS reads (as Kubeflow's
  MXJob sets it);
- ``MX_CONFIG``, the JSON of Kubeflow's MXJob::

      {"cluster": {"scheduler": [{"url": "j-scheduler-0.ns.svc", "port": 9091}],
                   "server": [...], "worker": [...]},
       "labels": {"server": "..."},
       "task": {"type": "worker", "index": 0}}

  ``labels`` holds, per replica type, the ``tuner-server-key`` annotation of its pod
  template (MXNet's TVM auto-tuning reads it) and is left out when no template has one.

Port 9091 (``mxjob-port``). Success: every Worker succeeds — in both modes the workers
do the training, and ps-lite's scheduler and servers only stop once the workers
finalize. Restarts: ``ExitCode`` with scope ``Pod``, like TensorFlow's parameter
servers: the servers hold the model, and a recreated worker or server keeps its name and
port, which ps-lite's scheduler re-admits in a dead node's place when heartbeats are on
(``PS_HEARTBEAT_INTERVAL``, ``PS_HEARTBEAT_TIMEOUT``); a user bug (exit code 1-127) fails
the job at once instead of looping. ps-lite cannot survive the loss of its Scheduler:
add a failure rule with ``restartScope: Job`` for it, or set the job's scope, when
heartbeats are off.
"""

import json
from collections.abc import Iterator, Mapping

from kubetrain.api import v1beta1, validation
from kubetrain.operator.frameworks import framework

__all__ = ["DIST", "FRAMEWORK", "LOCAL", "MODES", "mode", "mx_config"]

SCHEDULER = "Scheduler"
SERVER = "Server"
WORKER = "Worker"
LOCAL = "local"
DIST = "dist"
MODES = (LOCAL, DIST)
# The pod-template annotation Kubeflow copies into MX_CONFIG's labels (TVM auto-tuning).
TUNER_KEY = "tuner-server-key"
_MODE_PATH = ("spec", "framework", "options", "mode")


def mode(spec: v1beta1.TrainingJobSpec) -> str:
    """The job's mode as written (``dist`` when unset); :func:`validate` checks it."""
    options = spec.framework.options or {}
    return str(options.get("mode", DIST))


def mx_config(world: framework.World, replica: framework.Replica) -> dict[str, object]:
    cluster: dict[str, list[dict[str, object]]] = {}
    labels: dict[str, str] = {}
    for r in world.replicas:
        cluster.setdefault(r.type.lower(), []).append({"url": r.host, "port": r.port})
    for key, spec in world.job.spec.replica_specs.items():
        annotations = (spec.template.get("metadata") or {}).get("annotations") or {}
        if TUNER_KEY in annotations:
            labels[key.lower()] = str(annotations[TUNER_KEY])
    config: dict[str, object] = {"cluster": cluster}
    if labels:
        config["labels"] = labels
    config["task"] = {"type": replica.type.lower(), "index": replica.index}
    return config


def _env(world: framework.World, replica: framework.Replica) -> Mapping[str, str]:
    env = {"DMLC_ROLE": replica.type.lower()}
    scheduler = world.first(SCHEDULER)
    if scheduler is not None:
        env["DMLC_PS_ROOT_URI"] = scheduler.host
        env["DMLC_PS_ROOT_PORT"] = str(scheduler.port)
    env.update(
        {
            "DMLC_NUM_SERVER": str(len(world.of_type(SERVER))),
            "DMLC_NUM_WORKER": str(len(world.of_type(WORKER))),
            "DMLC_USE_KUBERNETES": "1",
            "MX_CONFIG": json.dumps(mx_config(world, replica), separators=(",", ":")),
        }
    )
    if replica.type.lower() == WORKER.lower():
        env["DMLC_WORKER_ID"] = str(replica.index)
    return env


def _rules(job: v1beta1.TrainingJob) -> Iterator[validation.FieldError]:
    chosen = mode(job.spec)
    if chosen not in MODES:
        yield validation.FieldError(
            path=_MODE_PATH, message=f"mxnet mode must be local or dist, not {chosen!r}"
        )
        return
    counts = {k.lower(): (k, s.replicas) for k, s in job.spec.replica_specs.items()}
    if chosen == LOCAL:
        for name in (SCHEDULER, SERVER):
            key, n = counts.get(name.lower(), (name, 0))
            if n:
                yield validation.FieldError(
                    path=("spec", "replicaSpecs", key),
                    message=f"local mode runs a single Worker, not a {name}",
                )
        key, n = counts.get(WORKER.lower(), (WORKER, 0))
        if n != 1:
            yield validation.FieldError(
                path=("spec", "replicaSpecs", key, "replicas") if n else ("spec", "replicaSpecs"),
                message=f"local mode runs exactly 1 Worker, not {n}",
            )
        return
    for name in (SCHEDULER, SERVER, WORKER):
        if not counts.get(name.lower(), (name, 0))[1]:
            what = "exactly 1 Scheduler" if name == SCHEDULER else f"at least 1 {name}"
            yield validation.FieldError(
                path=("spec", "replicaSpecs"), message=f"mxnet dist mode needs {what}"
            )


FRAMEWORK = framework.Framework(
    name="mxnet",
    replica_types=(
        framework.ReplicaType(name=SCHEDULER, max_replicas=1, master=True),
        framework.ReplicaType(name=SERVER),
        framework.ReplicaType(name=WORKER),
    ),
    container="mxnet",
    port=9091,
    port_name="mxjob-port",
    restart_policy=v1beta1.RestartPolicy.EXIT_CODE,
    # Servers keep the model; a recreated worker or server rejoins under its old name.
    restart_scope=v1beta1.RestartScope.POD,
    success=framework.every(WORKER),
    env=_env,
    extra_rules=_rules,
)
