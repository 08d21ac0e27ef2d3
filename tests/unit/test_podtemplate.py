"""Pod templates: limits and the shape of every field kubetrain reads, refused with a path."""

import copy
from typing import Any

import attrs
import pytest

from kubetrain.api import podtemplate, scheme, validation, wire
from kubetrain.operator import render
from kubetrain.operator.frameworks import registry

GOOD: dict[str, Any] = {
    "metadata": {"labels": {"team": "a"}},
    "spec": {
        "containers": [
            {
                "name": "pytorch",
                "image": "trainer:1",
                "args": ["--epochs", "3"],
                "env": [{"name": "A", "value": "1"}],
                "resources": {"limits": {"cpu": 2, "memory": "1Gi", "example.com/gpu": 1.0}},
            }
        ],
        "volumes": [{"name": "data", "emptyDir": {}}],
    },
}


def broken(path: tuple[str | int, ...], value: Any) -> dict[str, Any]:
    out = copy.deepcopy(GOOD)
    node: Any = out
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value
    return out


def messages(template: Any) -> list[str]:
    return [str(e) for e in podtemplate.errors(template)]


def test_a_well_formed_template_passes() -> None:
    assert podtemplate.errors(GOOD) == []


C0 = ("spec", "containers", 0)


@pytest.mark.parametrize(
    ("path", "value", "expected"),
    [
        ((*C0, "resources", "limits"), 3, "limits: expected a map of resource quantities, got integer"),
        ((*C0, "resources", "limits"), 1.5, "limits: expected a map of resource quantities, got number"),
        ((*C0, "resources", "limits"), "x", "limits: expected a map of resource quantities, got string"),
        ((*C0, "resources", "limits", "cpu"), [1], "limits.cpu: expected a quantity, got array"),
        ((*C0, "resources", "limits", "cpu"), True, "limits.cpu: expected a quantity, got boolean"),
        ((*C0, "resources"), [], "containers[0].resources: expected object, got array"),
        ((*C0, "image"), ["a"], "containers[0].image: expected string, got array"),
        ((*C0, "args", 1), 3, "containers[0].args[1]: expected string, got integer"),
        ((*C0, "command"), "python", "containers[0].command: expected array, got string"),
        ((*C0, "env", 0), "A=1", "containers[0].env[0]: expected object, got string"),
        ((*C0, "env", 0, "name"), 7, "containers[0].env[0].name: required string"),
        ((*C0, "name"), None, "containers[0].name: every container needs a name"),
        (("spec", "containers"), [], "spec.containers: a pod template needs at least one container"),
        (("spec", "volumes"), {"a": 1}, "spec.volumes: expected array, got object"),
        (("spec", "initContainers"), [1], "spec.initContainers[0]: expected object, got integer"),
        (("metadata", "labels", "team"), 1, "metadata.labels.team: expected string, got integer"),
        (("metadata",), [], "template.metadata: expected object, got array"),
        (("spec",), None, "template.spec: a pod template needs a spec"),
    ],
)
def test_a_mistyped_field_is_named(path: tuple[str | int, ...], value: Any, expected: str) -> None:
    found = messages(broken(path, value))
    assert len(found) == 1, found
    assert found[0].endswith(expected), found


def test_nesting_past_the_limit_names_the_first_level_too_deep() -> None:
    deep: dict[str, Any] = {}
    node = deep
    for _ in range(500):
        node["a"] = {}
        node = node["a"]
    found = podtemplate.errors(broken(("spec", "junk"), deep))
    assert len(found) == 1
    assert len(found[0].path) == 1 + podtemplate.MAX_DEPTH + 1
    assert found[0].path[:4] == ("template", "spec", "junk", "a")
    assert found[0].message == "nested deeper than 32 levels below the template"


def test_nesting_at_the_limit_is_fine() -> None:
    deep: dict[str, Any] = {}
    node = deep
    for _ in range(podtemplate.MAX_DEPTH - 3):  # spec.x. + the levels below reach exactly the limit
        node["a"] = {}
        node = node["a"]
    assert podtemplate.errors(broken(("spec", "x"), deep)) == []


def test_a_huge_string_is_refused_with_its_length() -> None:
    found = messages(broken((*C0, "image"), "x" * (1 << 20)))
    assert found == [
        "template.spec.containers[0].image: must be at most 65536 characters, got 1048576",
    ]


def test_a_huge_template_of_small_strings_is_refused_by_its_encoded_size() -> None:
    many = {f"k{i}": "v" * 1000 for i in range(600)}
    found = messages(broken(("metadata", "annotations"), many))
    assert len(found) == 1
    assert found[0].startswith("template: must be at most 524288 bytes encoded, got ")


def test_a_job_with_a_bad_template_is_refused_with_its_path_and_never_reaches_render() -> None:
    job = {
        "apiVersion": "training.kubetrain.dev/v1beta1",
        "kind": "TrainingJob",
        "metadata": {"name": "j"},
        "spec": {
            "framework": {"name": "pytorch"},
            "replicaSpecs": {"Worker": {"replicas": 2, "template": broken((*C0, "resources", "limits"), 3)}},
        },
    }
    with pytest.raises(validation.ValidationError) as e:
        scheme.decode(job)
    assert str(e.value) == (
        "spec.replicaSpecs.Worker.template.spec.containers[0].resources.limits:"
        " expected a map of resource quantities, got integer"
    )
    job["spec"]["replicaSpecs"]["Worker"]["template"] = GOOD
    hub = scheme.to_hub(scheme.decode(job))
    assert [o["kind"] for o in render.render(hub, registry.default().get("pytorch"))].count("Pod") == 2


def test_templates_are_encoded_as_they_are_whatever_their_depth() -> None:
    # Conversion and encoding must never walk a template: a deep one stored before the
    # limit existed would otherwise exhaust the stack and break every list of the namespace.
    deep: dict[str, Any] = {}
    node = deep
    for _ in range(5000):
        node["a"] = {}
        node = node["a"]
    job = scheme.decode(
        {
            "apiVersion": "training.kubetrain.dev/v1beta1",
            "kind": "TrainingJob",
            "metadata": {"name": "j"},
            "spec": {"framework": {"name": "pytorch"}, "replicaSpecs": {"Worker": {"template": GOOD}}},
        }
    )
    spec = job.spec.replica_specs["Worker"]  # type: ignore[union-attr]
    with attrs.validators.disabled():
        deep_spec = attrs.evolve(spec, template={**GOOD, "x": deep})
    encoded = wire.unstructure(deep_spec)
    assert encoded["template"]["x"] is deep
