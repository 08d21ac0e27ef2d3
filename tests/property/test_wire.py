"""Every API type survives encoding to the wire and decoding back."""

import inspect
import json

import attrs
from hypothesis import given, settings
from testkit import strategies, walk

from kubetrain.api import meta, schema, scheme, v1alpha1, v1beta1, wire
from kubetrain.api.v1beta1 import framework_types, policy_types, trainingjob_types

jobs = strategies.hub_jobs() | strategies.alpha_jobs()


def api_types() -> set[type]:
    modules = (meta, framework_types, policy_types, trainingjob_types, v1alpha1.trainingjob_types)
    return {
        cls
        for m in modules
        for _, cls in inspect.getmembers(m, inspect.isclass)
        if attrs.has(cls) and cls.__module__ == m.__name__
    }


@strategies.at_most(1000)
@given(jobs)
def test_every_nested_value_round_trips_through_json(job: scheme.TrainingJob) -> None:
    for value in walk.values(job):
        data = json.loads(json.dumps(wire.unstructure(value)))
        assert wire.structure(data, type(value)) == value


@strategies.at_most(1000)
@given(jobs)
def test_encoding_omits_exactly_the_defaults(job: scheme.TrainingJob) -> None:
    for value in walk.values(job):
        data = wire.unstructure(value)
        for a in attrs.fields(type(value)):
            default = a.default.factory() if isinstance(a.default, attrs.Factory) else a.default  # type: ignore[misc]
            present = schema.wire_name(a) in data
            if a.name in ("api_version", "kind"):
                assert present
            else:
                assert present == (default is attrs.NOTHING or getattr(value, a.name) != default), a.name


def test_the_generators_reach_every_api_type() -> None:
    seen: set[type] = set()

    @settings(max_examples=1000, database=None)
    @given(jobs)
    def collect(job: scheme.TrainingJob) -> None:
        seen.update(type(v) for v in walk.values(job))

    collect()
    assert {c.__name__ for c in api_types() - seen} == set()
    assert v1beta1.TrainingJob in seen
    assert v1alpha1.TrainingJob in seen
