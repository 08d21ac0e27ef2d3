"""The conversion webhook gives back an object exactly as it was written, and never fails
on one that is stored: a corrupt annotation or a rule the object predates is no reason.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubetrain.api import exact, scheme, v1alpha1, v1beta1, validation
from kubetrain.api.v1alpha1 import trainingjob_conversion
from kubetrain.operator.webhooks import conversion

SAMPLES = sorted((Path(__file__).parents[2] / "samples" / "v1alpha1").glob("*.yaml"))
CONVERSION_ANNOTATIONS = (exact.FORM_DATA, trainingjob_conversion.CONVERSION_DATA)


def canonical(data: Any) -> str:
    return json.dumps(data, sort_keys=True, separators=(",", ":"))


def review(obj: dict[str, Any], desired: str) -> dict[str, Any]:
    """The webhook's answer for one object, through JSON both ways as over HTTP."""
    body = {"request": {"uid": "u-1", "desiredAPIVersion": desired, "objects": [obj]}}
    answer: dict[str, Any] = json.loads(json.dumps(conversion.convert(json.loads(json.dumps(body)))))
    return answer["response"]


def converted(obj: dict[str, Any], desired: str) -> dict[str, Any]:
    response = review(obj, desired)
    assert response["result"] == {"status": "Success"}, response["result"]
    out: dict[str, Any] = response["convertedObjects"][0]
    return out


def hub(**replica_specs: Any) -> dict[str, Any]:
    return {
        "apiVersion": v1beta1.API_VERSION,
        "kind": "TrainingJob",
        "metadata": {"name": "tj", "namespace": "default", "uid": "u", "resourceVersion": "3"},
        "spec": {"framework": {"name": "tensorflow"}, "replicaSpecs": replica_specs},
    }


TEMPLATE = {"spec": {"containers": [{"name": "tensorflow", "image": "tf:2"}]}}


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda p: p.stem)
def test_a_v1alpha1_sample_comes_back_byte_for_byte(sample: Path) -> None:
    written = yaml.safe_load(sample.read_text())
    stored = converted(written, v1beta1.API_VERSION)
    assert stored["apiVersion"] == v1beta1.API_VERSION
    back = converted(stored, v1alpha1.API_VERSION)
    assert canonical(back) == canonical(written)
    assert not set(CONVERSION_ANNOTATIONS) & set(back["metadata"].get("annotations", {}))


def test_the_tfjob_sample_keeps_its_order_and_defaults_in_the_hub() -> None:
    written = yaml.safe_load((SAMPLES[0].parent / "tfjob-master-worker-ps.yaml").read_text())
    stored = converted(written, v1beta1.API_VERSION)
    # The hub cannot say MASTER, WORKER, PS or replicas: 1; the form annotation can.
    form = json.loads(stored["metadata"]["annotations"][exact.FORM_DATA])
    assert form["order"] == [[["spec", "replicaSpecs"], ["MASTER", "WORKER", "PS"]]]
    assert [["spec", "terminationPolicy", "chief", "replicaIndex"], 0] in form["explicit"]
    assert "replicas" not in stored["spec"]["replicaSpecs"]["Master"]


@pytest.mark.parametrize(
    "garbage",
    ["not json", "{", "[]", '{"order": 3, "explicit": [[["spec"], 1, 2], "x", [[true], 1]]}', "null"],
)
@pytest.mark.parametrize("key", CONVERSION_ANNOTATIONS)
def test_a_corrupt_conversion_annotation_on_a_hub_object_does_not_fail_conversion(
    key: str, garbage: str
) -> None:
    stored = hub(Chief={"replicas": 1, "template": TEMPLATE}, Worker={"replicas": 2, "template": TEMPLATE})
    stored["metadata"]["annotations"] = {key: garbage, "team": "ml"}
    down = converted(stored, v1alpha1.API_VERSION)
    assert [(r["replicaType"], r.get("replicas", 1)) for r in down["spec"]["replicaSpecs"]] == [
        ("CHIEF", 1),
        ("WORKER", 2),
    ]
    up = converted(down, v1beta1.API_VERSION)
    assert up["spec"] == stored["spec"]
    assert up["metadata"]["annotations"] == {"team": "ml"}


def test_a_form_record_cannot_change_what_an_object_means() -> None:
    stored = hub(Master={"template": TEMPLATE}, Worker={"replicas": 2, "template": TEMPLATE})
    forged = {"explicit": [[["spec", "replicaSpecs", "MASTER", "replicas"], 7]]}
    stored["metadata"]["annotations"] = {exact.FORM_DATA: json.dumps(forged)}
    down = converted(stored, v1alpha1.API_VERSION)
    assert "replicas" not in down["spec"]["replicaSpecs"][0]  # still one master, as stored


def test_a_stored_object_that_breaks_todays_rules_still_converts_exactly() -> None:
    # Over the replica bound, a template without containers, a port out of range: all
    # refused by admission today, all convertible, since their JSON types are right.
    stored = hub(
        Master={"replicas": 20000, "template": {"spec": {"containers": []}}},
        Worker={"replicas": 2, "port": 70000, "template": {"spec": {"containers": [{"image": "x"}]}}},
    )
    with pytest.raises(ValueError, match="at most 10000"):
        scheme.decode(stored)
    down = converted(stored, v1alpha1.API_VERSION)
    assert canonical(converted(down, v1beta1.API_VERSION)) == canonical(stored)


def test_a_wrong_json_type_still_fails_with_the_field_named() -> None:
    stored = hub(Master={"replicas": "1", "template": TEMPLATE})
    response = review(stored, v1alpha1.API_VERSION)
    assert response["result"]["status"] == "Failure"
    assert "spec.replicaSpecs.Master.replicas: expected integer, got string" in response["result"]["message"]


def test_a_corrupt_stash_written_in_v1alpha1_is_refused_with_the_annotation_named() -> None:
    # Only a write in v1alpha1 can bring one (never a stored object): refuse it, cleanly.
    written = yaml.safe_load(SAMPLES[0].read_text())
    written["metadata"]["annotations"] = {trainingjob_conversion.CONVERSION_DATA: "{"}
    response = review(written, v1beta1.API_VERSION)
    assert response["result"]["status"] == "Failure"
    assert f"metadata.annotations.{trainingjob_conversion.CONVERSION_DATA}" in response["result"]["message"]


def test_a_stored_object_that_breaks_a_cross_field_rule_still_converts() -> None:
    stored = hub(Worker={"replicas": 2, "template": TEMPLATE})
    stored["metadata"]["name"] = "a" * 60
    alpha = converted(stored, v1alpha1.API_VERSION)
    assert canonical(converted(alpha, v1beta1.API_VERSION)) == canonical(stored)
    # Admission and the reconciler still apply the rule.
    with pytest.raises(validation.ValidationError, match="63"):
        scheme.decode(stored)
