"""ChainerJob (``kubeflow.org/v1alpha1``) as a TrainingJob of framework ``chainer``.

A ChainerJob has one ``master`` (a batch Job that runs ``mpiexec``) and ``workerSets``, a
map of named, differently shaped groups of workers (StatefulSets). The master becomes
``replicaSpecs.Master`` and each set a replica type ``Worker`` + its name in CamelCase
(``ws0`` -> ``WorkerWs0``; a set named ``worker`` is ``Worker``), as kubetrain's
``chainer`` framework takes them. The master's ``activeDeadlineSeconds`` and
``backoffLimit`` become the job's ``runPolicy``. ``mpiConfig.slots`` — per host, default the
``chainer`` container's GPUs, else 1 — is what kubetrain computes by default; where every
host has the same explicit count it becomes ``framework.options.slotsPerWorker``, and a
count kubetrain cannot give a host is a note.

What changes, and is said so (kubetrain's ``chainer`` has none of it):

- The old ``mpiexec`` reached workers by ``kubectl exec``, through a script, a downloaded
  ``kubectl`` and a per-job Role; kubetrain's reaches them over ssh with a per-job key. The
  workers must run ``sshd`` instead of sleeping, and the paths under
  ``/kubeflow/chainer-operator`` (hostfile, ``kubexec.sh``, ``KUBECTL_DIR``) are gone: the
  hostfile is ``/etc/kubetrain/hostfile``, which ``OMPI_MCA_orte_default_hostfile`` names.
- The old operator put its ``OMPI_MCA_*`` variables into every container of every pod;
  kubetrain puts them into the master's ``chainer`` container.
- Restarts: the master's batch Job retried any failure up to ``backoffLimit`` and workers
  were restarted forever; kubetrain's ``ExitCode`` fails the job on exit codes 1-127 and
  restarts the whole MPI world otherwise, ``backoffLimit`` times.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator, Mapping
from typing import Any

from kubetrain.api import v1beta1, validation
from kubetrain.convert import kinds, reader, seeds
from kubetrain.operator.frameworks import framework as fw_contract
from kubetrain.operator.frameworks import mpi

__all__ = ["KINDS", "set_name", "worker_type"]

API_VERSION = "kubeflow.org/v1alpha1"
KIND = "ChainerJob"
WORKER = "Worker"
_FW = mpi.CHAINER
_RESTART = _FW.restart_policy
_WHY = f"restartPolicy (kubetrain's Chainer default, {seeds.EXIT_CODE}; a restart restarts every pod)"


def worker_type(name: str) -> str:
    """The replica type of worker set ``name``: ``ws0`` -> ``WorkerWs0``, ``worker`` -> ``Worker``."""
    if name.lower() == WORKER.lower():
        return WORKER
    return WORKER + "".join(p[:1].upper() + p[1:] for p in re.split(r"[^A-Za-z0-9]+", name) if p)


def set_name(replica_type: str) -> str:
    """The worker set a replica type came from: :func:`worker_type` read backwards."""
    rest = replica_type[len(WORKER) :]
    return rest.lower() if rest else WORKER.lower()


# --- ChainerJob -> TrainingJob ------------------------------------------------------------


def _to_job(doc: reader.Reader) -> dict[str, Any]:
    meta, spec = kinds.opening(doc)
    if spec is None:
        return {}
    spec.text("backend", choices=("mpi",), default="mpi", ignore_case=True)
    master_reader = spec.child("master")
    run_policy: dict[str, Any] = {}
    master: tuple[seeds.Replica, int | None] | None = None
    if master_reader is None:
        spec.error("required: the master that runs mpiexec", "master")
    else:
        master = _master(master_reader, run_policy)
    sets: dict[str, tuple[seeds.Replica, int | None]] = {}
    for name, r in spec.entries("workerSets"):
        found = _worker_set(name, r)
        if found is None:
            continue
        other = next((n for n, (s, _) in sets.items() if s.type == found[0].type), None)
        if other is not None:
            r.error(f"worker sets {other} and {name} both become replica type {found[0].type}; rename one")
            continue
        sets[name] = found
    spec.finish()
    if master is None:
        return {}
    hosts = [master[0], *(s for s, _ in sets.values())]
    options = _slots(spec, master, sets)
    if sets:
        job = str(meta.get("name") or "{job}")
        spec.note(
            f"workers are reached over ssh with a per-job key (Secret {job}-ssh at /root/.ssh), not by "
            "kubectl exec: run sshd in each set's chainer container (mkdir -p /run/sshd && exec "
            "/usr/sbin/sshd -De; the image needs openssh-server) instead of sleeping",
            "workerSets",
        )
        master_reader_path = (*spec.path, "master")
        spec.findings.note(
            master_reader_path,
            "mpiexec finds the hostfile at /etc/kubetrain/hostfile (OMPI_MCA_orte_default_hostfile) "
            "and starts ranks with OMPI_MCA_plm_rsh_agent=ssh; /kubeflow/chainer-operator (its hostfile, "
            "kubexec.sh, KUBECTL_DIR) is gone, and only the master's chainer container gets OMPI_MCA_*",
        )
    framework: dict[str, Any] = {"name": _FW.name}
    if options:
        framework["options"] = options
    return seeds.document(
        metadata=meta,
        framework=framework,
        runtime_id=None,
        replicas={r.type: r for r in hosts},
        run_policy=run_policy,
    )


def _master(r: reader.Reader, run_policy: dict[str, Any]) -> tuple[seeds.Replica, int | None] | None:
    deadline = r.integer("activeDeadlineSeconds", default=None, minimum=1)
    backoff = r.integer("backoffLimit", default=None, minimum=0)
    slots = _mpi_slots(r)
    template = seeds.template(r, container=_FW.container, restart_policy=_RESTART, why=_WHY)
    if template is None and not r.has("template"):
        r.error("required: the master's pod template", "template")
    r.finish()
    if deadline is not None:
        run_policy["activeDeadlineSeconds"] = deadline
    if backoff is not None:
        run_policy["backoffLimit"] = backoff
        r.note(
            "carried over as runPolicy.backoffLimit, the restarts of the whole job that user code may "
            "cause (exit codes 128-255); exit codes 1-127 now fail the job at once",
            "backoffLimit",
        )
    if template is None:
        return None
    return seeds.Replica(type="Master", path=r.path, replicas=1, port=None, template=template), slots


def _worker_set(name: str, r: reader.Reader) -> tuple[seeds.Replica, int | None] | None:
    count = r.integer("replicas", default=1, minimum=0) or 0
    slots = _mpi_slots(r)
    template = seeds.template(r, container=_FW.container, restart_policy=_RESTART, why=_WHY)
    if template is None and not r.has("template"):
        r.error(f"required: the pod template of worker set {name}", "template")
    r.finish()
    if template is None:
        return None
    if not re.search(r"[A-Za-z0-9]", name):
        r.error("a worker set's name needs a letter or digit: it names the set's replica type")
        return None
    return seeds.Replica(
        type=worker_type(name), path=r.path, replicas=count, port=None, template=template
    ), slots


def _mpi_slots(r: reader.Reader) -> int | None:
    config = r.child("mpiConfig")
    if config is None:
        return None
    slots = config.integer("slots", default=None, minimum=1)
    config.finish()
    return slots


def _slots(
    spec: reader.Reader,
    master: tuple[seeds.Replica, int | None],
    sets: Mapping[str, tuple[seeds.Replica, int | None]],
) -> dict[str, Any]:
    """``framework.options`` that give every host its old slots, noting any it cannot."""
    hosts = [master, *sets.values()]

    def default(replica: seeds.Replica) -> int:
        # The old default read nvidia.com/gpu; kubetrain's reads any */gpu limit.
        return (
            fw_contract.gpus_requested(fw_contract.main_container(replica.template, _FW.container) or {}) or 1
        )

    wanted = [(r, slots if slots is not None else default(r)) for r, slots in hosts]
    if all(n == default(r) for r, n in wanted):
        return {}
    counts = {n for _, n in wanted}
    if len(counts) == 1:
        return {mpi.SLOTS_OPTION: counts.pop()}
    for r, n in wanted:
        if n != default(r):
            spec.findings.note(
                (*r.path, "mpiConfig", "slots"),
                f"{n} not carried over: kubetrain gives every host the same slotsPerWorker, or its GPUs; "
                f"this one gets {default(r)}",
            )
    return {}


# --- TrainingJob -> ChainerJob ------------------------------------------------------------


def _from_job(job: v1beta1.TrainingJob) -> dict[str, Any]:
    seeds.raise_if(_inexpressible(job))
    spec: dict[str, Any] = {}
    sets = {k: r for k, r in job.spec.replica_specs.items() if k != "Master"}
    if sets:
        spec["backend"] = "mpi"
    options = job.spec.framework.options or {}
    slots = options.get(mpi.SLOTS_OPTION)
    master = job.spec.replica_specs["Master"]
    out_master: dict[str, Any] = {}
    if slots is not None:
        out_master["mpiConfig"] = {"slots": int(slots)}
    run = job.spec.run_policy
    if run.active_deadline_seconds is not None:
        out_master["activeDeadlineSeconds"] = run.active_deadline_seconds
    if run.backoff_limit is not None:
        out_master["backoffLimit"] = run.backoff_limit
    out_master["template"] = copy.deepcopy(dict(master.template))
    spec["master"] = out_master
    if sets:
        spec["workerSets"] = {}
        for key in sorted(sets):
            r = sets[key]
            entry: dict[str, Any] = {"replicas": r.replicas}
            if slots is not None:
                entry["mpiConfig"] = {"slots": int(slots)}
            entry["template"] = copy.deepcopy(dict(r.template))
            spec["workerSets"][set_name(key)] = entry
    # apiVersion first, as people write it; document.back sets the one asked for.
    return {"apiVersion": API_VERSION, "kind": KIND, "metadata": seeds.metadata_of(job), "spec": spec}


def _inexpressible(job: v1beta1.TrainingJob) -> Iterator[validation.FieldError]:
    name = f"{API_VERSION} {KIND}"
    yield from seeds.expressible(
        job,
        name,
        _FW,
        types=None,
        run_policy=("activeDeadlineSeconds", "backoffLimit"),
        restart_policies=(_RESTART,),
        ports=False,
    )
    for key in job.spec.replica_specs:
        if key == "Master":
            continue
        if not key.startswith(WORKER) or worker_type(set_name(key)) != key:
            yield validation.FieldError(
                path=("spec", "replicaSpecs", key),
                message=f"{name} has a master and worker sets; no set name converts back to {key} "
                f"(a set's type is Worker and its name in CamelCase, e.g. WorkerGpu)",
            )
    if job.spec.runtime_id is not None:
        yield validation.FieldError(path=("spec", "runtimeId"), message=f"{name} has no runtime id")
    if job.spec.replica_specs.get("Master") is None:
        yield validation.FieldError(path=("spec", "replicaSpecs"), message=f"{name} needs its master")
    options = dict(job.spec.framework.options or {})
    if options.pop(mpi.IMPLEMENTATION_OPTION, mpi.OPENMPI) != mpi.OPENMPI:
        yield validation.FieldError(
            path=("spec", "framework", "options", mpi.IMPLEMENTATION_OPTION), message=f"{name} runs Open MPI"
        )
    policy = job.spec.success_policy
    if policy is not None and policy != _FW.success(job.spec):
        yield validation.FieldError(
            path=("spec", "successPolicy"), message=f"{name} succeeds when its master does, only"
        )


KINDS: tuple[kinds.Kind, ...] = (
    kinds.Kind(kind=KIND, api_versions=(API_VERSION,), to_job=_to_job, from_job=_from_job),
)
