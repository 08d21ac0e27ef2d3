"""Whatever arrives, decoding either succeeds or raises our ValidationError — nothing else."""

import copy
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from testkit import strategies, walk

from kubetrain.api import scheme, validation

jobs = strategies.hub_jobs() | strategies.alpha_jobs()


def decode_or_reject(data: Any) -> None:
    """Decoding succeeds, or fails with field errors; any other exception fails the test."""
    try:
        scheme.decode(data)
    except validation.ValidationError as e:
        errors = e.errors
    else:
        return
    assert errors, "a rejection names at least one problem"
    assert all(err.message for err in errors)


@given(strategies.json_values)
def test_arbitrary_json_is_rejected_cleanly(data: Any) -> None:
    decode_or_reject(data)


@strategies.at_most(1000)
@given(jobs, st.data())
def test_any_single_mutation_is_accepted_or_rejected_cleanly(
    job: scheme.TrainingJob, data: st.DataObject
) -> None:
    doc = json.loads(json.dumps(scheme.encode(job)))
    target = data.draw(st.sampled_from(walk.json_paths(doc)[1:]))
    parent = doc
    for key in target[:-1]:
        parent = parent[key]
    mutation = data.draw(st.sampled_from(["replace", "delete", "add-unknown"]))
    if mutation == "replace":
        parent[target[-1]] = data.draw(strategies.json_values)
    elif mutation == "delete":
        del parent[target[-1]]
    elif isinstance(parent[target[-1]], dict):
        parent[target[-1]]["unexpectedField"] = 1
    decode_or_reject(copy.deepcopy(doc))


@strategies.at_most(1000)
@given(jobs, st.data())
def test_unknown_fields_are_named_with_their_path(job: scheme.TrainingJob, data: st.DataObject) -> None:
    doc = json.loads(json.dumps(scheme.encode(job)))
    objects = [p for p in walk.json_paths(doc) if isinstance(walk.at(doc, p), dict) and _typed(p)]
    target = data.draw(st.sampled_from(objects))
    walk.at(doc, target)["zzUnknown"] = True
    with pytest.raises(validation.ValidationError) as e:
        scheme.decode(doc)
    expected = validation.format_path((*target, "zzUnknown"))
    assert f"{expected}: unknown field" in str(e.value).splitlines()


FREE_FORM = {"template", "options", "labels", "annotations", "rdzvConf"}
# Maps whose keys the user names: replica types, and resource names under tensorboard.resources.
KEYED_BY_USER = ("replicaSpecs", "replicaStatuses", "limits", "requests")


def _typed(path: tuple[Any, ...]) -> bool:
    """Objects whose keys the API defines: not free-form JSON, and not maps keyed by user names."""
    if any(k in FREE_FORM for k in path if isinstance(k, str)):
        return False
    return not (path and path[-1] in KEYED_BY_USER)
