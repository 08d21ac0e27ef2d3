"""The validating admission webhook for TrainingJobs (``admission.k8s.io/v1``).

The CRD's schema and CEL rules check what one object says about itself. This webhook
adds what they cannot know:

- the framework's own rules — its replica types and counts, a Chief *or* a Master, a
  Caffe2 backend for the number of shards, MPI options, ... (from the framework registry);
- fields that must not change once the job exists: the framework, ``runtimeId``,
  ``runPolicy.managedBy``, the set of replica types, and the pod templates — unless the
  job is suspended (a queue such as Kueue may then adjust them, as it does for batch Jobs).

Every refusal names the field: ``spec.replicaSpecs.Launcher: tensorflow has no replica
type Launcher (allowed: Chief, Master, Worker, PS, Evaluator)``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from kubetrain.api import scheme, v1beta1, validation
from kubetrain.operator.frameworks import framework as fw_contract
from kubetrain.operator.frameworks import registry

__all__ = ["errors", "review"]

API_VERSION = "admission.k8s.io/v1"


async def review(body: Mapping[str, Any]) -> dict[str, Any]:
    return answer(body)


def answer(body: Mapping[str, Any], frameworks: registry.Registry | None = None) -> dict[str, Any]:
    request = body.get("request") or {}
    found = errors(request.get("object"), request.get("oldObject"), frameworks or registry.default())
    response: dict[str, Any] = {"uid": request.get("uid", ""), "allowed": not found}
    if found:
        response["status"] = {
            "code": 422,
            "reason": "Invalid",
            "message": "; ".join(str(e) for e in found),
        }
    return {"apiVersion": API_VERSION, "kind": "AdmissionReview", "response": response}


def errors(
    new: Mapping[str, Any] | None, old: Mapping[str, Any] | None, frameworks: registry.Registry
) -> list[validation.FieldError]:
    """Why ``new`` (replacing ``old``, on an update) must not be admitted."""
    if new is None:
        return []  # DELETE: nothing to check
    try:
        job = scheme.to_hub(scheme.decode(new))
        fw = frameworks.get(job.spec.framework.name)
    except validation.ValidationError as e:
        return list(e.errors)
    except registry.UnknownFrameworkError as e:
        return [validation.FieldError(path=("spec", "framework", "name"), message=str(e))]
    found = fw_contract.validate(fw, job)
    if old is not None:
        found += list(_changed_immutables(scheme.to_hub(scheme.decode(old)), job))
    return found


def _changed_immutables(
    old: v1beta1.TrainingJob, new: v1beta1.TrainingJob
) -> Iterator[validation.FieldError]:
    a, b = old.spec, new.spec
    for path, before, after in (
        (("spec", "framework"), a.framework, b.framework),
        (("spec", "runtimeId"), a.runtime_id, b.runtime_id),
        (("spec", "runPolicy", "managedBy"), a.run_policy.managed_by, b.run_policy.managed_by),
        (("spec", "replicaSpecs"), sorted(a.replica_specs), sorted(b.replica_specs)),
    ):
        if before != after:
            yield validation.FieldError(path=path, message="field is immutable")
    if a.run_policy.suspend or b.run_policy.suspend:
        return
    for key in sorted(set(a.replica_specs) & set(b.replica_specs)):
        if a.replica_specs[key].template != b.replica_specs[key].template:
            yield validation.FieldError(
                path=("spec", "replicaSpecs", key, "template"),
                message="field is immutable while the job is not suspended",
            )
