"""Bad TrainingJobs are refused with messages that name the field."""

import copy
from typing import Any

import pytest

from kubetrain.api import scheme, v1beta1, validation

VALID: dict[str, Any] = {
    "apiVersion": "training.kubetrain.dev/v1beta1",
    "kind": "TrainingJob",
    "metadata": {"name": "mnist"},
    "spec": {
        "framework": {"name": "pytorch"},
        "replicaSpecs": {
            "Master": {"template": {"spec": {"containers": [{"name": "pytorch"}]}}},
            "Worker": {"replicas": 2, "template": {"spec": {"containers": [{"name": "pytorch"}]}}},
        },
    },
}


def errors_for(**patch: Any) -> list[str]:
    doc = copy.deepcopy(VALID)
    for dotted, value in patch.items():
        *parents, last = dotted.split("__")
        node = doc
        for key in parents:
            node = node.setdefault(key, {})
        node[last] = value
    with pytest.raises(validation.ValidationError) as e:
        scheme.decode(doc)
    return str(e.value).splitlines()


def test_the_valid_document_is_valid() -> None:
    job = scheme.decode(VALID)
    assert isinstance(job, v1beta1.TrainingJob)
    assert job.spec.replica_specs["Worker"].replicas == 2


@pytest.mark.parametrize(
    ("patch", "message"),
    [
        ({"spec__replicaSpecs__Worker__replicaz": 2}, "spec.replicaSpecs.Worker.replicaz: unknown field"),
        (
            {"spec__replicaSpecs__Worker__replicas": "2"},
            "spec.replicaSpecs.Worker.replicas: expected integer, got string",
        ),
        (
            {"spec__replicaSpecs__Worker__replicas": True},
            "spec.replicaSpecs.Worker.replicas: expected integer, got boolean",
        ),
        (
            {"spec__replicaSpecs__Worker__replicas": -1},
            "spec.replicaSpecs.Worker.replicas: must be at least 0, got -1",
        ),
        (
            {"spec__replicaSpecs__Worker__restartPolicy": "Sometimes"},
            "spec.replicaSpecs.Worker.restartPolicy: 'Sometimes' is not one of: Always, OnFailure, Never, ExitCode",
        ),
        (
            {"spec__replicaSpecs__Worker__template": {"spec": {}}},
            "spec.replicaSpecs.Worker.template.spec.containers: a pod template needs at least one container",
        ),
        (
            {"spec__replicaSpecs__worker-1": {"template": {"spec": {"containers": [{"name": "a"}]}}}},
            "spec.replicaSpecs.worker-1: 'worker-1' does not match ^[A-Za-z][A-Za-z0-9]*$",
        ),
        (
            {"spec__replicaSpecs__worker": {"template": {"spec": {"containers": [{"name": "a"}]}}}},
            "spec.replicaSpecs.worker: types must differ in more than letter case (Worker and worker)",
        ),
        (
            {"spec__framework__tensorflow": {}},
            "spec.framework.tensorflow: tensorflow options are only valid for framework tensorflow",
        ),
        (
            {"spec__successPolicy": {"targets": [{"replicaType": "Worker", "index": 2}]}},
            "spec.successPolicy.targets[0]: no replica Worker[2] in this job",
        ),
        (
            {"spec__failurePolicy": {"rules": [{"name": "x", "action": "Restart", "replicaTypes": ["PS"]}]}},
            "spec.failurePolicy.rules[0].replicaTypes: no replica type PS in this job",
        ),
        (
            {
                "spec__failurePolicy": {
                    "rules": [{"name": "a", "action": "Restart"}, {"name": "a", "action": "FailJob"}]
                }
            },
            "spec.failurePolicy.rules[1]: duplicate entry a (also at [0])",
        ),
        (
            {
                "spec__failurePolicy": {
                    "rules": [{"name": "a", "action": "Restart", "onExitCodes": {"values": []}}]
                }
            },
            "spec.failurePolicy.rules[0].onExitCodes.values: list at least one exit code in values or ranges",
        ),
        (
            {
                "spec__failurePolicy": {
                    "rules": [
                        {
                            "name": "a",
                            "action": "Restart",
                            "onExitCodes": {"ranges": [{"min": 200, "max": 100}]},
                        }
                    ]
                }
            },
            "spec.failurePolicy.rules[0].onExitCodes.ranges[0].max: min must not exceed max",
        ),
        (
            {
                "spec__runPolicy": {"backoffLimit": 3},
                "spec__failurePolicy": {"budgets": {"userCode": {"limit": 2}}},
            },
            "spec.runPolicy.backoffLimit: set runPolicy.backoffLimit or failurePolicy.budgets.userCode.limit, not both",
        ),
        (
            {"metadata__name": "Mnist"},
            "metadata.name: 'Mnist' must be a DNS-1035 label: lower case letters, digits and '-', starting with a letter",
        ),
        (
            {"metadata__name": "m" * 56},
            "metadata.name: too long: pod name '" + "m" * 56 + "-worker-1' has 65 characters, at most 63",
        ),
        ({"spec__replicaSpecs": {}}, "spec.replicaSpecs: must have at least 1 entry"),
        (
            {"apiVersion": "kubeflow.org/v1"},
            "apiVersion: expected one of training.kubetrain.dev/v1beta1, training.kubetrain.dev/v1alpha1, got 'kubeflow.org/v1'",
        ),
    ],
)
def test_message_names_the_field(patch: dict[str, Any], message: str) -> None:
    assert message in errors_for(**patch)


def test_names_within_63_characters_are_fine() -> None:
    doc = copy.deepcopy(VALID)
    doc["metadata"]["name"] = "m" * 54  # m...-worker-1 is exactly 63
    del doc["spec"]["replicaSpecs"]["Master"]
    assert scheme.decode(doc).metadata.name == "m" * 54


def test_every_error_is_reported_at_once() -> None:
    lines = errors_for(spec__replicaSpecs__Worker__replicas=-1, spec__replicaSpecs__Master__replicaz=1)
    assert len(lines) == 2


def test_missing_required_field() -> None:
    doc = copy.deepcopy(VALID)
    del doc["spec"]["framework"]
    with pytest.raises(validation.ValidationError) as e:
        scheme.decode(doc)
    assert str(e.value) == "spec.framework: required field is missing"


def test_legacy_rules_are_checked_stage_by_stage() -> None:
    # A value is built bottom-up: a broken part stops its parent from being built, so
    # rules of the parent are reported once the part is fixed.
    worker = {"replicaType": "WORKER", "template": {"spec": {"containers": [{"name": "a"}]}}}
    legacy: dict[str, Any] = {
        "apiVersion": "training.kubetrain.dev/v1alpha1",
        "kind": "TrainingJob",
        "metadata": {"name": "c2"},
        "spec": {"framework": "caffe2", "backend": {"type": "redis"}, "replicaSpecs": [worker, worker]},
    }
    with pytest.raises(validation.ValidationError) as e:
        scheme.decode(legacy)
    assert str(e.value) == "spec.backend.redisHost: the redis backend needs redisHost"
    legacy["spec"]["backend"]["redisHost"] = "redis"
    legacy["spec"]["terminationPolicy"] = {"chief": {"replicaName": "MASTER"}}
    with pytest.raises(validation.ValidationError) as e:
        scheme.decode(legacy)
    assert str(e.value).splitlines() == ["spec.replicaSpecs[1]: duplicate entry WORKER (also at [0])"]
    legacy["spec"]["replicaSpecs"] = [worker]
    with pytest.raises(validation.ValidationError) as e:
        scheme.decode(legacy)
    assert (
        str(e.value)
        == "spec.terminationPolicy.chief: terminationPolicy.chief must name a replica of this job"
    )
    legacy["spec"]["framework"] = "tensorflow"
    del legacy["spec"]["terminationPolicy"]
    with pytest.raises(validation.ValidationError) as e:
        scheme.decode(legacy)
    assert str(e.value) == "spec.backend: backend is only valid for framework caffe2"
