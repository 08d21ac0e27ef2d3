"""Whose an object is: its controller's uid, read once for the operator and the client."""

from __future__ import annotations

from typing import Any

from testkit.builders import a_job

from kubetrain.api import meta
from kubetrain.client import pods
from kubetrain.operator.runtime import cache


def pod(*refs: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"name": "tj-worker-0", "namespace": "ns", "ownerReferences": list(refs)}}


def test_the_controller_is_the_reference_marked_controller() -> None:
    ref = {"kind": "TrainingJob", "name": "tj", "uid": "u-1", "controller": True}
    other = {"kind": "ConfigMap", "name": "x", "uid": "u-2"}
    assert meta.controller_of(pod(other, ref)) == ref
    assert meta.controller_of(pod(other)) is None
    assert meta.controller_of({"metadata": {}}) is None
    assert cache.controller_of is meta.controller_of


def test_an_object_is_its_controllers_not_any_owners() -> None:
    mine = {"kind": "TrainingJob", "name": "tj", "uid": "u-1", "controller": True}
    assert meta.controlled_by(pod(mine), "u-1")
    # A predecessor of the same name has another uid; an owner that does not control is no claim.
    assert not meta.controlled_by(pod(mine), "u-0")
    assert not meta.controlled_by(pod({**mine, "controller": False}), "u-1")
    job = a_job("tj").uid("u-1").framework("generic").replicas("Worker", 1).build()
    assert pods.owned(pod(mine), job)
    assert not pods.owned(pod({**mine, "uid": "u-0"}), job)
