"""PyTorch: a Master and Workers, for plain ``torch.distributed`` and for torchrun.

Every pod is one node. Node rank 0 is the Master (or Worker 0 when there is no Master);
workers follow. Each main container (``pytorch``) gets:

- ``MASTER_ADDR``, ``MASTER_PORT``: the rank-0 node's Service and port;
- ``WORLD_SIZE``: nodes x processes per node; ``RANK``: the global rank of this node's
  first process (node rank x processes per node) — exact for one process per pod, and
  torchrun replaces both for the processes it starts;
- torchrun's ``PET_MASTER_ADDR``, ``PET_MASTER_PORT``, ``PET_NNODES``, ``PET_NODE_RANK``,
  ``PET_NPROC_PER_NODE``, and ``PET_MONITOR_INTERVAL`` (:data:`MONITOR_INTERVAL`);
- with ``framework.pytorch.elastic``: ``PET_NNODES=min:max``, ``PET_RDZV_BACKEND``,
  ``PET_RDZV_ENDPOINT``, ``PET_RDZV_ID``, ``PET_RDZV_CONF``, ``PET_MAX_RESTARTS`` and
  ``TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1`` (so nodes can join later rounds), and no
  ``PET_NODE_RANK`` (the rendezvous assigns ranks).

Processes per node come from ``nprocPerNode``, else the GPUs the container requests,
else 1. DDP hangs when one rank dies, so a restart recreates the whole job by default.

An elastic job is Workers only, between ``minReplicas`` and ``maxReplicas``, and its worker
count is what the TrainingJob's ``scale`` subresource changes (``kubectl scale``, a
HorizontalPodAutoscaler). torchrun re-forms the world when a node joins or leaves, so a
failed worker is replaced alone (restart scope ``Pod``) while the others carry on. A node
leaving costs the remaining agents one of their ``maxRestarts`` (a node joining costs
nothing), hence a generous default of :data:`ELASTIC_MAX_RESTARTS`.
"""

from collections.abc import Iterator, Mapping

from kubetrain.api import v1beta1, validation
from kubetrain.operator.frameworks import framework

__all__ = ["ELASTIC_MAX_RESTARTS", "FRAMEWORK", "MONITOR_INTERVAL", "WORKER", "nproc_per_node"]

# torchrun --max-restarts of an elastic job that does not say: each scale-down or lost node
# spends one on every remaining agent, and a long job is scaled many times.
ELASTIC_MAX_RESTARTS = 100
# How often torchrun looks at its workers, in seconds: how soon a rank's exit ends its container,
# the first delay of every restart. torch 2.4 made it 0.1 (it was 5: pytorch/pytorch#124692, at
# 0.4% of a core); older torchruns get the same.
MONITOR_INTERVAL = "0.1"
# The replica type the scale subresource reads and writes (spec.replicaSpecs.Worker.replicas).
WORKER = "Worker"


def nproc_per_node(world: framework.World, replica: framework.Replica) -> str:
    options = world.job.spec.framework.pytorch or v1beta1.PyTorchOptions()
    if options.nproc_per_node is not None:
        return options.nproc_per_node
    container = framework.main_container(replica.spec.template, FRAMEWORK.container) or {}
    return str(framework.gpus_requested(container) or 1)


def _env(world: framework.World, replica: framework.Replica) -> Mapping[str, str]:
    master = world.first("Master", "Worker")
    assert master is not None, "validation guarantees a Master or a Worker"
    nodes = world.replicas
    node_rank = nodes.index(replica)
    nproc = nproc_per_node(world, replica)
    # auto/gpu/cpu are resolved by torchrun itself; GPUs are the best guess for the sizes here.
    container = framework.main_container(replica.spec.template, FRAMEWORK.container) or {}
    per_node = int(nproc) if nproc.isdigit() else framework.gpus_requested(container) or 1
    env = {
        "MASTER_ADDR": master.host,
        "MASTER_PORT": str(master.port),
        "WORLD_SIZE": str(len(nodes) * per_node),
        "RANK": str(node_rank * per_node),
        "PET_MASTER_ADDR": master.host,
        "PET_MASTER_PORT": str(master.port),
        "PET_NNODES": str(len(nodes)),
        "PET_NODE_RANK": str(node_rank),
        "PET_NPROC_PER_NODE": nproc,
        "PET_MONITOR_INTERVAL": MONITOR_INTERVAL,
        "PYTHONUNBUFFERED": "1",
    }
    elastic = world.job.spec.framework.elastic
    if elastic is not None:
        env.update(
            {
                "PET_NNODES": f"{elastic.min_replicas}:{elastic.max_replicas}",
                "PET_RDZV_BACKEND": elastic.rdzv_backend,
                # The pod's own host name, not its Service's DNS name: torchrun serves the
                # rendezvous store only where the endpoint names the machine it runs on, which
                # it tells by the host name (an IP literal aside), and Worker 0's is its pod name.
                # The others find it through the search path, as `{pod}.{namespace}.svc`.
                "PET_RDZV_ENDPOINT": f"{master.hostname}:{master.port}",
                "PET_RDZV_ID": elastic.rdzv_id or world.job.metadata.uid or world.job.metadata.name or "",
            }
        )
        conf = dict(elastic.rdzv_conf)
        if world.machine is not None and "is_host" not in conf:
            # On one machine every agent's host name is the endpoint's, and each would race to
            # serve the store: Worker 0 serves it, as in a cluster (kubetrain run --local).
            conf["is_host"] = str(replica == master).lower()
        if conf:
            env["PET_RDZV_CONF"] = ",".join(f"{k}={v}" for k, v in sorted(conf.items()))
        restarts = ELASTIC_MAX_RESTARTS if elastic.max_restarts is None else elastic.max_restarts
        env["PET_MAX_RESTARTS"] = str(restarts)
        # torchrun shares the rendezvous store with the workers' and writes its address once, in
        # the first round; a node that joins a later round (a scale-up) would wait for it forever.
        env["TORCH_DISABLE_SHARE_RDZV_TCP_STORE"] = "1"
        # Ranks come from the rendezvous: torchrun ignores (and warns about) a fixed node rank.
        del env["PET_NODE_RANK"]
    return env


def _success(spec: v1beta1.TrainingJobSpec) -> v1beta1.SuccessPolicy:
    keys = {k.lower(): k for k in spec.replica_specs}
    if "master" in keys:
        return v1beta1.SuccessPolicy(targets=(v1beta1.SuccessTarget(replica_type=keys["master"], index=0),))
    return v1beta1.SuccessPolicy(targets=(v1beta1.SuccessTarget(replica_type=keys.get("worker", "Worker")),))


def _rules(job: v1beta1.TrainingJob) -> Iterator[validation.FieldError]:
    if not any(s.replicas > 0 for s in job.spec.replica_specs.values()):
        yield validation.FieldError(
            path=("spec", "replicaSpecs"), message="pytorch needs a Master or a Worker"
        )
    yield from _elastic_rules(job.spec)


def _elastic_rules(spec: v1beta1.TrainingJobSpec) -> Iterator[validation.FieldError]:
    # Its worker count between the bounds is a rule of the API (TrainingJobSpec), with a CEL
    # twin, since the scale subresource's writes reach no webhook.
    if spec.framework.elastic is None:
        return
    for key in spec.replica_specs:
        if key != WORKER:
            yield validation.FieldError(
                path=("spec", "replicaSpecs", key),
                message=f"an elastic job has only {WORKER} replicas (spelled so: the scale subresource "
                f"reads spec.replicaSpecs.{WORKER}.replicas), and the rendezvous assigns ranks",
            )


def _scope(spec: v1beta1.TrainingJobSpec) -> v1beta1.RestartScope:
    # The others re-form the world without the lost node, so only that pod is replaced.
    return v1beta1.RestartScope.JOB if spec.framework.elastic is None else v1beta1.RestartScope.POD


FRAMEWORK = framework.Framework(
    name="pytorch",
    replica_types=(
        framework.ReplicaType(name="Master", max_replicas=1, master=True),
        framework.ReplicaType(name="Worker"),
    ),
    container="pytorch",
    port=23456,
    port_name="pytorchjob-port",
    restart_policy=v1beta1.RestartPolicy.ON_FAILURE,
    restart_scope=v1beta1.RestartScope.JOB,
    success=_success,
    env=_env,
    extra_rules=_rules,
    scope=_scope,
)
