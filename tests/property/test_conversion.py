"""Conversion between v1alpha1 and the v1beta1 hub loses nothing, in either direction."""

import json

import attrs
from hypothesis import given
from hypothesis import strategies as st
from testkit import strategies

from kubetrain.api import scheme, v1alpha1, v1beta1, validation
from kubetrain.api.v1alpha1 import trainingjob_conversion

ANNOTATION = trainingjob_conversion.CONVERSION_DATA


def through_storage(job: scheme.TrainingJob) -> scheme.TrainingJob:
    """What etcd does to an object: JSON out, JSON back in."""
    return scheme.decode(json.loads(json.dumps(scheme.encode(job))))


@given(strategies.alpha_jobs())
def test_v1alpha1_survives_a_trip_through_the_hub(job: v1alpha1.TrainingJob) -> None:
    hub = through_storage(scheme.convert(job, v1beta1.API_VERSION))
    assert through_storage(scheme.convert(hub, v1alpha1.API_VERSION)) == job


@given(strategies.hub_jobs())
def test_v1beta1_survives_a_trip_through_v1alpha1(job: v1beta1.TrainingJob) -> None:
    spoke = through_storage(scheme.convert(job, v1alpha1.API_VERSION))
    assert through_storage(scheme.convert(spoke, v1beta1.API_VERSION)) == job


@given(strategies.hub_jobs() | strategies.alpha_jobs())
def test_the_conversion_annotation_never_shows_in_a_hub_object(job: scheme.TrainingJob) -> None:
    down = scheme.convert(job, v1alpha1.API_VERSION)
    assert ANNOTATION not in scheme.to_hub(down).metadata.annotations
    assert ANNOTATION not in scheme.to_hub(job).metadata.annotations


@given(strategies.alpha_jobs())
def test_an_object_born_v1alpha1_needs_no_annotation(job: v1alpha1.TrainingJob) -> None:
    # Everything v1alpha1 says fits in the hub, so going down again stashes nothing.
    again = scheme.convert(scheme.to_hub(job), v1alpha1.API_VERSION)
    assert ANNOTATION not in again.metadata.annotations


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
