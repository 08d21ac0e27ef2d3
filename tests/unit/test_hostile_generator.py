"""The hostile-input generator (kubetrain_bench.hostile.generator): reproducible, varied, cheap to run;
its short jobs and runtimes (shipped, mutate_short, references) as the runner must write them."""

from __future__ import annotations

import collections
import contextlib
import copy
import json
import re
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from kubetrain.api import validation
from kubetrain.operator import expansion, intake
from kubetrain_bench.hostile import generator, references, shipped

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
    jobs = [d for d in many if d.family == "job"]
    assert {d.sample for d in jobs} == {s for _v, s, _b in generator.load_samples()}
    assert {d.sample for d in many if d.family == "short"} == {s for s, _b in shipped.short_samples()}
    assert {d.sample for d in many if d.family == "runtime"} == {f"runtime/{n}" for n in shipped.runtimes()}
    for d in many:
        if isinstance(d.body.get("apiVersion"), str):
            assert d.body["apiVersion"].endswith(d.version)


def test_every_mutation_kind_is_reached(many: list[generator.Doc]) -> None:
    reached = collections.Counter(k for d in many if d.family == "job" for k in d.kinds)
    assert set(reached) == set(generator.KINDS)
    assert min(reached.values()) > COUNT // 100, reached


def test_about_one_document_in_ten_is_an_unmutated_sample(many: list[generator.Doc]) -> None:
    unmutated = [d for d in many if not d.kinds]
    assert 0.07 * COUNT < len(unmutated) < 0.13 * COUNT
    assert all(d.label.startswith("sample") for d in unmutated)
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
    before = json.dumps([generator.load_samples(), shipped.short_samples(), shipped.runtimes()])
    list(generator.documents(3, 500))
    list(generator.documents(3, 500, mix=generator.NEW))
    assert json.dumps([generator.load_samples(), shipped.short_samples(), shipped.runtimes()]) == before


# --- short jobs and runtimes ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def new() -> list[generator.Doc]:
    return list(generator.documents(12, 4000, mix=generator.NEW, namespace="ns"))


def test_a_whole_job_is_the_same_in_any_mix_and_start_continues_the_numbering() -> None:
    mixed = list(generator.documents(12, 400))
    jobs = list(generator.documents(12, 400, mix={"job": 1}))
    assert {d.family for d in mixed} == {"job", "short", "runtime"}
    for a, b in zip(mixed, jobs, strict=True):
        if a.family == "job":
            assert (a.label, json.dumps(a.body)) == (b.label, json.dumps(b.body))
    tail = list(generator.documents(12, 100, start=300))
    assert [d.index for d in tail] == list(range(300, 400))
    assert [json.dumps([d.body, d.label]) for d in tail] == [
        json.dumps([d.body, d.label]) for d in mixed[300:]
    ]


def test_the_families_come_in_their_shares(many: list[generator.Doc], new: list[generator.Doc]) -> None:
    families = collections.Counter(d.family for d in many)
    for family, share in generator.MIX.items():
        # A reference mutation of a short job may make the document a runtime write.
        assert abs(families[family] / COUNT - share) < 0.04, families
    for d in many:
        kind = d.body.get("kind")
        assert kind == ("TrainingRuntime" if d.family == "runtime" else "TrainingJob")
        if d.family != "job":
            assert d.version == "v1beta1"
    assert {d.family for d in new} == {"short", "runtime"}


def test_every_kind_of_short_job_and_runtime_is_reached(new: list[generator.Doc]) -> None:
    short = collections.Counter(
        k for d in new if d.sample.startswith("short/") or "ref_" in d.label for k in d.kinds
    )
    assert set(generator.SHORT_KINDS) <= set(short), short
    assert set(generator.KINDS) <= set(short), set(generator.KINDS) - set(short)
    runtimes = collections.Counter(k for d in new if d.family == "runtime" for k in d.kinds)
    assert set(generator.RUNTIME_KINDS) <= set(runtimes), runtimes
    assert min(short[k] for k in generator.SHORT_KINDS) > 15, short
    labels = "\n".join(d.label for d in new)
    # The pod mutations go into the trainer section as well as into a container the job overrides.
    for kind in ("resources_junk", "image_type", "args_items", "huge_string", "pod_invalid", "deep_nesting"):
        assert f"{kind}@spec.trainer." in labels, kind
        assert re.search(rf"{kind}@spec\.replicaSpecs\.\w+\.template", labels), kind
    assert "override@spec.replicaSpecs = " in labels  # a wrong type where the expansion looks
    assert "override@spec.framework = null" in labels


def test_a_short_job_names_its_runtime_and_a_runtime_is_written_then_named_by_its_short_job(
    new: list[generator.Doc],
) -> None:
    for d in new:
        if d.family == "short" and not d.kinds:
            original = dict(shipped.short_samples())[d.sample]
            assert d.body["spec"] == original["spec"]
        if d.family == "runtime" and not d.kinds:
            original = shipped.runtimes()[d.sample.removeprefix("runtime/")]
            assert (d.body["kind"], d.body["spec"]) == ("TrainingRuntime", original["spec"])
        if d.family == "runtime":
            assert d.then is not None or d.name is None
            if d.then is not None:
                assert d.then["spec"]["runtimeRef"] == {"kind": "TrainingRuntime", "name": d.name}
                assert d.then["metadata"]["name"].startswith(f"h{d.index:05d}-")
        for runtime in d.before:
            assert runtime["kind"] == "TrainingRuntime"
            assert "namespace" not in runtime["metadata"]
    gpu = [d for d in new if d.family == "runtime" and "its job asks for a GPU" in d.label]
    assert gpu
    assert all(d.then is None or "nvidia.com/gpu" in json.dumps(d.then["spec"]["trainer"]) for d in gpu)


def _follow(d: generator.Doc) -> list[str]:
    """The names a runtime document's chain of TrainingRuntimes goes through, from the body."""
    written = {r["metadata"]["name"]: r for r in d.before}
    written[d.body["metadata"]["name"]] = d.body  # a write replaces what was there
    seen, at = [], d.body
    while at is not None and at["metadata"]["name"] not in seen:
        seen.append(at["metadata"]["name"])
        ref = at["spec"].get("runtimeRef")
        at = written.get(ref["name"]) if ref and ref.get("kind") == "TrainingRuntime" else None
    return [*seen, *([at["metadata"]["name"]] if at is not None else [])]


def test_loops_and_chains_are_written_in_an_order_each_step_of_which_the_webhook_could_store(
    new: list[generator.Doc],
) -> None:
    loops = [d for d in new if d.kinds[:1] == ("ref_loop",)]
    chains = [d for d in new if d.kinds[:1] == ("ref_chain",)]
    assert {len(d.before) for d in loops} == {0, 2, 3}
    assert {len(d.before) for d in chains} == {references.MAX_DEPTH}
    for d in loops:
        path = _follow(d)
        assert path[0] == path[-1], path
        assert len(path) == max(len(d.before), 1) + 1, path
        # Each runtime before it builds only on one written before it: no step is a loop yet.
        names = [r["metadata"]["name"] for r in d.before]
        for i, r in enumerate(d.before):
            ref = r["spec"].get("runtimeRef")
            assert ref is None or ref["name"] in names[:i]
        assert d.family == "runtime"
        assert d.then is not None
    for d in chains:
        names = [r["metadata"]["name"] for r in d.before]
        for i, r in enumerate(d.before):
            assert (r["spec"].get("runtimeRef") or {}).get("name") == (names[i - 1] if i else None)
        if d.family == "runtime":  # one more: past the limit
            assert d.body["spec"]["runtimeRef"]["name"] == names[-1]
            assert d.then is not None
        else:
            assert d.body["spec"]["runtimeRef"] == {"kind": "TrainingRuntime", "name": names[-1]}


def test_names_are_unique_across_documents_jobs_and_runtimes(new: list[generator.Doc]) -> None:
    seen: dict[str, int] = {}
    for d in new:
        names = {*d.runtime_names, *([d.name] if d.family != "runtime" and d.name else [])}
        if d.then is not None:
            names.add(d.then["metadata"]["name"])
        for name in names:
            assert name.startswith(f"h{d.index:05d}-"), name
            assert seen.setdefault(name, d.index) == d.index, name


def test_no_short_job_asks_for_more_than_eight_replicas_once_expanded(new: list[generator.Doc]) -> None:
    for d in new:
        job = d.then if d.family == "runtime" else d.body
        if job is None or not isinstance(job.get("spec"), dict):
            continue
        ref = job["spec"].get("runtimeRef")
        name = ref.get("name") if isinstance(ref, dict) else None
        written = {n: r for r in (*d.before, d.body) if isinstance(n := r["metadata"].get("name"), str)}
        chain: list[Any] = []
        while isinstance(name, str) and name not in [c["metadata"].get("name") for c in chain]:
            found = written.get(name) or shipped.runtimes().get(name)
            if found is None:
                break
            chain.append(found)
            base = found["spec"].get("runtimeRef") if isinstance(found.get("spec"), dict) else None
            name = base.get("name") if isinstance(base, dict) else None
        assert shipped.expanded_replicas(job, chain) <= generator.MAX_TOTAL_REPLICAS, d.label


def _resolve(d: generator.Doc) -> expansion.Resolve:
    written = [
        {**r, "metadata": {**r["metadata"], "namespace": "ns"}}
        for r in (*d.before, d.body)
        if r is not d.body or d.family == "runtime"
    ]
    return expansion.from_documents([*shipped.runtimes().values(), *written])


def test_the_unmutated_and_the_well_referenced_short_jobs_expand_into_jobs_intake_accepts(
    new: list[generator.Doc],
) -> None:
    good = [
        d
        for d in new
        if d.family == "short" and (not d.kinds or d.kinds == ("ref_own",) or "own namespace" in d.label)
    ]
    assert len(good) > 50
    for d in good:
        job = copy.deepcopy(d.body)
        job["metadata"]["namespace"] = "ns"
        intake.decode(expansion.expand(job, _resolve(d)).obj)


@pytest.fixture
def deep() -> Iterator[None]:
    """Python's recursion limit as the webhook server sets it (templates nested 500 deep)."""
    before = sys.getrecursionlimit()
    sys.setrecursionlimit(max(before, 12_000))
    yield
    sys.setrecursionlimit(before)


@pytest.mark.usefixtures("deep")
def test_no_short_job_crashes_the_expansion(new: list[generator.Doc]) -> None:
    """The expansion of every short job (a document, or a stored runtime's) is a job or a
    ValidationError, never another exception (a 500 from the webhook: it found those)."""
    for d in new[:1500]:
        jobs = [d.body] if d.family == "short" else ([d.then] if d.then is not None else [])
        for job in jobs:
            obj = {**job, "metadata": {**job["metadata"], "namespace": "ns"}}
            with contextlib.suppress(validation.ValidationError):
                intake.decode(expansion.expand(obj, _resolve(d)).obj, weigh=True)
