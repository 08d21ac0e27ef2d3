"""PyTorchJob — plain ``torch.distributed``, torchrun and elastic — as a TrainingJob, and back.

Master and Workers map one to one; ``nprocPerNode`` becomes ``framework.pytorch``'s, and
where the job leaves it out, Kubeflow's default ``auto`` is written out (kubetrain's own
default would count the GPUs a pod requests). ``elasticPolicy`` becomes
``framework.pytorch.elastic`` with Kubeflow's defaults filled in — each bound from the
other, both from the Workers — and ``rdzvConf``'s ``{key, value}`` list a map. kubetrain
has no field for Kubeflow's ``rdzvHost`` and ``rdzvPort``: the endpoint they named is put
in every replica's env as ``PET_RDZV_ENDPOINT``, which torchrun reads and kubetrain leaves
alone, and taken out again on the way back. ``metrics`` asked Kubeflow for a
HorizontalPodAutoscaler; a note says how to create it against the TrainingJob's scale
subresource.

Kubeflow's RANK was a pod's node rank, kubetrain's the global rank of the pod's first
process: where they differ (several processes per pod, and a Master) a note says so.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from typing import Any

from kubetrain.api import v1beta1
from kubetrain.convert import kinds, kubeflowjob, reader
from kubetrain.operator.frameworks import framework as fw_contract

__all__ = ["KINDS", "PYTORCHJOB", "RDZV_ENDPOINT"]

# torchrun reads its --rdzv-endpoint from here, and kubetrain's env leaves a variable the
# template sets alone: where Kubeflow's rdzvHost and rdzvPort go.
RDZV_ENDPOINT = "PET_RDZV_ENDPOINT"


def _pytorchjob(doc: reader.Reader) -> dict[str, Any]:
    r = kubeflowjob.begin(doc, PYTORCHJOB)
    nproc = _nproc(r.spec)
    options: dict[str, Any] = {}
    elastic = r.spec.child("elasticPolicy")
    if elastic is not None:
        policy, elastic_nproc = _elastic(r, elastic)
        options["elastic"] = policy
        if elastic_nproc is not None and nproc is not None and elastic_nproc != nproc:
            elastic.error(
                f"differs from spec.nprocPerNode ({nproc!r}), its current spelling; keep one", "nProcPerNode"
            )
        nproc = nproc or elastic_nproc
    # Kubeflow's default, written out: kubetrain's would count the GPUs requested instead.
    options["nprocPerNode"] = nproc or "auto"
    r.framework["pytorch"] = options
    if "Master" in r.replicas:
        _rank_notes(r, options["nprocPerNode"])
    kubeflowjob.env_notes(r, dict.fromkeys(r.replicas, _kubeflow_env(r, options.get("elastic"))), {})
    return r.finish()


def _kubeflow_env(r: kubeflowjob.Reading, elastic: Mapping[str, Any] | None) -> tuple[str, ...]:
    """What Kubeflow set in every replica (pkg/controller.v1/pytorch/envvar.go, master.go, elastic.go)."""
    env: tuple[str, ...] = ("PYTHONUNBUFFERED", "PET_NPROC_PER_NODE", "PET_NNODES")
    if "Master" in r.replicas:
        env += ("MASTER_ADDR", "MASTER_PORT", "PET_MASTER_ADDR", "PET_MASTER_PORT", "WORLD_SIZE", "RANK")
        env += ("PET_NODE_RANK",)
    if elastic is not None:
        env += ("PET_RDZV_ENDPOINT", "PET_RDZV_BACKEND")
        given = {"maxRestarts": "PET_MAX_RESTARTS", "rdzvId": "PET_RDZV_ID", "rdzvConf": "PET_RDZV_CONF"}
        env += tuple(var for key, var in given.items() if key in elastic)
    return env


def _rank_notes(r: kubeflowjob.Reading, nproc: str) -> None:
    # Kubeflow's RANK was the pod's node rank, its WORLD_SIZE pods x nprocPerNode (1 unless a number).
    if nproc.isdigit() and int(nproc) > 1:
        r.spec.note(
            f"RANK is the global rank of a pod's first process (node rank x {nproc}); Kubeflow's RANK was "
            "the node rank (still PET_NODE_RANK)",
            "nprocPerNode",
        )
    elif not nproc.isdigit():
        for t in r.replicas:
            gpus = fw_contract.gpus_requested(r.main_container(t) or {})
            if gpus > 1:
                r.note(
                    r.paths[t],
                    f"WORLD_SIZE and RANK count the {gpus} GPUs a {t} requests as its processes "
                    f"(nprocPerNode {nproc!r}); Kubeflow counted one per pod",
                )


def _nproc(spec: reader.Reader) -> str | None:
    value = spec.take("nprocPerNode")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        spec.error(f"expected auto, cpu, gpu or a number, got {value!r}", "nprocPerNode")
        return None
    return str(value)


def _elastic(r: kubeflowjob.Reading, e: reader.Reader) -> tuple[dict[str, Any], str | None]:
    workers = r.count("Worker")
    if "Master" in r.replicas:
        e.error(
            "kubetrain's elastic jobs have Workers only (the rendezvous assigns ranks): "
            "make the Master a Worker, or drop elasticPolicy"
        )
    low = e.integer("minReplicas", minimum=1)
    high = e.integer("maxReplicas", minimum=1)
    policy: dict[str, Any] = {
        # Kubeflow's defaults: each bound the other, both the Workers.
        "minReplicas": low or high or workers,
        "maxReplicas": high or low or workers,
        "rdzvBackend": e.text("rdzvBackend", choices=("c10d", "etcd", "etcd-v2")) or "c10d",
    }
    rdzv_id = e.text("rdzvId")
    if rdzv_id:
        policy["rdzvId"] = rdzv_id
    conf = _rdzv_conf(e)
    if conf:
        policy["rdzvConf"] = conf
    max_restarts = e.integer("maxRestarts", minimum=0)
    if max_restarts is not None:
        policy["maxRestarts"] = max_restarts
    _rdzv_endpoint(r, e)
    if e.truth("standalone"):
        e.note(
            "not carried over: kubetrain sets no PET_STANDALONE; every Worker joins the job's rendezvous",
            "standalone",
        )
    nproc = e.integer("nProcPerNode", minimum=1)
    metrics = e.take("metrics")
    if metrics:
        e.note(
            "not carried over: create a HorizontalPodAutoscaler with these metrics whose scaleTargetRef "
            f"is the TrainingJob (apiVersion {kinds.API_VERSION}, kind TrainingJob, its scale subresource "
            "sets spec.replicaSpecs.Worker.replicas); Kubeflow created it for the job",
            "metrics",
        )
    e.finish()
    return policy, None if nproc is None else str(nproc)


def _rdzv_conf(e: reader.Reader) -> dict[str, str]:
    conf: dict[str, str] = {}
    for item in e.items("rdzvConf"):
        key = item.text("key")
        value = item.text("value")
        item.finish()
        if not key:
            item.error("required: a key", "key")
        elif key in conf:
            item.error(f"{key} is set twice", "key")
        else:
            conf[key] = value or ""
    return conf


def _rdzv_endpoint(r: kubeflowjob.Reading, e: reader.Reader) -> None:
    host = e.text("rdzvHost")
    port = e.integer("rdzvPort", minimum=1, maximum=65535)
    if host is None and port is None:
        return
    if host is None:
        name = r.metadata.get("name")
        if not name:
            e.error("Kubeflow's rendezvous host is {job}-worker-0: needs metadata.name", "rdzvPort")
            return
        host = f"{name}-worker-0"
    worker = r.replicas.get("Worker", {})
    endpoint = f"{host}:{port or worker.get('port') or r.flavour.fw.port}"
    for t in r.replicas:
        main = r.main_container(t)
        if main is not None:
            env = main.setdefault("env", [])
            if isinstance(env, list) and not any(
                isinstance(v, Mapping) and v.get("name") == RDZV_ENDPOINT for v in env
            ):
                env.append({"name": RDZV_ENDPOINT, "value": endpoint})
    e.note(
        f"carried over as {RDZV_ENDPOINT}={endpoint} in every replica's env: kubetrain's own endpoint is "
        "Worker 0 at its port",
        "rdzvHost" if e.has("rdzvHost") else "rdzvPort",
    )


def _write_pytorchjob(job: v1beta1.TrainingJob, out: dict[str, Any], problems: kubeflowjob.Problems) -> None:
    options = job.spec.framework.pytorch
    spec = out["spec"]
    if options is None:
        return
    if options.nproc_per_node is not None:
        spec["nprocPerNode"] = options.nproc_per_node
    elastic = options.elastic
    if elastic is None:
        return
    policy: dict[str, Any] = {
        "minReplicas": elastic.min_replicas,
        "maxReplicas": elastic.max_replicas,
        "rdzvBackend": elastic.rdzv_backend,
    }
    if elastic.rdzv_backend == "static":
        problems.append(
            kubeflowjob.problem(
                ("framework", "pytorch", "elastic", "rdzvBackend"), "Kubeflow has c10d, etcd and etcd-v2"
            )
        )
    if elastic.rdzv_id is not None:
        policy["rdzvId"] = elastic.rdzv_id
    if elastic.rdzv_conf:
        policy["rdzvConf"] = [{"key": k, "value": v} for k, v in elastic.rdzv_conf.items()]
    if elastic.max_restarts is not None:
        policy["maxRestarts"] = elastic.max_restarts
    endpoint = _lift_endpoint(spec[PYTORCHJOB.specs_field])
    if endpoint is not None:
        host, _, port = endpoint.rpartition(":")
        policy["rdzvHost"] = host
        policy["rdzvPort"] = int(port)
    spec["elasticPolicy"] = policy


def _lift_endpoint(replicas: Mapping[str, Any]) -> str | None:
    """The PET_RDZV_ENDPOINT every replica's env sets alike, taken out of the env; else None."""
    fw = PYTORCHJOB.fw
    found: list[tuple[list[dict[str, Any]], dict[str, Any]]] = []
    for rs in replicas.values():
        env = kubeflowjob.main_env(rs["template"], fw) or []
        entry = next((v for v in env if isinstance(v, dict) and v.get("name") == RDZV_ENDPOINT), None)
        if (
            entry is None
            or set(entry) != {"name", "value"}
            or not re.fullmatch(r"[^:\s]+:[0-9]{1,5}", str(entry["value"]))
        ):
            return None
        found.append((env, entry))
    values = {str(entry["value"]) for _, entry in found}
    if len(values) != 1:
        return None
    for env, entry in found:
        env.remove(entry)
    for rs in replicas.values():
        main = fw_contract.main_container(rs["template"], fw.container)
        if main is not None and main.get("env") == []:
            del main["env"]
    return values.pop()


PYTORCHJOB = kubeflowjob.Flavour(
    kind="PyTorchJob",
    framework="pytorch",
    specs_field="pytorchReplicaSpecs",
    types=("Master", "Worker"),
    restart_policy=v1beta1.RestartPolicy.ON_FAILURE,
    port_name="pytorchjob-port",
)


KINDS: tuple[kinds.Kind, ...] = (
    kinds.Kind(
        kind="PyTorchJob",
        api_versions=(f"{kubeflowjob.GROUP}/v1",),
        to_job=_pytorchjob,
        from_job=functools.partial(kubeflowjob.write_kind, PYTORCHJOB, _write_pytorchjob),
    ),
    # pytorch-operator's v1beta2: the same map, the run policy in the spec itself.
    kinds.Kind(kind="PyTorchJob", api_versions=(f"{kubeflowjob.GROUP}/v1beta2",), to_job=_pytorchjob),
)
