"""Conversion between v1alpha1 and the v1beta1 hub loses nothing, in either direction.

Typed objects keep their meaning; wire objects (what the conversion webhook converts)
keep their form too: read back in the version it was written in, an object is the JSON
that was written, list order and explicit defaults included, and an object that breaks
a rule but has the schema's JSON types still converts.
"""

import copy
import json
import sys
from typing import Any

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st
from testkit import strategies

from kubetrain.api import exact, podtemplate, scheme, v1alpha1, v1beta1, validation
from kubetrain.api.v1alpha1 import trainingjob_conversion
from kubetrain.operator.runtime import servers

ANNOTATION = trainingjob_conversion.CONVERSION_DATA
FORM = exact.FORM_DATA


def through_storage(job: scheme.TrainingJob) -> scheme.TrainingJob:
    """What etcd does to an object: JSON out, JSON back in."""
    return scheme.decode(json.loads(json.dumps(scheme.encode(job))))


@strategies.at_most(500)
@given(strategies.alpha_jobs())
def test_v1alpha1_survives_a_trip_through_the_hub(job: v1alpha1.TrainingJob) -> None:
    hub = through_storage(scheme.convert(job, v1beta1.API_VERSION))
    assert through_storage(scheme.convert(hub, v1alpha1.API_VERSION)) == job


@strategies.at_most(500)
@given(strategies.hub_jobs())
def test_v1beta1_survives_a_trip_through_v1alpha1(job: v1beta1.TrainingJob) -> None:
    spoke = through_storage(scheme.convert(job, v1alpha1.API_VERSION))
    assert through_storage(scheme.convert(spoke, v1beta1.API_VERSION)) == job


@strategies.at_most(500)
@given(strategies.hub_jobs() | strategies.alpha_jobs())
def test_the_typed_stash_never_shows_in_a_hub_object(job: scheme.TrainingJob) -> None:
    down = scheme.convert(job, v1alpha1.API_VERSION)
    assert ANNOTATION not in scheme.to_hub(down).metadata.annotations
    assert ANNOTATION not in scheme.to_hub(job).metadata.annotations


@strategies.at_most(500)
@given(strategies.alpha_jobs())
def test_an_object_born_v1alpha1_in_canonical_form_needs_no_annotation(job: v1alpha1.TrainingJob) -> None:
    # Everything v1alpha1 says fits in the hub, so going down again stashes nothing...
    again = scheme.convert(scheme.to_hub(job), v1alpha1.API_VERSION)
    assert ANNOTATION not in again.metadata.annotations
    # ...and written in canonical form (what the encoder writes), it has no form to keep.
    hub = scheme.convert_unstructured(scheme.encode(job), v1beta1.API_VERSION)
    assert not {ANNOTATION, FORM} & set(hub["metadata"].get("annotations", {}))


@strategies.at_most(500)
@given(strategies.hub_jobs(), st.integers(0, 4))
def test_edits_made_in_v1alpha1_win_over_the_annotation(job: v1beta1.TrainingJob, replicas: int) -> None:
    spoke = scheme.convert(job, v1alpha1.API_VERSION)
    assert isinstance(spoke, v1alpha1.TrainingJob)
    first = spoke.spec.replica_specs[0]
    edited_specs = (attrs.evolve(first, replicas=replicas), *spoke.spec.replica_specs[1:])
    try:
        edited = attrs.evolve(spoke, spec=attrs.evolve(spoke.spec, replica_specs=edited_specs))
        hub = scheme.to_hub(edited)
    except validation.ValidationError:
        # The edit left a chief or success target past the new count: reported, not converted.
        return
    key = next(k for k in hub.spec.replica_specs if k.upper() == first.replica_type)
    assert hub.spec.replica_specs[key].replicas == replicas
    unchanged = attrs.evolve(hub.spec.replica_specs[key], replicas=job.spec.replica_specs[key].replicas)
    assert unchanged == job.spec.replica_specs[key]
    assert hub.spec.failure_policy == job.spec.failure_policy


@strategies.at_most(500)
@given(strategies.hub_jobs())
def test_unstructured_conversion_changes_only_labels_and_annotations_in_metadata(
    job: v1beta1.TrainingJob,
) -> None:
    data = scheme.encode(job)
    data["metadata"]["managedFields"] = [{"manager": "kubectl", "operation": "Update"}]
    down = scheme.convert_unstructured(data, v1alpha1.API_VERSION)
    up = scheme.convert_unstructured(down, v1beta1.API_VERSION)
    for converted in (down, up):
        changed = {
            k
            for k in {*data["metadata"], *converted["metadata"]}
            if data["metadata"].get(k) != converted["metadata"].get(k)
        }
        assert changed <= {"annotations"}
    assert up == data


# --- exact form, at the wire ---------------------------------------------------------------


def canonical(data: Any) -> str:
    """JSON as the apiserver stores it: map keys sorted, lists in order."""
    return json.dumps(data, sort_keys=True, separators=(",", ":"))


def meaning(data: dict[str, Any]) -> v1beta1.TrainingJob:
    """What ``data`` means, in the hub, the conversion's own annotations aside."""
    hub = scheme.to_hub(scheme.decode(data))
    kept = {k: v for k, v in hub.metadata.annotations.items() if k not in (FORM, ANNOTATION)}
    return attrs.evolve(hub, metadata=attrs.evolve(hub.metadata, annotations=kept))


def round_trip(data: dict[str, Any], other: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """``data`` converted to ``other`` and back, each step through JSON as etcd would."""
    there = json.loads(json.dumps(scheme.convert_unstructured(data, other)))
    back = json.loads(json.dumps(scheme.convert_unstructured(there, data["apiVersion"])))
    return there, back


@strategies.at_most(500)
@given(strategies.alpha_wire_jobs())
def test_a_v1alpha1_object_comes_back_as_written(data: dict[str, Any]) -> None:
    written = canonical(data)
    _, back = round_trip(data, v1beta1.API_VERSION)
    assert canonical(data) == written  # the input is left alone
    assert canonical(back) == written


@strategies.at_most(500)
@given(strategies.hub_wire_jobs())
def test_a_v1beta1_object_comes_back_as_written(data: dict[str, Any]) -> None:
    written = canonical(data)
    _, back = round_trip(data, v1alpha1.API_VERSION)
    assert canonical(data) == written
    assert canonical(back) == written


@strategies.at_most(500)
@given(strategies.alpha_wire_jobs() | strategies.hub_wire_jobs())
def test_whatever_admission_admits_converts_both_ways(data: dict[str, Any]) -> None:
    scheme.decode(data)  # admission's own decode, every rule checked
    for version in scheme.SERVED_VERSIONS:
        converted = scheme.convert_unstructured(data, version)
        for again in scheme.SERVED_VERSIONS:
            scheme.convert_unstructured(converted, again)


def with_template_junk(data: dict[str, Any], depth: int, length: int) -> dict[str, Any]:
    """``data`` with junk nested ``depth`` levels below its first template and a ``length``-character label."""
    out = copy.deepcopy(data)
    specs = out["spec"]["replicaSpecs"]
    template = (specs[0] if isinstance(specs, list) else next(iter(specs.values())))["template"]
    junk: dict[str, Any] = {}
    node = junk
    for _ in range(depth - 2):  # spec.x is two levels of the template; each junk level one more
        node["a"] = {}
        node = node["a"]
    template["spec"]["x"] = junk
    template.setdefault("metadata", {}).setdefault("annotations", {})["note"] = "n" * length
    return out


@strategies.at_most(200)
@given(
    strategies.alpha_wire_jobs() | strategies.hub_wire_jobs(),
    st.integers(2, podtemplate.MAX_DEPTH),
    st.integers(0, podtemplate.MAX_STRING),
)
def test_deep_and_large_admitted_objects_convert_exactly_both_ways(
    data: dict[str, Any], depth: int, length: int
) -> None:
    written = with_template_junk(data, depth, length)
    scheme.decode(written)  # at the limits: admitted
    other = v1beta1.API_VERSION if written["apiVersion"] == v1alpha1.API_VERSION else v1alpha1.API_VERSION
    _, back = round_trip(written, other)
    assert canonical(back) == canonical(written)


@pytest.mark.filterwarnings("ignore:The recursion limit will not be reset")
@strategies.at_most(20)
@given(
    strategies.alpha_wire_jobs() | strategies.hub_wire_jobs(), st.integers(podtemplate.MAX_DEPTH + 1, 9000)
)
def test_objects_stored_past_todays_limits_still_convert_exactly(data: dict[str, Any], depth: int) -> None:
    # As in the webhook process: JSON and comparisons this deep recurse in C, once per level.
    sys.setrecursionlimit(max(sys.getrecursionlimit(), servers.RECURSION_LIMIT))
    stored = with_template_junk(data, depth, podtemplate.MAX_STRING + 1)
    with pytest.raises(validation.ValidationError):
        scheme.decode(stored)  # admission refuses it today, yet it may be stored from before
    other = v1beta1.API_VERSION if stored["apiVersion"] == v1alpha1.API_VERSION else v1alpha1.API_VERSION
    _, back = round_trip(stored, other)
    assert back == stored


@strategies.at_most(500)
@given(st.data(), strategies.alpha_wire_jobs() | strategies.hub_wire_jobs())
def test_an_object_breaking_a_validation_rule_still_converts_exactly(
    data: st.DataObject, written: dict[str, Any]
) -> None:
    broken = data.draw(strategies.rule_breaking(written))
    with pytest.raises(validation.ValidationError):
        scheme.decode(broken)  # admission refuses it today, yet it may be stored
    other = v1alpha1.API_VERSION if broken["apiVersion"] == v1beta1.API_VERSION else v1beta1.API_VERSION
    _, back = round_trip(broken, other)
    assert canonical(back) == canonical(broken)


# Records that look right but say anything, at paths that may or may not exist.
segments = st.sampled_from(
    [
        *("spec", "status", "metadata", "replicaSpecs", "replicaStatuses", "terminationPolicy", "chief"),
        *("annotations", "labels", "replicas", "port", "template", "MASTER", "WORKER", "PS", 0, 1, 5),
    ]
)
paths = st.lists(segments, max_size=5)
forged_forms = st.fixed_dictionaries(
    {},
    optional={
        "explicit": st.lists(st.tuples(paths, strategies.json_values) | strategies.json_values, max_size=4),
        "order": st.lists(st.tuples(paths, st.lists(strategies.upper_word)) | strategies.json_values),
    },
).map(json.dumps)


@strategies.at_most(500)
@given(
    strategies.hub_wire_jobs(),
    st.sampled_from([FORM, ANNOTATION]),
    st.text(max_size=30) | strategies.json_values.map(json.dumps) | forged_forms,
)
def test_a_corrupt_conversion_annotation_on_a_hub_object_never_fails_a_conversion(
    written: dict[str, Any], key: str, garbage: str
) -> None:
    stored = copy.deepcopy(written)
    stored["metadata"].setdefault("annotations", {})[key] = garbage
    down, back = round_trip(stored, v1alpha1.API_VERSION)
    # What it means is the stored object's, whatever the annotation said.
    assert meaning(down) == meaning(written)
    if key == FORM:  # gone after the round trip, and with it annotations it alone made
        expected = copy.deepcopy(written)
        if expected["metadata"].get("annotations") == {}:
            del expected["metadata"]["annotations"]
        assert canonical(back) == canonical(expected)


@strategies.at_most(500)
@given(strategies.alpha_wire_jobs(), strategies.alpha_wire_jobs())
def test_a_stale_form_record_never_changes_what_an_object_means(
    first: dict[str, Any], second: dict[str, Any]
) -> None:
    # The record made for one object, found on another (an edit replaced the rest).
    record = scheme.convert_unstructured(first, v1beta1.API_VERSION)["metadata"].get("annotations", {})
    hub = scheme.convert_unstructured(second, v1beta1.API_VERSION)
    plain = scheme.convert_unstructured(hub, v1alpha1.API_VERSION)
    if FORM in record:
        hub["metadata"].setdefault("annotations", {})[FORM] = record[FORM]
    restored = scheme.convert_unstructured(hub, v1alpha1.API_VERSION)
    assert scheme.decode(restored) == scheme.decode(plain)


def dict_paths(data: Any) -> list[tuple[str | int, ...]]:
    """Every object in ``data``, as a form record names it (list entries by replicaType)."""
    out: list[tuple[str | int, ...]] = []
    stack: list[tuple[tuple[str | int, ...], Any]] = [((), data)]
    while stack:
        path, node = stack.pop()
        if isinstance(node, dict):
            out.append(path)
            stack.extend(((*path, k), v) for k, v in node.items())
        elif isinstance(node, list):
            keys = [i.get("replicaType") if isinstance(i, dict) else None for i in node]
            named = all(isinstance(k, str) for k in keys) and len(set(keys)) == len(keys)
            stack.extend(((*path, keys[i] if named else i), v) for i, v in enumerate(node))
    return out


field_names = st.sampled_from(
    [
        *("replicas", "port", "replicaIndex", "terminationPolicy", "cleanupPodPolicy", "runtimeId"),
        *("backend", "status", "state", "active", "labels", "annotations", "x"),
    ]
)
field_values = st.sampled_from([0, 1, 3, "All", "Running", "WORKER", {}, [], None]) | strategies.json_values


@strategies.at_most(500)
@given(st.data(), strategies.hub_wire_jobs())
def test_a_forged_form_record_never_changes_what_an_object_means(
    data: st.DataObject, written: dict[str, Any]
) -> None:
    view = scheme.convert_unstructured(written, v1alpha1.API_VERSION)
    nodes = dict_paths(view)
    explicit = data.draw(
        st.lists(st.tuples(st.sampled_from(nodes), field_names, field_values), min_size=1, max_size=4)
    )
    record = {"explicit": [[[*path, key], value] for path, key, value in explicit]}
    stored = copy.deepcopy(written)
    stored["metadata"].setdefault("annotations", {})[FORM] = json.dumps(record)
    down = scheme.convert_unstructured(stored, v1alpha1.API_VERSION)
    assert meaning(down) == meaning(written)
