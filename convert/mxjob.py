"""MXJob, the first MXNet operators' kind, as a TrainingJob of framework ``mxnet``.

Three forks of the TfJob operator served it, each with its own defaults:

| apiVersion | kind | port field (default) | type default | decided by (default) |
| --- | --- | --- | --- | --- |
| ``mxnet.mlkube.io/v1beta1``, in its examples ``mlkube.io/v1beta1`` (deepinsight) | ``MxJob`` | ``PsRootPort`` (9091) | WORKER | SCHEDULER in ``dist``, WORKER in ``local`` |
| ``fioravanzo.org/v1alpha1`` (the MXNet operator README) | ``MXJob`` | ``mxPort`` (9000) | SCHEDULER | ``terminationPolicy.chief`` (SCHEDULER 0) |
| ``kubeflow.org/v1alpha1`` | ``MXJob`` | ``PsRootPort`` (9091) | WORKER | ``terminationPolicy.chief`` (WORKER 0) |

A document lists its replicas (``replicas``, ``template``, the port, ``mxReplicaType``:
``SCHEDULER``, ``SERVER`` or ``WORKER``), which become ``replicaSpecs.Scheduler``,
``Server`` and ``Worker``. ``jobMode`` (``local`` or ``dist``) becomes
``framework.options.mode``; the deepinsight fork required it, the others did not have it
(kubeflow's own example still set it), so without it a lone WORKER is ``local`` and
anything else ``dist``. The port is carried over wherever it is not kubetrain's 9091, so
``DMLC_PS_ROOT_PORT`` keeps the value the old operator gave. The replica that decided the
job becomes an explicit ``successPolicy``: kubetrain's MXNet waits for every Worker
otherwise. ``cleanupPodPolicy`` (kubeflow, default ``All``) becomes
``runPolicy.cleanPodPolicy``; ``schedulerName`` goes into every template.

Restarts keep kubetrain's MXNet default, ``ExitCode``: the classification the old
operators documented (0 success, 1-127 permanent, 128-255 retryable) for the replica that
decided the job, now for every replica; they restarted the servers and workers whenever
they exited, which is a note (:func:`_restarts`), and so is a template's own restart policy.
``PS_VERBOSE=2``, which the README's operator set, is a note.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable, Iterator
from typing import Any

import attrs

from kubetrain.api import v1beta1, validation
from kubetrain.convert import kinds, reader, seeds
from kubetrain.operator.frameworks import mxnet

__all__ = ["KINDS"]

TYPES = ("SCHEDULER", "SERVER", "WORKER")
_FW = mxnet.FRAMEWORK
_RESTART = _FW.restart_policy
_WHY = f"restartPolicy (kubetrain's MXNet default, {seeds.EXIT_CODE})"

Chief = tuple[str, int]


def _by_mode(mode: str) -> Chief:
    return ("Scheduler", 0) if mode == mxnet.DIST else ("Worker", 0)


@attrs.frozen(kw_only=True)
class _Version:
    api_versions: tuple[str, ...]  # the first is the one its operator registered
    kind: str
    port_key: str
    default_port: int
    default_type: str
    default_chief: Callable[[str], Chief]  # by mode
    termination: bool  # terminationPolicy
    requires_mode: bool
    mx_image: bool
    cleanup: bool  # cleanupPodPolicy (default All)
    scheduler_name: bool
    ps_verbose: bool  # set PS_VERBOSE=2 in every mxnet container


_DEEPINSIGHT = _Version(
    api_versions=("mxnet.mlkube.io/v1beta1", "mlkube.io/v1beta1"),
    kind="MxJob",
    port_key="PsRootPort",
    default_port=9091,
    default_type="WORKER",
    default_chief=_by_mode,
    termination=False,
    requires_mode=True,
    mx_image=False,
    cleanup=False,
    scheduler_name=False,
    ps_verbose=False,
)
_FIORAVANZO = _Version(
    api_versions=("fioravanzo.org/v1alpha1",),
    kind="MXJob",
    port_key="mxPort",
    default_port=9000,
    default_type="SCHEDULER",
    default_chief=lambda _mode: ("Scheduler", 0),
    termination=True,
    requires_mode=False,
    mx_image=True,
    cleanup=False,
    scheduler_name=True,
    ps_verbose=True,
)
_KUBEFLOW = _Version(
    api_versions=("kubeflow.org/v1alpha1",),
    kind="MXJob",
    port_key="PsRootPort",
    default_port=9091,
    default_type="WORKER",
    default_chief=lambda _mode: ("Worker", 0),
    termination=True,
    requires_mode=False,
    mx_image=True,
    cleanup=True,
    scheduler_name=True,
    ps_verbose=False,
)


# --- MXJob -> TrainingJob -----------------------------------------------------------------


def _to_job(version: _Version, doc: reader.Reader) -> dict[str, Any]:
    meta, spec = kinds.opening(doc)
    if spec is None:
        return {}
    runtime = seeds.runtime_id(spec)
    mode = spec.text("jobMode", choices=mxnet.MODES, default=None, ignore_case=True)
    if mode is None and version.requires_mode and not spec.has("jobMode"):
        spec.error("required: local or dist", "jobMode")
    if version.mx_image:
        spec.drop("not carried over: every replica names its image in its template", "mxImage")
    scheduler = spec.text("schedulerName") if version.scheduler_name else None
    cleanup = (
        spec.text("cleanupPodPolicy", choices=("All", "Running", "None"), default="All", ignore_case=True)
        if version.cleanup
        else None
    )
    if not spec.has("replicaSpecs"):
        spec.error("required: the list of replicas", "replicaSpecs")
    replicas = seeds.unique(spec, (_replica(version, r, scheduler) for r in spec.items("replicaSpecs")))
    if mode is None:
        lone_worker = set(replicas) == {"Worker"} and replicas["Worker"].replicas == 1
        mode = mxnet.LOCAL if lone_worker else mxnet.DIST
    chief = seeds.chief(spec, replicas) if version.termination else None
    if chief is None:
        chief = version.default_chief(mode)
        if chief[0] not in replicas and not spec.findings.errors:
            spec.error(
                f"the job's outcome follows {seeds.old_type(chief[0])} {chief[1]}, which this job lacks",
                "replicaSpecs",
            )
    _restarts(spec, replicas, chief)
    if version.ps_verbose and replicas:
        spec.note(
            "PS_VERBOSE=2, which this operator set in every mxnet container, is not set: "
            "add it to a template's env for ps-lite's verbose logs",
            "replicaSpecs",
        )
    spec.finish()
    return seeds.document(
        metadata=meta,
        framework={"name": _FW.name, "options": {"mode": mode}},
        runtime_id=runtime,
        replicas=replicas,
        run_policy={"cleanPodPolicy": cleanup} if cleanup is not None else None,
        success=chief,
    )


def _restarts(spec: reader.Reader, replicas: dict[str, seeds.Replica], chief: Chief) -> None:
    """Say that servers and workers no longer restart whatever their exit code.

    The MXJob operators, forks of the TfJob operator, classified the exit code of the replica
    that decides the job and restarted the SERVERs and WORKERs whenever they exited (the MXNet
    operator's README: "Servers are automatically restarted if they exit", "Workers are
    automatically restarted if they exit"). kubetrain's MXNet default, ``ExitCode`` for one pod,
    fails the job at a 1-127 from any of them; ``restartPolicy: OnFailure`` on those types is the
    old behaviour, with a budget.
    """
    restarted = [
        f"{seeds.old_type(key)}s"
        + (
            f" (but {seeds.old_type(chief[0])} {chief[1]}, whose exit decided the job)"
            if key == chief[0]
            else ""
        )
        for key in ("Server", "Worker")
        if key in replicas and replicas[key].replicas > (1 if key == chief[0] else 0)
    ]
    if not restarted:
        return
    types = " and ".join(k for k in ("Server", "Worker") if k in replicas)
    spec.note(
        f"the operator restarted the {' and '.join(restarted)} whenever they exited, whatever the exit code; "
        f"kubetrain's MXNet default ({_RESTART.value}, one pod) fails the job when any exits with 1-127, and "
        f"recreates the pod for 128-255 or when it is lost. For the old behaviour set restartPolicy: OnFailure "
        f"on {types}: the kubelet then restarts a failed one whatever its exit code, each restart spending "
        f"runPolicy.backoffLimit (default 6)",
        "replicaSpecs",
    )


def _replica(version: _Version, r: reader.Reader, scheduler: str | None) -> seeds.Replica | None:
    old = (
        r.text("mxReplicaType", choices=TYPES, default=version.default_type, ignore_case=True)
        or version.default_type
    )
    count = r.integer("replicas", default=1, minimum=0) or 0
    port = r.integer(version.port_key, default=version.default_port, minimum=1, maximum=65535)
    if old == "SCHEDULER" and count != 1:
        r.error(f"a SCHEDULER runs exactly 1 replica, not {count}", "replicas")
    template = seeds.template(r, container=_FW.container, restart_policy=_RESTART, why=_WHY)
    if template is None and not r.has("template"):
        r.error(f"required: the pod template of the {old} replicas", "template")
    r.finish()
    if template is None:
        return None
    if scheduler is not None:
        template["spec"]["schedulerName"] = scheduler
    return seeds.Replica(
        type=seeds.hub_type(old),
        path=r.path,
        replicas=count,
        port=None if port == _FW.port else port,
        template=template,
    )


# --- TrainingJob -> MXJob -----------------------------------------------------------------


def _from_job(version: _Version, job: v1beta1.TrainingJob) -> dict[str, Any]:
    seeds.raise_if(_inexpressible(version, job))
    spec: dict[str, Any] = {}
    if job.spec.runtime_id is not None:
        spec["RuntimeId"] = job.spec.runtime_id
    spec["jobMode"] = mxnet.mode(job.spec)
    items = []
    for key in _FW.order(job.spec.replica_specs):
        r = job.spec.replica_specs[key]
        item: dict[str, Any] = {"replicas": r.replicas, "mxReplicaType": seeds.old_type(key)}
        port = r.port or _FW.port
        if port != version.default_port:
            item[version.port_key] = port
        item["template"] = copy.deepcopy(dict(r.template))
        items.append(item)
    spec["replicaSpecs"] = items
    chief = seeds.single_target(job, _FW)
    if version.termination and chief is not None:
        spec["terminationPolicy"] = {
            "chief": {"replicaName": seeds.old_type(chief[0]), "replicaIndex": chief[1]}
        }
    if version.cleanup:
        spec["cleanupPodPolicy"] = (
            job.spec.run_policy.clean_pod_policy or v1beta1.CleanPodPolicy.RUNNING
        ).value
    # apiVersion first, as people write it; document.back sets the one asked for.
    return {
        "apiVersion": version.api_versions[0],
        "kind": version.kind,
        "metadata": seeds.metadata_of(job),
        "spec": spec,
    }


def _inexpressible(version: _Version, job: v1beta1.TrainingJob) -> Iterator[validation.FieldError]:
    name = f"{version.api_versions[0]} {version.kind}"
    yield from seeds.expressible(
        job,
        name,
        _FW,
        types=("Scheduler", "Server", "Worker"),
        run_policy=("cleanPodPolicy",) if version.cleanup else (),
        restart_policies=(_RESTART,),
    )
    options = dict(job.spec.framework.options or {})
    options.pop("mode", None)
    if options:
        yield validation.FieldError(
            path=("spec", "framework", "options", next(iter(options))), message=f"{name} has jobMode only"
        )
    chief = seeds.single_target(job, _FW)
    if chief is None:
        yield validation.FieldError(
            path=("spec", "successPolicy"), message=f"{name} decides the job by one replica only"
        )
    elif not version.termination and chief != version.default_chief(mxnet.mode(job.spec)):
        expected = version.default_chief(mxnet.mode(job.spec))
        yield validation.FieldError(
            path=("spec", "successPolicy"),
            message=f"{name} decides a {mxnet.mode(job.spec)} job by {seeds.old_type(expected[0])} {expected[1]}",
        )


def _kind(version: _Version) -> kinds.Kind:
    return kinds.Kind(
        kind=version.kind,
        api_versions=version.api_versions,
        to_job=functools.partial(_to_job, version),
        from_job=functools.partial(_from_job, version),
        spellings=tuple({"MxJob", "MXJob"} - {version.kind}),
    )


KINDS: tuple[kinds.Kind, ...] = tuple(_kind(v) for v in (_DEEPINSIGHT, _FIORAVANZO, _KUBEFLOW))
