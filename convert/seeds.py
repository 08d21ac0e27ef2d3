"""What the first operators' kinds share, read and written one way for all four.

TfJob came first; MXJob forked it, Caffe2Job and ChainerJob followed its shape. So their
documents share pieces that are converted the same way whichever kind holds them:

- field values with the old defaults (:func:`integer`, :func:`text`, :func:`choice`), with an
  error at the input path when a value has the wrong type or lies out of range;
- replica types in upper case (``MASTER``, ``PS``), which become kubetrain's spelling
  (``Master``, ``PS``) by :func:`hub_type` and go back by :func:`old_type`;
- the pod template (:func:`template`), passed through whole — it is Kubernetes' to judge —
  except ``spec.restartPolicy``: kubetrain sets every pod's restart policy from the replica's
  ``restartPolicy``, so a template's own that would behave differently is a note; and resource
  names Kubernetes has removed since (``alpha.kubernetes.io/nvidia-gpu``), which become
  today's with a note (:func:`.kinds.rename_removed_resources`);
- ``RuntimeId``, which becomes ``spec.runtimeId`` (:func:`runtime_id`);
- ``terminationPolicy.chief``, the one replica whose exit decided the job (:func:`chief`),
  which becomes a ``successPolicy`` naming that replica.

Writing back (:func:`expressible`), these kinds say much less than a TrainingJob: no run
policy beyond what a kind names, no failure rules or budgets, restarts by exit code only.
Each thing a kind cannot hold is an error at its path in the TrainingJob.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import attrs

from kubetrain.api import podtemplate, schema, v1beta1, validation
from kubetrain.api.v1alpha1 import trainingjob_conversion
from kubetrain.convert import kinds, reader
from kubetrain.operator.frameworks import framework as fw_contract

__all__ = [
    "EXIT_CODE",
    "Replica",
    "chief",
    "document",
    "expressible",
    "hub_type",
    "metadata_of",
    "old_type",
    "raise_if",
    "runtime_id",
    "single_target",
    "success_policy",
    "template",
    "unique",
]

# What ExitCode does, for notes that explain a pod's restart policy.
EXIT_CODE = (
    "ExitCode: exit codes 1-127 fail the job at once, 128-255 and lost pods are restarted, "
    "as the old operator classified them"
)
_RUNTIME_ID = re.compile(r"^[a-z0-9]{1,16}$")


@attrs.frozen(kw_only=True)
class Replica:
    """One replica type of an old document, read: kubetrain's type key and the rest."""

    type: str  # kubetrain's spelling, e.g. "Master"
    path: validation.Path  # of the old document's entry, for notes and errors
    replicas: int
    port: int | None
    template: dict[str, Any]


def hub_type(old: str) -> str:
    """``MASTER`` -> ``Master``, ``PS`` -> ``PS``: the spelling kubetrain's v1alpha1 uses too."""
    return trainingjob_conversion.hub_type_name(old.upper())


def old_type(hub: str) -> str:
    return hub.upper()


# --- values -------------------------------------------------------------------------------


def runtime_id(spec: reader.Reader) -> str | None:
    """``RuntimeId``/``RuntimeID`` (Go's field name, without a JSON tag) as ``spec.runtimeId``."""
    value = spec.text("runtimeId")
    if value is not None and not _RUNTIME_ID.match(value):
        spec.error(
            f"{value!r} cannot be kubetrain's spec.runtimeId: use 1 to 16 lower-case letters or digits",
            "runtimeId",
        )
        return None
    return value


def template(
    r: reader.Reader, *, container: str, restart_policy: v1beta1.RestartPolicy, why: str
) -> dict[str, Any] | None:
    """The replica's pod template, checked where kubetrain reads it; ``None`` if absent or bad.

    ``restart_policy`` is the replica's in the TrainingJob, ``why`` what it does: a template
    restart policy that the pod would not get is a note that says so.
    """
    path = r.where("template")
    value = r.take("template")
    if value is None:
        return None
    if not isinstance(value, Mapping):
        r.findings.error(path, f"expected a pod template (an object), got {type(value).__name__}")
        return None
    out: dict[str, Any] = copy.deepcopy(dict(value))
    found = podtemplate.errors(out, at=path)
    for e in found:
        r.findings.error(e.path, e.message)
    if found:
        return None
    spec = out["spec"]
    pod = _pod_restart_policy(restart_policy)
    if "restartPolicy" in spec:
        given = spec.pop("restartPolicy")
        if given != pod:
            r.findings.note(
                (*path, "spec", "restartPolicy"),
                f"{given} not carried over: the pod gets restartPolicy {pod} from the replica's {why}",
            )
    kinds.rename_removed_resources(out, path, r.findings.note)
    if fw_contract.main_container(out, container) is None:
        r.findings.error(
            (*path, "spec", "containers"),
            f"name one container {container!r}, as the old operator required, or keep a single container",
        )
    return out


def _pod_restart_policy(policy: v1beta1.RestartPolicy) -> str:
    # ExitCode is decided by the operator, so the kubelet must not restart (render does the same).
    return "Never" if policy is v1beta1.RestartPolicy.EXIT_CODE else policy.value


def unique(spec: reader.Reader, replicas: Iterable[Replica | None]) -> dict[str, Replica]:
    """The replicas by type; a type listed twice is an error at its second entry."""
    out: dict[str, Replica] = {}
    for r in replicas:
        if r is None:
            continue
        if r.type in out:
            first = validation.format_path(out[r.type].path)
            spec.findings.error(r.path, f"{old_type(r.type)} is listed twice (first at {first}); merge them")
            continue
        out[r.type] = r
    return out


def chief(spec: reader.Reader, replicas: Mapping[str, Replica]) -> tuple[str, int] | None:
    """``terminationPolicy.chief``: the replica whose exit decided the job, as (type, index)."""
    policy = spec.child("terminationPolicy")
    if policy is None:
        return None
    found = policy.child("chief")
    policy.finish()
    if found is None:
        return None
    name = found.text("replicaName")
    index = found.integer("replicaIndex", default=0, minimum=0)
    found.finish()
    if name is None:
        found.error("required: the replica type whose exit decides the job", "replicaName")
        return None
    key = hub_type(name)
    r = replicas.get(key)
    if r is None or (index is not None and index >= r.replicas):
        found.error(f"no replica {name.upper()}[{index}] in this job", "replicaName")
        return None
    return key, index or 0


# --- the TrainingJob ----------------------------------------------------------------------


def success_policy(target: tuple[str, int]) -> dict[str, Any]:
    return {"targets": [{"replicaType": target[0], "index": target[1]}]}


def document(
    *,
    metadata: Mapping[str, Any],
    framework: Mapping[str, Any],
    runtime_id: str | None,
    replicas: Mapping[str, Replica],
    restart_policy: v1beta1.RestartPolicy | None = None,
    run_policy: Mapping[str, Any] | None = None,
    success: tuple[str, int] | None = None,
    tensorboard: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A v1beta1 TrainingJob as a plain document, leaving out what is unset."""
    specs: dict[str, Any] = {}
    for key, r in replicas.items():
        entry: dict[str, Any] = {"replicas": r.replicas}
        if restart_policy is not None:
            entry["restartPolicy"] = restart_policy.value
        if r.port is not None:
            entry["port"] = r.port
        entry["template"] = r.template
        specs[key] = entry
    spec: dict[str, Any] = {"framework": dict(framework)}
    if runtime_id is not None:
        spec["runtimeId"] = runtime_id
    spec["replicaSpecs"] = specs
    if run_policy:
        spec["runPolicy"] = dict(run_policy)
    if success is not None:
        spec["successPolicy"] = success_policy(success)
    if tensorboard is not None:
        spec["tensorboard"] = dict(tensorboard)
    return {"apiVersion": kinds.API_VERSION, "kind": v1beta1.KIND, "metadata": dict(metadata), "spec": spec}


# --- writing back -------------------------------------------------------------------------


def metadata_of(job: v1beta1.TrainingJob) -> dict[str, Any]:
    """The metadata an old document carries over: what :func:`kinds.metadata` reads."""
    m = job.metadata
    out: dict[str, Any] = {}
    for key, value in (
        ("name", m.name),
        ("generateName", m.generate_name),
        ("namespace", m.namespace),
        ("labels", dict(m.labels)),
        ("annotations", dict(m.annotations)),
        ("finalizers", list(m.finalizers)),
    ):
        if value:
            out[key] = value
    return out


def single_target(job: v1beta1.TrainingJob, fw: fw_contract.Framework) -> tuple[str, int] | None:
    """The one replica whose success decides the job, if the job's success policy names one."""
    policy = job.spec.success_policy or fw.success(job.spec)
    if len(policy.targets) != 1:
        return None
    target = policy.targets[0]
    spec = job.spec.replica_specs.get(target.replica_type)
    if spec is None:
        return None
    if target.index is not None:
        return target.replica_type, target.index
    return (target.replica_type, 0) if spec.replicas == 1 else None


def expressible(
    job: v1beta1.TrainingJob,
    kind: str,
    fw: fw_contract.Framework,
    *,
    types: Iterable[str] | None,
    run_policy: Iterable[str] = (),
    restart_policies: tuple[v1beta1.RestartPolicy, ...] = (v1beta1.RestartPolicy.EXIT_CODE,),
    ports: bool = True,
    tensorboard: bool = False,
) -> Iterator[validation.FieldError]:
    """Why ``kind`` cannot hold ``job``, as errors at paths in the TrainingJob.

    ``types`` are the replica types the kind has (kubetrain's spelling; ``None``: checked by
    the caller), ``run_policy`` the runPolicy fields it has (their wire names),
    ``restart_policies`` what its restarts can mean, ``ports`` whether it has a port per
    replica type, ``tensorboard`` whether it runs one.
    """
    spec = job.spec
    if spec.framework.name != fw.name:
        yield validation.FieldError(
            path=("spec", "framework", "name"), message=f"{kind} runs {fw.name}, not {spec.framework.name}"
        )
    allowed = tuple(types) if types is not None else None
    for key, r in spec.replica_specs.items():
        path = ("spec", "replicaSpecs", key)
        if allowed is not None and key not in allowed:
            names = ", ".join(old_type(t) for t in allowed)
            yield validation.FieldError(path=path, message=f"{kind} has replica types {names} only")
        policy = r.restart_policy or fw.restart_policy
        if policy not in restart_policies:
            yield validation.FieldError(
                path=(*path, "restartPolicy"),
                message=f"{kind} restarts by exit code only (ExitCode); {policy.value} cannot be written",
            )
        if not ports and r.port not in (None, fw.port):
            yield validation.FieldError(path=(*path, "port"), message=f"{kind} uses port {fw.port} only")
    for a in attrs.fields(v1beta1.RunPolicy):
        name = schema.wire_name(a)
        if name not in run_policy and getattr(spec.run_policy, a.name) != a.default:
            yield validation.FieldError(
                path=("spec", "runPolicy", name), message=f"{kind} has no field for runPolicy.{name}"
            )
    if spec.managed_by is not None:
        yield validation.FieldError(path=("spec", "managedBy"), message=f"{kind} has no field for it")
    if spec.network.host_names is v1beta1.HostNames.PER_JOB:
        yield validation.FieldError(
            path=("spec", "network", "hostNames"), message=f"{kind} names its hosts per replica"
        )
    if spec.failure_policy != v1beta1.FailurePolicy():
        yield validation.FieldError(
            path=("spec", "failurePolicy"),
            message=f"{kind} has no failure rules, budgets or restart scopes: it classified exit codes only",
        )
    if spec.tensorboard is not None and (not tensorboard or spec.tensorboard.resources is not None):
        what = "resources" if tensorboard else ""
        yield validation.FieldError(
            path=("spec", "tensorboard", *((what,) if what else ())),
            message=f"{kind} has no field for it",
        )


def raise_if(errors: Iterable[validation.FieldError]) -> None:
    found = list(errors)
    if found:
        raise kinds.Inexpressible(found)
