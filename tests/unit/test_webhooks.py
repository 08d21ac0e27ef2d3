"""The conversion and admission webhooks, as pure functions of their reviews."""

from __future__ import annotations

import copy
from typing import Any

from testkit.builders import a_job, a_legacy_job

from kubetrain.api import scheme, v1alpha1, v1beta1
from kubetrain.operator.frameworks import registry
from kubetrain.operator.webhooks import conversion, validating


def hub(name: str = "tj", **spec: Any) -> dict[str, Any]:
    job = (
        a_job(name)
        .framework("tensorflow")
        .replicas("Chief", 1)
        .replicas("Worker", 2)
        .with_spec(**spec)
        .build()
    )
    out = scheme.encode(job)
    out["metadata"].update({"uid": f"uid-{name}", "resourceVersion": "7", "generation": 3})
    return out


def test_conversion_echoes_the_uid_keeps_the_order_and_touches_only_labels_and_annotations() -> None:
    objects = [hub("a"), hub("b"), hub("c")]
    review = {"request": {"uid": "r-1", "desiredAPIVersion": v1alpha1.API_VERSION, "objects": objects}}
    response = conversion.convert(review)["response"]
    assert response["uid"] == "r-1"
    assert response["result"] == {"status": "Success"}
    out = response["convertedObjects"]
    assert [o["metadata"]["name"] for o in out] == ["a", "b", "c"]
    assert all(o["apiVersion"] == v1alpha1.API_VERSION for o in out)
    for before, after in zip(objects, out, strict=True):
        assert {k: v for k, v in after["metadata"].items() if k not in ("labels", "annotations")} == {
            k: v for k, v in before["metadata"].items() if k not in ("labels", "annotations")
        }
    back = conversion.convert(
        {"request": {"uid": "r-2", "desiredAPIVersion": v1beta1.API_VERSION, "objects": out}}
    )
    assert back["response"]["convertedObjects"] == objects


def test_a_conversion_that_fails_says_which_object_and_why() -> None:
    bad = hub("broken")
    bad["spec"]["replicaSpecs"]["Worker"]["replicaz"] = 2
    review = {
        "request": {"uid": "r-3", "desiredAPIVersion": v1alpha1.API_VERSION, "objects": [hub("ok"), bad]}
    }
    response = conversion.convert(review)["response"]
    assert response["uid"] == "r-3"
    assert "convertedObjects" not in response
    assert response["result"]["status"] == "Failure"
    assert "TrainingJob default/broken" in response["result"]["message"]
    assert "spec.replicaSpecs.Worker.replicaz: unknown field" in response["result"]["message"]


def admit(new: dict[str, Any] | None, old: dict[str, Any] | None = None) -> dict[str, Any]:
    body = {"request": {"uid": "a-1", "object": new, "oldObject": old}}
    response: dict[str, Any] = validating.answer(body, registry.Registry(registry.BUILTINS))["response"]
    assert response["uid"] == "a-1"
    return response


def test_a_valid_job_is_admitted_in_either_version() -> None:
    assert admit(hub())["allowed"]
    legacy = scheme.encode(a_legacy_job("old", "tensorflow", ("MASTER", 1), ("WORKER", 2)))
    assert admit(legacy)["allowed"]


def test_framework_rules_refuse_with_the_field_named() -> None:
    job = scheme.encode(a_job("tj").framework("tensorflow").replicas("Launcher", 1).build())
    response = admit(job)
    assert not response["allowed"]
    assert response["status"]["code"] == 422
    assert response["status"]["message"].startswith(
        "spec.replicaSpecs.Launcher: tensorflow has no replica type Launcher"
    )
    unknown = hub()
    unknown["spec"]["framework"]["name"] = "theano"
    assert admit(unknown)["status"]["message"].startswith("spec.framework.name: unknown framework 'theano'")


def test_immutable_fields_stay_put_and_templates_change_only_while_suspended() -> None:
    old = hub()
    scaled = copy.deepcopy(old)
    scaled["spec"]["replicaSpecs"]["Worker"]["replicas"] = 4
    # Its ranks were told the world's size: a running fixed-size job cannot take a new member.
    assert admit(scaled, old)["status"]["message"] == (
        "spec.replicaSpecs.Worker.replicas: replicas change only while the job is suspended, "
        "or in an elastic job (framework.pytorch.elastic)"
    )
    suspended_scaled = hub(run_policy=v1beta1.RunPolicy(suspend=True))
    grown = copy.deepcopy(suspended_scaled)
    grown["spec"]["replicaSpecs"]["Worker"]["replicas"] = 4
    assert admit(grown, suspended_scaled)["allowed"], "a suspended job restarts at its new size"
    changed = copy.deepcopy(old)
    changed["spec"]["framework"]["name"] = "pytorch"
    changed["spec"]["replicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["image"] = "other"
    message = admit(changed, old)["status"]["message"]
    assert "spec.framework: field is immutable" in message
    new_image = copy.deepcopy(old)
    new_image["spec"]["replicaSpecs"]["Chief"]["template"]["spec"]["containers"][0]["image"] = "other"
    assert admit(new_image, old)["status"]["message"] == (
        "spec.replicaSpecs.Chief.template: field is immutable while the job is not suspended"
    )
    suspended = hub(run_policy=v1beta1.RunPolicy(suspend=True))
    edited = copy.deepcopy(suspended)
    edited["spec"]["replicaSpecs"]["Chief"]["template"]["spec"]["nodeSelector"] = {"pool": "a"}
    assert admit(edited, suspended)["allowed"]
    retyped = copy.deepcopy(old)
    retyped["spec"]["replicaSpecs"]["PS"] = retyped["spec"]["replicaSpecs"]["Worker"]
    assert "spec.replicaSpecs: field is immutable" in admit(retyped, old)["status"]["message"]
    # Running pods know their peers by name; suspended or not, the names stay.
    renamed = copy.deepcopy(suspended)
    renamed["spec"]["network"] = {"hostNames": "PerJob"}
    assert admit(renamed, suspended)["status"]["message"] == "spec.network.hostNames: field is immutable"


def test_managed_by_is_one_field_with_a_deprecated_predecessor_and_never_changes() -> None:
    multikueue = "kueue.x-k8s.io/multikueue"
    new = hub(managed_by=multikueue)
    assert validating.answer({"request": {"uid": "u", "object": new}})["response"] == {
        "uid": "u",
        "allowed": True,
    }
    old_style = hub(run_policy=v1beta1.RunPolicy(managed_by=multikueue))
    said = validating.answer({"request": {"uid": "u", "object": old_style}})["response"]
    assert said["allowed"]
    assert said["warnings"] == [
        "spec.runPolicy.managedBy is deprecated: set spec.managedBy, the field MultiKueue reads"
    ]
    assert scheme.to_hub(scheme.decode(old_style)).spec.manager == multikueue
    # Moving the value to the new field changes nothing; changing it does.
    assert admit(new, old_style)["allowed"]
    elsewhere = hub(managed_by="example.com/dispatcher")
    assert admit(elsewhere, new)["status"]["message"] == "spec.managedBy: field is immutable"
    assert admit(hub(), new)["status"]["message"] == "spec.managedBy: field is immutable"
    both = hub(managed_by=multikueue)
    both["spec"]["runPolicy"] = {"managedBy": "example.com/dispatcher"}
    assert admit(both)["status"]["message"] == (
        f"spec.runPolicy.managedBy: {v1beta1.trainingjob_types.MANAGERS_DIFFER}"
    )


def test_templates_may_be_mended_while_their_pods_are_refused() -> None:
    refused = hub()
    refused["status"] = {
        "conditions": [
            {
                "type": "ReplicaFailure",
                "status": "True",
                "reason": "Invalid",
                "message": "Pod tj-chief-0: ...",
                "lastTransitionTime": "2026-01-01T00:00:00Z",
            }
        ]
    }
    mended = copy.deepcopy(refused)
    mended["spec"]["replicaSpecs"]["Chief"]["template"]["spec"]["containers"][0]["image"] = "fixed"
    assert admit(mended, refused)["allowed"]
    refused["status"]["conditions"][0]["status"] = "False"  # created since: templates are fixed again
    assert not admit(mended, refused)["allowed"]


def test_deletes_are_admitted() -> None:
    assert admit(None, hub())["allowed"]
