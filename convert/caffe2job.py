"""Caffe2Job (``kubeflow.org/v1alpha1``) as a TrainingJob of framework ``caffe2``.

A Caffe2Job has one set of replicas, all workers: ``replicaSpecs {replicas, template}``
(an object, not a list) becomes ``replicaSpecs.Worker``. ``backendSpecs {backendType,
redisHost, redisPort, nfsPath}`` becomes ``framework.caffe2.backend``; the first
releases spelled the type alone as ``Backend``, which is read too. ``RuntimeID`` becomes
``spec.runtimeId``, so ``RUN_ID`` keeps its value.

What changes, and is said so:

- Without a backend the operator chose ``none`` for one worker and ``redis`` for more —
  redis without a host, which could not work. kubetrain chooses ``gloo`` for more than
  one worker (Worker 0 the rendezvous); that is a note.
- The operator set ``SHARD_ID``, ``NUM_SHARDS``, ``RUN_ID``, the backend's variables and
  ``CAFFE2_CONFIG`` in every container; kubetrain sets them in the ``caffe2`` container
  only, so a template with other containers gets a note.
- It created no Services, so its examples used ``hostNetwork: true`` for the workers to
  reach each other; kubetrain gives every worker a headless Service, and a template with
  host networking gets a note saying it is no longer needed. Kept, it still works: such
  pods get ``dnsPolicy: ClusterFirstWithHostNet`` (:mod:`kubetrain.operator.render`), so
  the Service names in ``CAFFE2_CONFIG`` and ``REDIS_HOST`` resolve.
- ``terminationPolicy`` was defaulted and never read: the job succeeded when every worker
  had, as kubetrain's Caffe2 decides too. A chief is a note.
- Restarts: the operator never restarted anything. kubetrain's Caffe2 default is
  ``ExitCode`` for the whole job: a signal (128-255) or a lost pod restarts every shard.
  A template restart policy the pods would not get is a note.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

from kubetrain.api import v1beta1, validation
from kubetrain.convert import kinds, reader, seeds
from kubetrain.operator.frameworks import caffe2

__all__ = ["KINDS"]

API_VERSION = "kubeflow.org/v1alpha1"
KIND = "Caffe2Job"
BACKENDS = tuple(t.value for t in v1beta1.Caffe2BackendType)
_FW = caffe2.FRAMEWORK
_RESTART = _FW.restart_policy
_WHY = f"restartPolicy (kubetrain's Caffe2 default, {seeds.EXIT_CODE}; a restart restarts every shard)"


# --- Caffe2Job -> TrainingJob -------------------------------------------------------------


def _to_job(doc: reader.Reader) -> dict[str, Any]:
    meta, spec = kinds.opening(doc)
    if spec is None:
        return {}
    runtime = seeds.runtime_id(spec)
    backend = _backend(spec)
    workers = spec.child("replicaSpecs")
    if workers is None:
        spec.error("required: the workers' replicas and template", "replicaSpecs")
        spec.finish()
        return {}
    replica = _workers(workers, str(meta.get("name") or "{job}"))
    spec.drop(
        "not carried over: the operator never read it; the job succeeded once every worker had, "
        "as kubetrain's Caffe2 decides too",
        "terminationPolicy",
    )
    spec.finish()
    if replica is None:
        return {}
    if backend is None and replica.replicas > 1:
        spec.note(
            "absent: the operator chose redis (with no host) for more than one worker; kubetrain "
            "chooses gloo, with Worker 0 the rendezvous (MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK)",
            "backendSpecs",
        )
    if backend is not None and backend["type"] == "none" and replica.replicas > 1:
        spec.error(f"the none backend runs a single worker, not {replica.replicas}", "backendSpecs")
    framework: dict[str, Any] = {"name": _FW.name}
    if backend is not None:
        framework["caffe2"] = {"backend": backend}
    return seeds.document(
        metadata=meta, framework=framework, runtime_id=runtime, replicas={"Worker": replica}
    )


def _backend(spec: reader.Reader) -> dict[str, Any] | None:
    """``backendSpecs``, or the first releases' ``Backend`` type alone."""
    if spec.has("backendSpecs") and spec.has("backend"):
        spec.error("backendSpecs and backend are the same setting; keep backendSpecs")
    if spec.has("backend"):
        kind = spec.text("backend", choices=BACKENDS, default=None, ignore_case=True)
        return None if kind is None else {"type": kind}
    b = spec.child("backendSpecs")
    if b is None:
        return None
    kind = b.text("backendType", choices=BACKENDS, default=None, ignore_case=True)
    host = b.text("redisHost")
    port = b.integer("redisPort", default=None, minimum=0, maximum=65535)
    path = b.text("nfsPath")
    b.finish()
    if kind is None:
        if not b.has("backendType"):
            b.error(f"required: one of {', '.join(BACKENDS)}", "backendType")
        return None
    if kind == "redis" and host is None:
        b.error("required for the redis backend", "redisHost")
    if kind == "nfs" and path is None:
        b.error("required for the nfs backend", "nfsPath")
    out: dict[str, Any] = {"type": kind}
    # The Go zero values ("" and 0) mean unset; fields of another backend were never read.
    if kind == "redis":
        out["redisHost"] = host
        if port:
            out["redisPort"] = port
    if kind == "nfs":
        out["nfsPath"] = path
    for field, value, used in (
        ("redisHost", host, kind == "redis"),
        ("redisPort", port, kind == "redis"),
        ("nfsPath", path, kind == "nfs"),
    ):
        if value and not used:
            b.note(f"not carried over: the {kind} backend does not use it", field)
    return out


def _workers(r: reader.Reader, job: str) -> seeds.Replica | None:
    count = r.integer("replicas", default=1, minimum=1) or 1
    template = seeds.template(r, container=_FW.container, restart_policy=_RESTART, why=_WHY)
    if template is None and not r.has("template"):
        r.error("required: the workers' pod template", "template")
    r.finish()
    if template is None:
        return None
    spec = template["spec"]
    path = r.where("template")
    others = [c.get("name") for c in spec["containers"] if c.get("name") != _FW.container]
    if others and any(c.get("name") == _FW.container for c in spec["containers"]):
        r.findings.note(
            (*path, "spec", "containers"),
            f"only the caffe2 container gets SHARD_ID, NUM_SHARDS, RUN_ID, the backend's variables and "
            f"CAFFE2_CONFIG; the operator set them in every container (here also {', '.join(others)})",
        )
    if spec.get("hostNetwork") is True:
        r.findings.note(
            (*path, "spec", "hostNetwork"),
            "kept, though no longer needed: the operator created no Services, so workers met over the "
            f"hosts' network; kubetrain gives each worker a headless Service ({job}-worker-{{i}}), which "
            "resolves there too (the pods get dnsPolicy ClusterFirstWithHostNet), and on the host network "
            f"its port {_FW.port} is the node's, so two workers cannot share a node",
        )
    return seeds.Replica(type="Worker", path=r.path, replicas=count, port=None, template=template)


# --- TrainingJob -> Caffe2Job -------------------------------------------------------------


def _from_job(job: v1beta1.TrainingJob) -> dict[str, Any]:
    seeds.raise_if(_inexpressible(job))
    spec: dict[str, Any] = {}
    if job.spec.runtime_id is not None:
        spec["RuntimeID"] = job.spec.runtime_id
    options = job.spec.framework.caffe2
    if options is not None and options.backend is not None:
        b = options.backend
        backend: dict[str, Any] = {"backendType": b.type.value}
        for key, value in (("redisHost", b.redis_host), ("redisPort", b.redis_port), ("nfsPath", b.nfs_path)):
            if value is not None:
                backend[key] = value
        spec["backendSpecs"] = backend
    workers = job.spec.replica_specs["Worker"]
    spec["replicaSpecs"] = {"replicas": workers.replicas, "template": copy.deepcopy(dict(workers.template))}
    # apiVersion first, as people write it; document.back sets the one asked for.
    return {"apiVersion": API_VERSION, "kind": KIND, "metadata": seeds.metadata_of(job), "spec": spec}


def _inexpressible(job: v1beta1.TrainingJob) -> Iterator[validation.FieldError]:
    name = f"{API_VERSION} {KIND}"
    yield from seeds.expressible(job, name, _FW, types=("Worker",), restart_policies=(_RESTART,), ports=False)
    if "Worker" not in job.spec.replica_specs:
        yield validation.FieldError(path=("spec", "replicaSpecs"), message=f"{name} runs Workers only")
        return
    policy = job.spec.success_policy
    if policy is not None and policy != _FW.success(job.spec):
        yield validation.FieldError(
            path=("spec", "successPolicy"), message=f"{name} succeeds once every worker has, only"
        )


KINDS: tuple[kinds.Kind, ...] = (
    kinds.Kind(kind=KIND, api_versions=(API_VERSION,), to_job=_to_job, from_job=_from_job),
)
