"""The hostile-input generator (kubetrain_bench.hostile.generator): reproducible, varied, cheap to run."""

from __future__ import annotations

import collections
import json
import re

import pytest

from kubetrain_bench.hostile import generator

COUNT = 10_000


@pytest.fixture(scope="module")
def many() -> list[generator.Doc]:
    return list(generator.documents(12, COUNT))


def test_the_same_seed_gives_the_same_documents() -> None:
    first = [(d.body, d.version, d.kinds, d.label) for d in generator.documents(5, 300)]
    again = [(d.body, d.version, d.kinds, d.label) for d in generator.documents(5, 300)]
    assert json.dumps(first) == json.dumps(again)
    other = [(d.body, d.version, d.kinds, d.label) for d in generator.documents(6, 300)]
    assert json.dumps(first) != json.dumps(other)


def test_a_shorter_run_is_a_prefix_of_a_longer_one(many: list[generator.Doc]) -> None:
    short = list(generator.documents(12, 200))
    assert [d.label for d in short] == [d.label for d in many[:200]]
    assert json.dumps([d.body for d in short]) == json.dumps([d.body for d in many[:200]])


def test_both_versions_and_every_sample_are_used(many: list[generator.Doc]) -> None:
    versions = collections.Counter(d.version for d in many)
    assert set(versions) == {"v1beta1", "v1alpha1"}
    assert min(versions.values()) > COUNT // 3
    assert {d.sample for d in many} == {s for _v, s, _b in generator.load_samples()}
    for d in many:
        if isinstance(d.body.get("apiVersion"), str):
            assert d.body["apiVersion"].endswith(d.version)


def test_every_mutation_kind_is_reached(many: list[generator.Doc]) -> None:
    reached = collections.Counter(k for d in many for k in d.kinds)
    assert set(reached) == set(generator.KINDS)
    assert min(reached.values()) > COUNT // 100, reached


def test_about_one_document_in_ten_is_an_unmutated_sample(many: list[generator.Doc]) -> None:
    unmutated = [d for d in many if not d.kinds]
    assert 0.07 * COUNT < len(unmutated) < 0.13 * COUNT
    assert all(d.label == "sample" for d in unmutated)
    assert all(1 <= len(d.kinds) <= 3 for d in many if d.kinds)


def test_names_are_unique_and_unmutated_ones_are_short_dns_labels(many: list[generator.Doc]) -> None:
    names = [d.name for d in many if d.name is not None]
    assert len(names) == len(set(names))
    label = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
    for d in many:
        prefix = f"h{d.index:05d}-"
        if d.name is not None:
            assert d.name.startswith(prefix), "a mutated name keeps its unique prefix"
        if "metadata.name" not in d.label and d.name is not None:
            assert label.match(d.name), d.name
            assert len(d.name) <= generator.NAME_LENGTH, d.name


def test_no_document_asks_for_more_than_eight_replicas(many: list[generator.Doc]) -> None:
    assert max(generator.total_replicas(d.body) for d in many) <= generator.MAX_TOTAL_REPLICAS


def test_the_hand_found_cases_are_among_them(many: list[generator.Doc]) -> None:
    labels = "\n".join(d.label for d in many)
    for kind in ("resources_junk", "no_image", "container_name", "image_type", "args_items"):
        assert f"{kind}@spec.replicaSpecs" in labels
    assert re.search(r"deep_nesting@\S*template\S* \(500 levels\)", labels)
    assert re.search(r"huge_string@\S*(image|args|command) \(1048576 chars\)", labels)
    bodies = [json.dumps(d.body) for d in many if "resources_junk" in d.kinds]
    assert any('"resources": {"limits": 3}' in b for b in bodies)
    assert any('"resources": {"limits": 1.5}' in b for b in bodies)
    assert any('"resources": {"limits": "x"}' in b for b in bodies)
    names = [json.dumps(d.body) for d in many if "container_name" in d.kinds]
    assert any('"name": "-1"' in b for b in names)


def test_mutations_do_not_touch_the_samples_they_start_from() -> None:
    before = json.dumps(generator.load_samples())
    list(generator.documents(3, 500))
    assert json.dumps(generator.load_samples()) == before
