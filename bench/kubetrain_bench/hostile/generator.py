"""Hostile documents: the repository's samples of both versions, short jobs and runtimes, mutated at
random, reproducibly.

:func:`documents` makes documents of three families (:data:`MIX`, drawn per document):

- ``job``: a whole TrainingJob, from every sample in ``samples/v1beta1`` and ``samples/v1alpha1``
  (each version half of the time), with one to three mutations of the kinds in :data:`KINDS` at
  random paths, inside kubetrain's own fields and inside pod templates;
- ``short``: a job made from a runtime, from ``samples/v1beta1/short``, mutated the same ways
  (:data:`KINDS`, each pod mutation going into the ``trainer`` section as often as into a
  container the job overrides, :mod:`.mutate_short`), with fields of its own over the runtime's
  (``override``), or with a reference that cannot resolve or only just does (:mod:`.references`:
  those need TrainingRuntimes written first, :attr:`Doc.before`);
- ``runtime``: a copy of a shipped runtime (``config/runtimes``) as a TrainingRuntime of the
  namespace, mutated the same ways and in what only a runtime says (its trainer policy,
  accelerators, runtimeRef); if it is stored, the short sample made from it, naming it, is created
  (:attr:`Doc.then`), so a runtime admitted that makes a job admitted that cannot run is seen.

About one document in ten of each family is unmutated, so something is always accepted.

The same ``seed`` gives the same documents, and ``documents(seed, n)`` is a prefix of
``documents(seed, m)`` for ``n <= m``: a master ``random.Random(seed)`` draws one seed per
document, and the family is drawn apart from the document's own draws, so a ``job`` document is
the same whatever the mix (``mix={"job": 1}`` gives exactly the whole-job documents of before).
Every document has a unique ``metadata.name`` (a DNS label of at most 40
characters, unless a mutation made it something else on purpose, and then it still starts
with the document's unique prefix; the runtimes a document writes are named with the same
prefix), and none asks for more than :data:`MAX_TOTAL_REPLICAS`
replicas in total (a short job: once expanded): a mutation that sets a count sets it out of
bounds or small, and a document whose mutations would add up to more is drawn again.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import random
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from kubetrain_bench import samples
from kubetrain_bench.hostile import (
    mutate_pods,
    mutate_rules,
    mutate_short,
    mutate_values,
    references,
    shipped,
)
from kubetrain_bench.hostile.walk import Mutation, total_replicas

VERSIONS = ("v1beta1", "v1alpha1")
MAX_TOTAL_REPLICAS = 8
NAME_LENGTH = 40
UNMUTATED = 0.1
NAMESPACE = "hostile"
FAMILIES = ("job", "short", "runtime")
# The share of each family; make bench-hostile's default.
MIX: Mapping[str, float] = {"job": 0.75, "short": 0.15, "runtime": 0.10}
NEW = {"short": 0.6, "runtime": 0.4}  # the short jobs and runtimes alone
# A short job has a reference mutation this often (else its fields are mutated); before the
# mutations of its fields, a container of its own over the runtime's this often (for them to
# change), and a field of its own over the runtime's (an override) this often.
REFERENCE = 0.35
CONTAINER_OVERRIDE = 0.4
OVERRIDE = 0.35
# A runtime's short job asks for a GPU this often (the runtime's accelerator profile applies).
GPU_JOB = 0.3
_FAMILY_SALT = 0x5EED_F00D_CAFE


@dataclasses.dataclass(frozen=True)
class Doc:
    """One hostile document: the JSON body, its version, and what was done to which sample.

    ``family`` says what the body is: ``job`` and ``short`` are TrainingJobs (created), ``runtime``
    a TrainingRuntime (written: created, or replaced if it exists). ``before`` are TrainingRuntimes
    the runner writes first, in order, into the same namespace; ``then`` the short job it creates
    once a runtime document was stored."""

    index: int
    body: dict[str, Any]
    version: str  # "v1beta1" or "v1alpha1"
    sample: str  # e.g. "v1beta1/pytorch-ddp", "short/torch-distributed", "runtime/mpi-distributed"
    kinds: tuple[str, ...]  # the mutation kinds applied, in order; () for an unmutated sample
    label: str  # "kind@path; kind@path", or "sample"
    family: str = "job"
    before: tuple[dict[str, Any], ...] = ()
    then: dict[str, Any] | None = None

    @property
    def name(self) -> str | None:
        return _name(self.body)

    @property
    def runtime_names(self) -> tuple[str, ...]:
        """The runtimes this document writes (before it, and itself if it is one)."""
        names = [_name(b) for b in (*self.before, *([self.body] if self.family == "runtime" else []))]
        return tuple(dict.fromkeys(n for n in names if n is not None))


def _name(body: Mapping[str, Any]) -> str | None:
    meta = body.get("metadata")
    name = meta.get("name") if isinstance(meta, dict) else None
    return name if isinstance(name, str) else None


@functools.cache
def load_samples() -> list[tuple[str, str, dict[str, Any]]]:
    """(version, "version/stem", body) of every sample, in a fixed order (read once: copy before
    changing one)."""
    return [(v, f"{v}/{name}", samples.load(v, name)) for v in VERSIONS for name in samples.names(v)]


KINDS: dict[str, Mutation] = {
    "resources_junk": mutate_pods.m_resources,
    "no_image": mutate_pods.m_no_image,
    "container_name": mutate_pods.m_container_name,
    "image_type": mutate_pods.m_image_type,
    "args_items": mutate_pods.m_args_items,
    "deep_nesting": mutate_pods.m_deep_nesting,
    "huge_string": mutate_pods.m_huge_string,
    "unknown_field": mutate_values.m_unknown_field,
    "wrong_type": mutate_values.m_wrong_type,
    "template_wrong_type": mutate_values.m_template_wrong_type,
    "number_extreme": mutate_values.m_number_extreme,
    "replicas": mutate_values.m_replicas,
    "replica_type": mutate_values.m_replica_type,
    "enum": mutate_values.m_enum,
    "missing_required": mutate_rules.m_missing_required,
    "unicode": mutate_values.m_unicode,
    "empty": mutate_values.m_empty,
    "null": mutate_values.m_null,
    "duplicate": mutate_rules.m_duplicate,
    "long_name": mutate_rules.m_long_name,
    "own_field": mutate_rules.m_own_field,
    "pod_invalid": mutate_pods.m_pod_invalid,
}
# The kinds only short jobs and runtimes have (besides those of KINDS, which they have too).
SHORT_KINDS = ("override", "container_override", "trainer_value", *references.KINDS)
RUNTIME_KINDS = ("trainer_policy", "accelerators", "runtime_ref")


def short_kinds() -> dict[str, Mutation]:
    """The mutations of a short job's fields: :data:`KINDS` (the pod kinds in their trainer form
    half of the time) and the trainer's own values."""
    return mutate_short.trainer_kinds(KINDS)


def runtime_kinds(namespace: str) -> dict[str, Mutation]:
    """The mutations of a runtime: :data:`KINDS`, and what only a runtime says."""
    return {**KINDS, **mutate_short.runtime_kinds(namespace)}


# --- the generator ---------------------------------------------------------------------------------


def unique_name(index: int, sample_name: str) -> str:
    prefix = f"h{index:05d}-"
    return (prefix + sample_name)[:NAME_LENGTH].rstrip("-")


def _mutate(
    rng: random.Random,
    body: dict[str, Any],
    version: str,
    kinds: Mapping[str, Mutation] = KINDS,
    most: int = 3,
) -> tuple[list[str], list[str]]:
    """1-``most`` mutations; deep nesting always last, so no other mutation has to walk (or copy) it."""
    chosen = [rng.choice(list(kinds)) for _ in range(rng.randint(1, most))]
    if "deep_nesting" in chosen:
        chosen = [k for k in chosen if k != "deep_nesting"] + ["deep_nesting"]
    others = [k for k in kinds if k != "deep_nesting"]
    kinds_done, wheres = [], []
    for kind in chosen:
        for candidate in (kind, *rng.sample(others, 4)):  # another kind when this one has no target
            where = kinds[candidate](rng, body, version)
            if where is not None:
                kinds_done.append(candidate)
                wheres.append(f"{candidate}@{where}")
                break
    return kinds_done, wheres


def _bounded(
    rng: random.Random,
    body: dict[str, Any],
    mutate: Callable[[random.Random, dict[str, Any]], tuple[list[str], list[str]]],
    replicas: Callable[[dict[str, Any]], int],
) -> tuple[dict[str, Any], list[str], list[str]]:
    """``body`` mutated by ``mutate(rng, copy) -> (kinds, wheres)``, drawn again (10 times at most)
    while ``replicas(copy)`` is over the bound; unmutated if every draw was."""
    for _attempt in range(10):
        candidate = copy.deepcopy(body)
        kinds, wheres = mutate(rng, candidate)
        if replicas(candidate) <= MAX_TOTAL_REPLICAS:
            return candidate, kinds, wheres
    return body, [], []


def _family(doc_seed: int, mix: Mapping[str, float]) -> str:
    """The document's family, drawn apart from its own draws (so a job is the same in any mix)."""
    weights = [mix.get(f, 0.0) for f in FAMILIES]
    return random.Random(doc_seed ^ _FAMILY_SALT).choices(FAMILIES, weights)[0]


def _job(index: int, rng: random.Random) -> Doc:
    """A whole job, of either version."""
    every = load_samples()
    version = rng.choice(VERSIONS)
    _v, sample, original = rng.choice([s for s in every if s[0] == version])
    name = unique_name(index, original["metadata"]["name"])
    body: dict[str, Any] = copy.deepcopy(original)
    body["metadata"]["name"] = name
    kinds: list[str] = []
    wheres: list[str] = []
    if rng.random() >= UNMUTATED:
        body, kinds, wheres = _bounded(rng, body, lambda r, b: _mutate(r, b, version), total_replicas)
    return Doc(
        index=index,
        body=body,
        version=version,
        sample=sample,
        kinds=tuple(kinds),
        label="; ".join(wheres) if wheres else "sample",
    )


def _short(index: int, rng: random.Random, namespace: str) -> Doc:
    """A job made from a runtime: mutated fields, or a reference (which may make the document the
    write of a runtime the job names)."""
    sample, original = rng.choice(shipped.short_samples())
    runtime = shipped.runtimes()[original["spec"]["runtimeRef"]["name"]]
    body: dict[str, Any] = copy.deepcopy(original)
    body["metadata"]["name"] = unique_name(index, original["metadata"]["name"])
    kinds: list[str] = []
    wheres: list[str] = []
    built = references.Built(body, "", chain=[runtime])
    if rng.random() >= UNMUTATED:
        if rng.random() < REFERENCE:
            kind = rng.choice(list(references.KINDS))
            built = references.KINDS[kind](rng, body, runtime, f"h{index:05d}", namespace)
            kinds, wheres = [kind], [f"{kind}@{built.where}"]
        else:
            chain = built.chain
            mutations = short_kinds()
            first = (
                ("container_override", CONTAINER_OVERRIDE, mutate_short.m_container_override(runtime)),
                ("override", OVERRIDE, mutate_short.m_override(runtime)),
            )

            def mutate(r: random.Random, b: dict[str, Any]) -> tuple[list[str], list[str]]:
                done, wheres = [], []
                for kind, share, m in first:
                    where = m(r, b, "v1beta1") if r.random() < share else None
                    if where is not None:
                        done.append(kind)
                        wheres.append(f"{kind}@{where}")
                more_k, more_w = _mutate(r, b, "v1beta1", mutations, most=3 - len(done))
                return done + more_k, wheres + more_w

            built.body, kinds, wheres = _bounded(
                rng, body, mutate, lambda b: shipped.expanded_replicas(b, chain)
            )
    return Doc(
        index=index,
        body=built.body,
        version="v1beta1",
        sample=sample if built.family == "short" else f"runtime/{runtime['metadata']['name']}",
        kinds=tuple(kinds),
        label="; ".join(wheres) if wheres else "sample",
        family=built.family,
        before=tuple(built.before),
        then=built.then,
    )


def _runtime(index: int, rng: random.Random, namespace: str) -> Doc:
    """A shipped runtime, mutated, as a TrainingRuntime of the namespace; then its short sample."""
    name, original = rng.choice(list(shipped.runtimes().items()))
    body = references.training_runtime(original, unique_name(index, name))
    kinds: list[str] = []
    wheres: list[str] = []
    job = copy.deepcopy(shipped.short_sample_for(name) or {})
    job["metadata"]["name"] = unique_name(index, job["metadata"]["name"])
    gpu = rng.random() < GPU_JOB
    if gpu:
        job["spec"]["trainer"]["resourcesPerNode"] = {"limits": {"nvidia.com/gpu": 1}}

    def replicas(b: dict[str, Any]) -> int:
        spec = b.get("spec")
        ref = spec.get("runtimeRef") if isinstance(spec, dict) else None
        named = ref.get("name") if isinstance(ref, dict) else None
        base = shipped.runtimes().get(named) if isinstance(named, str) else None
        return shipped.expanded_replicas(job, [b, *([base] if base is not None else [])])

    if rng.random() >= UNMUTATED:
        mutations = runtime_kinds(namespace)
        body, kinds, wheres = _bounded(rng, body, lambda r, b: _mutate(r, b, "v1beta1", mutations), replicas)
    then = None
    if _name(body) is not None:
        then = copy.deepcopy(job)
        then["spec"]["runtimeRef"] = {"kind": shipped.KIND, "name": _name(body)}
    label = "; ".join(wheres) if wheres else "sample"
    return Doc(
        index=index,
        body=body,
        version="v1beta1",
        sample=f"runtime/{name}",
        kinds=tuple(kinds),
        label=label + ("; its job asks for a GPU" if gpu else ""),
        family="runtime",
        then=then,
    )


def documents(
    seed: int,
    count: int,
    *,
    mix: Mapping[str, float] = MIX,
    start: int = 0,
    namespace: str = NAMESPACE,
) -> Iterator[Doc]:
    """``count`` hostile documents, the same for the same ``seed`` and ``mix``, numbered from
    ``start`` (the documents ``documents(seed, start + count)`` would end with); ``namespace`` is
    where the runner sends them (a reference to the job's own namespace names it)."""
    master = random.Random(seed)
    for _skipped in range(start):
        master.getrandbits(64)
    for index in range(start, start + count):
        doc_seed = master.getrandbits(64)
        rng = random.Random(doc_seed)
        family = _family(doc_seed, mix)
        if family == "job":
            yield _job(index, rng)
        elif family == "short":
            yield _short(index, rng, namespace)
        else:
            yield _runtime(index, rng, namespace)
