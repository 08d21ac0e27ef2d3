"""The checked-in CRD is the one the types generate, and it is well formed."""

import pathlib
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from kubetrain.api import crd

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def generated() -> dict[str, Any]:
    return crd.custom_resource_definition()


def versions(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {v["name"]: v for v in doc["spec"]["versions"]}


def test_the_checked_in_crd_is_current() -> None:
    checked_in = (ROOT / crd.CRD_PATH).read_text()
    assert checked_in == crd.render(), "the CRD is stale: run `make manifests`"


def test_v1beta1_is_stored_and_v1alpha1_only_served(generated: dict[str, Any]) -> None:
    v = versions(generated)
    assert (v["v1beta1"]["served"], v["v1beta1"]["storage"]) == (True, True)
    assert (v["v1alpha1"]["served"], v["v1alpha1"]["storage"]) == (True, False)
    assert v["v1alpha1"]["deprecated"] is True
    assert "v1beta1" in v["v1alpha1"]["deprecationWarning"]


def test_names_and_status_subresource(generated: dict[str, Any]) -> None:
    names = generated["spec"]["names"]
    assert names["shortNames"] == ["tj"]
    assert names["categories"] == ["kubetrain"]
    assert generated["metadata"]["name"] == "trainingjobs.training.kubetrain.dev"
    served = versions(generated)
    assert served["v1alpha1"]["subresources"] == {"status": {}}
    # Only v1beta1 can scale: v1alpha1's replica types are a list, and scale paths take no index.
    assert served["v1beta1"]["subresources"] == {
        "status": {},
        "scale": {
            "specReplicasPath": ".spec.replicaSpecs.Worker.replicas",
            "statusReplicasPath": ".status.replicaStatuses.Worker.active",
            "labelSelectorPath": ".status.replicaStatuses.Worker.selector",
        },
    }


def test_the_state_column_reads_the_derived_state_not_the_last_condition(generated: dict[str, Any]) -> None:
    for v in versions(generated).values():
        columns = {c["name"]: c for c in v["additionalPrinterColumns"]}
        assert columns["State"]["jsonPath"] == ".status.state"
        assert "conditions" not in columns["State"]["jsonPath"]
        assert columns["Restarts"]["type"] == "integer"
        assert columns["Age"]["jsonPath"] == ".metadata.creationTimestamp"


def nodes(schema: dict[str, Any], path: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    yield path, schema
    for name, sub in schema.get("properties", {}).items():
        yield from nodes(sub, f"{path}.{name}")
    if isinstance(schema.get("items"), dict):
        yield from nodes(schema["items"], f"{path}[]")
    if isinstance(schema.get("additionalProperties"), dict):
        yield from nodes(schema["additionalProperties"], f"{path}{{}}")


@pytest.mark.parametrize("version", ["v1beta1", "v1alpha1"])
def test_the_schema_is_structural(generated: dict[str, Any], version: str) -> None:
    root = versions(generated)[version]["schema"]["openAPIV3Schema"]
    for path, node in nodes(root):
        # A quantity is the one node without a type: an integer or a string (int-or-string).
        assert "type" in node or node.get("x-kubernetes-int-or-string") is True, (
            f"{path or '<root>'} has no type"
        )
        assert not ({"properties", "additionalProperties"} <= node.keys()), path
        for key in node.get("required", []):
            assert key in node.get("properties", {}), f"{path}: required {key} is not a property"
        if node.get("x-kubernetes-list-type") == "map":
            for key in node["x-kubernetes-list-map-keys"]:
                assert key in node["items"]["required"], f"{path}: list-map key {key} must be required"
    assert root["properties"]["metadata"] == {"type": "object"}


def test_schema_bounds_match_the_types(generated: dict[str, Any]) -> None:
    spec = versions(generated)["v1beta1"]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    replica = spec["properties"]["replicaSpecs"]["additionalProperties"]
    assert replica["properties"]["replicas"]["minimum"] == 0
    assert replica["properties"]["restartPolicy"]["enum"] == ["Always", "OnFailure", "Never", "ExitCode"]
    assert replica["properties"]["template"]["x-kubernetes-preserve-unknown-fields"] is True
    assert replica["required"] == ["template"]
    assert spec["required"] == ["framework", "replicaSpecs"]
    rules = spec["properties"]["failurePolicy"]["properties"]["rules"]
    assert rules["x-kubernetes-list-map-keys"] == ["name"]


def test_cross_field_rules_are_cel(generated: dict[str, Any]) -> None:
    beta = versions(generated)["v1beta1"]["schema"]["openAPIV3Schema"]
    messages = [r["message"] for r in beta["x-kubernetes-validations"]]
    assert any("DNS-1035" in m for m in messages)
    assert any("63 characters" in m for m in messages)
    spec_rules = beta["properties"]["spec"]["x-kubernetes-validations"]
    assert any("lowerAscii" in r["rule"] for r in spec_rules)
    keys_rule = beta["properties"]["spec"]["properties"]["replicaSpecs"]["x-kubernetes-validations"]
    assert keys_rule == [
        {
            "rule": "self.all(k, k.matches('^[A-Za-z][A-Za-z0-9]*$'))",
            "message": "keys must match ^[A-Za-z][A-Za-z0-9]*$",
        }
    ]


def test_render_is_valid_yaml_with_a_header() -> None:
    text = crd.render()
    assert text.startswith("# Generated by `kubetrain manifests`")
    assert yaml.safe_load(text) == crd.custom_resource_definition()


def test_every_scheduling_policy_field_says_what_it_does(generated: dict[str, Any]) -> None:
    # kubectl explain trainingjob.spec.runPolicy.schedulingPolicy: no field that silently does nothing.
    spec = versions(generated)["v1beta1"]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    policy = spec["properties"]["runPolicy"]["properties"]["schedulingPolicy"]
    assert "--gang-scheduler" in policy["description"]
    fields = policy["properties"]
    assert set(fields) == {"minAvailable", "queue", "priorityClass", "scheduleTimeoutSeconds"}
    for name, field in fields.items():
        assert len(field.get("description", "")) > 40, name
