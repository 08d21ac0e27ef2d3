"""The validating admission webhook for TrainingJobs (``admission.k8s.io/v1``).

The CRD's schema and CEL rules check what one object says about itself. This webhook
adds what they cannot know:

- the framework's own rules — its replica types and counts, a Chief *or* a Master, a
  Caffe2 backend for the number of shards, MPI options, ... (from the framework registry,
  through :func:`kubetrain.operator.intake.decode`, as the reconciler, ``kubetrain render``,
  ``submit`` and ``convert`` check them);
- fields that must not change once the job exists: the framework, ``runtimeId``,
  ``managedBy``, ``runtimeRef`` and ``trainer``, the set of replica types, and the pod templates — unless the
  job is suspended (a queue such as Kueue may then adjust them, as it does for batch Jobs)
  or its pods are being refused (``ReplicaFailure``), so a user can mend what blocks them;
- ``spec.tensorboard``, which may be added to a job but not changed or removed: its
  Deployment is created once and never rewritten;
- what the job's objects would weigh: one larger than etcd stores, or more than a job may
  store together (:mod:`~kubetrain.operator.policies.footprint`), is refused with the figure;
- what the apiserver itself would say of the pods and Services the job renders, by a
  server-side dry run (:mod:`~kubetrain.operator.webhooks.dryrun`) — only when the spec is
  new or changed, and not for a new job made from a runtime (the expansion, :mod:`.expanding`,
  dry-ran it a moment before). An answer about the namespace (quota, a missing ServiceAccount) admits
  the job with a warning that ``kubectl`` prints;
- a deprecated field set (``runPolicy.managedBy``): admitted, with a warning naming its successor.

Every refusal names the field: ``spec.replicaSpecs.Launcher: tensorflow has no replica
type Launcher (allowed: Chief, Master, Worker, PS, Evaluator)``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import attrs

from kubetrain.api import scheme, v1beta1, validation
from kubetrain.operator import accelerators, conditions, intake
from kubetrain.operator.frameworks import framework as fw_contract
from kubetrain.operator.frameworks import registry
from kubetrain.operator.runtime import client
from kubetrain.operator.webhooks import dryrun

__all__ = ["Admission", "Reviewer", "answer", "errors", "response"]

API_VERSION = "admission.k8s.io/v1"
# Up to 6 dry runs per review (2 replica types): ~30 reviews a second, 60 at once.
DRY_RUN_QPS = 200.0
DRY_RUN_BURST = 400


class Reviewer:
    """What every admission webhook of the manager holds: a client of its own for reads and dry
    runs, the framework registry, and the operator's accelerator config (which dry runs apply)."""

    def __init__(
        self,
        api: client.Client,
        frameworks: registry.Registry | None = None,
        accelerator_config: accelerators.Config | None = None,
    ) -> None:
        # A dry run stores nothing, so it needs no leadership: every replica answers reviews.
        # Reviews come at the pace users create jobs, with a client-side limit of their own so
        # that they never wait behind the controller's writes (nor it behind them).
        self.api = api.ungated(qps=DRY_RUN_QPS, burst=DRY_RUN_BURST)
        self.frameworks = frameworks or registry.default()
        self.accelerators = accelerator_config


class Admission(Reviewer):
    """The webhook: the checks of :func:`errors`, then the apiserver's dry run."""

    async def review(self, body: Mapping[str, Any]) -> dict[str, Any]:
        request = body.get("request") or {}
        new, old = request.get("object"), request.get("oldObject")
        job, fw, found = _checked(new, old, self.frameworks)
        said = _deprecated(job)
        if job is None or fw is None or found or (old is not None and _same_spec(new, old)):
            return response(request, found, said)
        if (
            old is None
            and job.spec.runtime_ref is not None
            and (new or {}).get("apiVersion") == v1beta1.API_VERSION
        ):
            return response(request, found, said)  # made from a runtime: the expansion dry-ran it
        if not job.metadata.namespace:
            job = attrs.evolve(job, metadata=attrs.evolve(job.metadata, namespace=request.get("namespace")))
        verdict = await dryrun.check(self.api, job, fw, self.accelerators)
        return response(request, list(verdict.errors), (*said, *verdict.warnings))


def answer(body: Mapping[str, Any], frameworks: registry.Registry | None = None) -> dict[str, Any]:
    """The review's answer from the checks that need no apiserver."""
    request = body.get("request") or {}
    job, _, found = _checked(
        request.get("object"), request.get("oldObject"), frameworks or registry.default()
    )
    return response(request, found, _deprecated(job))


def errors(
    new: Mapping[str, Any] | None, old: Mapping[str, Any] | None, frameworks: registry.Registry | None = None
) -> list[validation.FieldError]:
    """Why ``new`` (replacing ``old``, on an update) must not be admitted, as far as it alone says."""
    return _checked(new, old, frameworks or registry.default())[2]


def _deprecated(job: v1beta1.TrainingJob | None) -> tuple[str, ...]:
    """Warnings for the deprecated fields ``job`` sets (kubectl prints them)."""
    if job is None or job.spec.run_policy.managed_by is None:
        return ()
    return ("spec.runPolicy.managedBy is deprecated: set spec.managedBy, the field MultiKueue reads",)


def response(
    request: Mapping[str, Any], found: list[validation.FieldError], warnings: tuple[str, ...] = ()
) -> dict[str, Any]:
    response: dict[str, Any] = {"uid": request.get("uid", ""), "allowed": not found}
    if found:
        response["status"] = {
            "code": 422,
            "reason": "Invalid",
            "message": "; ".join(str(e) for e in found),
        }
    if warnings:
        response["warnings"] = list(warnings)
    return {"apiVersion": API_VERSION, "kind": "AdmissionReview", "response": response}


def _checked(
    new: Mapping[str, Any] | None, old: Mapping[str, Any] | None, frameworks: registry.Registry
) -> tuple[v1beta1.TrainingJob | None, fw_contract.Framework | None, list[validation.FieldError]]:
    if new is None:
        return None, None, []  # DELETE: nothing to check
    try:
        decoded = intake.decode(new, frameworks, weigh=True)
        job, fw, found = decoded.job, decoded.framework, []
    except intake.Unrunnable as e:
        if e.framework is None:
            return None, None, list(e.errors)  # no framework of that name: nothing else to say
        job, fw, found = e.job, e.framework, list(e.errors)
    except validation.ValidationError as e:
        return None, None, list(e.errors)
    if old is not None:
        found += list(_changed_immutables(scheme.to_hub(scheme.decode(old)), job))
    return job, fw, found


def _same_spec(new: Mapping[str, Any] | None, old: Mapping[str, Any]) -> bool:
    return new is not None and new.get("spec") == old.get("spec")


def _changed_immutables(
    old: v1beta1.TrainingJob, new: v1beta1.TrainingJob
) -> Iterator[validation.FieldError]:
    a, b = old.spec, new.spec
    for path, before, after in (
        (("spec", "framework"), a.framework, b.framework),
        (("spec", "runtimeId"), a.runtime_id, b.runtime_id),
        # A job made from a runtime was expanded from these once, at creation; it is pinned.
        (("spec", "runtimeRef"), a.runtime_ref, b.runtime_ref),
        (("spec", "trainer"), a.trainer, b.trainer),
        (("spec", "managedBy"), a.manager, b.manager),
        (("spec", "replicaSpecs"), sorted(a.replica_specs), sorted(b.replica_specs)),
        # Pods already running know their peers by these names.
        (("spec", "network", "hostNames"), a.network.hosts, b.network.hosts),
    ):
        if before != after:
            yield validation.FieldError(path=path, message="field is immutable")
    if a.tensorboard is not None and a.tensorboard != b.tensorboard:
        yield validation.FieldError(
            path=("spec", "tensorboard"),
            message="field is immutable once set: the TensorBoard is created once and never rewritten",
        )
    if a.run_policy.suspend or b.run_policy.suspend:
        return
    if b.framework.elastic is None:
        for key in sorted(set(a.replica_specs) & set(b.replica_specs)):
            if a.replica_specs[key].replicas != b.replica_specs[key].replicas:
                yield validation.FieldError(
                    path=("spec", "replicaSpecs", key, "replicas"),
                    message=v1beta1.trainingjob_types.FIXED_COUNTS,
                )
    if conditions.is_true(old.status.conditions, v1beta1.ConditionType.REPLICA_FAILURE):
        return  # its pods are refused: the user may mend the templates
    for key in sorted(set(a.replica_specs) & set(b.replica_specs)):
        if a.replica_specs[key].template != b.replica_specs[key].template:
            yield validation.FieldError(
                path=("spec", "replicaSpecs", key, "template"),
                message="field is immutable while the job is not suspended",
            )
