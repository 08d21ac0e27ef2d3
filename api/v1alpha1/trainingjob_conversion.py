"""v1alpha1 <-> v1beta1 (the hub), without losing a field either way.

Everything v1alpha1 can say, the hub can hold, so a v1alpha1 object survives a trip
through storage unchanged. The hub says more — failure rules, budgets, restart
policies, gang scheduling, a status with history — so converting a hub object *down*
keeps what v1alpha1 cannot hold in the annotation :data:`CONVERSION_DATA`, and
converting *up* again restores it. The rule for that merge: whatever v1alpha1 can
express comes from the v1alpha1 object (a user may have edited it); the annotation only
fills in the rest. This annotation never reaches a hub object: converting up consumes it.
A v1alpha1 object whose annotation is not conversion data is refused with a
:class:`~kubetrain.api.validation.ValidationError` naming the annotation; only a write
in v1alpha1 can bring one, never a stored (hub) object.

This module converts *meaning*, typed object to typed object. The *form* an object was
written in — v1alpha1's list order, explicit defaults — is kept at the unstructured
layer by :mod:`kubetrain.api.exact`, in an annotation of its own that an object born
v1alpha1 does carry into the hub when it was not written in canonical form.

Replica types are UPPERCASE in v1alpha1 and CamelCase keys in the hub: MASTER <->
Master, PS <-> PS, and so on (:func:`hub_type_name`). A hub spelling that the default
mapping would not give back (``MyWorker``) is kept in the annotation too.
"""

import json
from collections.abc import Callable, Mapping
from typing import TypeVar

import attrs

from kubetrain.api import conversion, naming, validation, wire
from kubetrain.api import v1beta1 as hub
from kubetrain.api.v1alpha1 import trainingjob_types as alpha

CONVERSION_DATA = naming.PREFIX + "conversion-data"

T = TypeVar("T")
Names = Callable[[str], str]

_HUB_NAMES = {
    "MASTER": "Master",
    "CHIEF": "Chief",
    "WORKER": "Worker",
    "PS": "PS",
    "EVALUATOR": "Evaluator",
    "SCHEDULER": "Scheduler",
    "SERVER": "Server",
    "LAUNCHER": "Launcher",
}


def hub_type_name(replica_type: str) -> str:
    """The hub's default spelling of a v1alpha1 replica type."""
    return _HUB_NAMES.get(replica_type, replica_type.capitalize())


@attrs.frozen(kw_only=True)
class Stash:
    """What a hub object says that its v1alpha1 form cannot."""

    replica_type_names: Mapping[str, str] = attrs.field(factory=dict)
    restart_policies: Mapping[str, hub.RestartPolicy] = attrs.field(factory=dict)
    framework: hub.FrameworkSpec | None = None
    run_policy: hub.RunPolicy | None = None
    success_policy: hub.SuccessPolicy | None = None
    failure_policy: hub.FailurePolicy | None = None
    network: hub.NetworkSpec | None = None
    progress: hub.ProgressSpec | None = None
    managed_by: str | None = None
    runtime_ref: hub.RuntimeRef | None = None
    trainer: hub.Trainer | None = None
    status: hub.TrainingJobStatus | None = None


# --- v1alpha1 -> hub ----------------------------------------------------------------------


def convert_to(src: alpha.TrainingJob) -> hub.TrainingJob:
    """ConvertTo: the hub form of a v1alpha1 object, restoring what the annotation kept."""
    annotations = dict(src.metadata.annotations)
    stash = _read_stash(annotations.pop(CONVERSION_DATA, None))

    def names(replica_type: str) -> str:
        return stash.replica_type_names.get(replica_type, hub_type_name(replica_type))

    return hub.TrainingJob(
        metadata=attrs.evolve(src.metadata, annotations=annotations),
        spec=_spec_to(src.spec, stash, names),
        status=_status_to(src.status, stash.status, names),
    )


def _read_stash(raw: str | None) -> Stash:
    if raw is None:
        return Stash()
    try:
        return wire.structure(json.loads(raw), Stash)
    except (ValueError, TypeError, RecursionError) as e:
        # A ValidationError, so that the webhook reports it with the annotation named.
        raise validation.ValidationError.at(
            ("metadata", "annotations", CONVERSION_DATA), f"not valid conversion data: {e}"
        ) from None


def _spec_to(spec: alpha.TrainingJobSpec, stash: Stash, names: Names) -> hub.TrainingJobSpec:
    return hub.TrainingJobSpec(
        framework=_framework_to(spec, stash.framework),
        runtime_id=spec.runtime_id,
        managed_by=stash.managed_by,
        replica_specs={
            names(r.replica_type): hub.ReplicaSpec(
                replicas=r.replicas,
                restart_policy=stash.restart_policies.get(names(r.replica_type)),
                port=r.port,
                template=r.template,
            )
            for r in spec.replica_specs
        },
        run_policy=attrs.evolve(
            stash.run_policy or hub.RunPolicy(), clean_pod_policy=spec.cleanup_pod_policy
        ),
        success_policy=_success_to(spec.termination_policy, names) or stash.success_policy,
        failure_policy=stash.failure_policy or hub.FailurePolicy(),
        tensorboard=spec.tensorboard,
        # Kubeflow's host names, written out: a job created as v1alpha1 is not given PerJob.
        network=stash.network or hub.NetworkSpec(host_names=hub.HostNames.PER_REPLICA),
        progress=stash.progress,
        runtime_ref=stash.runtime_ref,
        trainer=stash.trainer,
    )


def _framework_to(spec: alpha.TrainingJobSpec, stashed: hub.FrameworkSpec | None) -> hub.FrameworkSpec:
    # Options kept for another framework no longer apply once the framework was changed.
    base = (
        stashed
        if stashed is not None and stashed.name == spec.framework
        else hub.FrameworkSpec(name=spec.framework)
    )
    if spec.backend is None:
        if base.caffe2 is None or base.caffe2.backend is None:
            return base
        return attrs.evolve(base, caffe2=attrs.evolve(base.caffe2, backend=None))
    backend = hub.Caffe2Backend(
        type=spec.backend.type,
        redis_host=spec.backend.redis_host,
        redis_port=spec.backend.redis_port,
        nfs_path=spec.backend.nfs_path,
    )
    return attrs.evolve(base, caffe2=attrs.evolve(base.caffe2 or hub.Caffe2Options(), backend=backend))


def _success_to(policy: alpha.TerminationPolicy | None, names: Names) -> hub.SuccessPolicy | None:
    if policy is None or policy.chief is None:
        return None
    chief = policy.chief
    return hub.SuccessPolicy(
        targets=(hub.SuccessTarget(replica_type=names(chief.replica_name), index=chief.replica_index),)
    )


def _status_to(
    status: alpha.TrainingJobStatus, stashed: hub.TrainingJobStatus | None, names: Names
) -> hub.TrainingJobStatus:
    base = stashed or hub.TrainingJobStatus()
    replica_statuses = {}
    for r in status.replica_statuses:
        key = names(r.replica_type)
        kept = base.replica_statuses.get(key, hub.ReplicaStatus())
        replica_statuses[key] = attrs.evolve(kept, active=r.active, succeeded=r.succeeded, failed=r.failed)
    return attrs.evolve(
        base,
        state=status.state,
        conditions=status.conditions,
        replica_statuses=replica_statuses,
        start_time=status.start_time,
        completion_time=status.completion_time,
    )


# --- hub -> v1alpha1 ----------------------------------------------------------------------


def convert_from(src: hub.TrainingJob) -> alpha.TrainingJob:
    """ConvertFrom: the v1alpha1 form of a hub object, plus the annotation for the rest."""
    spec = src.spec
    out_spec = alpha.TrainingJobSpec(
        framework=spec.framework.name,
        runtime_id=spec.runtime_id,
        replica_specs=tuple(
            alpha.ReplicaSpec(replica_type=t.upper(), replicas=r.replicas, port=r.port, template=r.template)
            for t, r in spec.replica_specs.items()
        ),
        termination_policy=_termination_from(spec.success_policy),
        cleanup_pod_policy=spec.run_policy.clean_pod_policy,
        backend=_backend_from(spec.framework),
        tensorboard=spec.tensorboard,
    )
    out_status = alpha.TrainingJobStatus(
        state=src.status.state,
        conditions=src.status.conditions,
        replica_statuses=tuple(
            alpha.ReplicaStatus(
                replica_type=t.upper(), active=r.active, succeeded=r.succeeded, failed=r.failed
            )
            for t, r in src.status.replica_statuses.items()
        ),
        start_time=src.status.start_time,
        completion_time=src.status.completion_time,
    )
    stash = _stash(src, out_spec, out_status)
    annotations = {k: v for k, v in src.metadata.annotations.items() if k != CONVERSION_DATA}
    if stash != Stash():
        annotations[CONVERSION_DATA] = json.dumps(
            wire.unstructure(stash), sort_keys=True, separators=(",", ":")
        )
    return alpha.TrainingJob(
        metadata=attrs.evolve(src.metadata, annotations=annotations), spec=out_spec, status=out_status
    )


def _termination_from(policy: hub.SuccessPolicy | None) -> alpha.TerminationPolicy | None:
    # Only a policy that a chief says exactly; anything else stays in the annotation.
    if policy is None or policy.operator is not hub.SuccessOperator.ALL or len(policy.targets) != 1:
        return None
    target = policy.targets[0]
    if target.index is None:
        return None
    chief = alpha.ChiefSpec(replica_name=target.replica_type.upper(), replica_index=target.index)
    return alpha.TerminationPolicy(chief=chief)


def _backend_from(framework: hub.FrameworkSpec) -> alpha.Backend | None:
    if framework.caffe2 is None or framework.caffe2.backend is None:
        return None
    b = framework.caffe2.backend
    return alpha.Backend(
        type=b.type,
        redis_host=b.redis_host,
        redis_port=b.redis_port,
        nfs_path=b.nfs_path,
    )


def _stash(src: hub.TrainingJob, spec: alpha.TrainingJobSpec, status: alpha.TrainingJobStatus) -> Stash:
    """Keep every part of ``src`` that the v1alpha1 form alone would not give back."""
    hub_names = {t.upper(): t for t in (*src.spec.replica_specs, *src.status.replica_statuses)}
    renamed = {a: h for a, h in hub_names.items() if hub_type_name(a) != h}

    def names(replica_type: str) -> str:
        return hub_names.get(replica_type, hub_type_name(replica_type))

    rebuilt_spec = _spec_to(spec, Stash(), names)
    return Stash(
        replica_type_names=renamed,
        restart_policies={
            t: r.restart_policy for t, r in src.spec.replica_specs.items() if r.restart_policy is not None
        },
        framework=_unless_equal(src.spec.framework, rebuilt_spec.framework),
        run_policy=_unless_equal(src.spec.run_policy, rebuilt_spec.run_policy),
        success_policy=_unless_equal(src.spec.success_policy, rebuilt_spec.success_policy),
        failure_policy=_unless_equal(src.spec.failure_policy, rebuilt_spec.failure_policy),
        network=_unless_equal(src.spec.network, rebuilt_spec.network),
        progress=src.spec.progress,
        managed_by=src.spec.managed_by,
        runtime_ref=src.spec.runtime_ref,
        trainer=src.spec.trainer,
        status=_unless_equal(src.status, _status_to(status, None, names)),
    )


def _unless_equal(original: T, rebuilt: T) -> T | None:
    """``original`` when the v1alpha1 form alone would not give it back, else nothing."""
    return None if original == rebuilt else original


SPOKE = conversion.Spoke(type=alpha.TrainingJob, to_hub=convert_to, from_hub=convert_from)

__all__ = ["CONVERSION_DATA", "SPOKE", "Stash", "convert_from", "convert_to", "hub_type_name"]
