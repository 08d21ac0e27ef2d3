"""Hostile TrainingJobs: the repository's samples of both versions, mutated at random, reproducibly.

:func:`documents` starts from every sample in ``samples/v1beta1`` and ``samples/v1alpha1``
(each version half of the time) and applies one to three mutations of the kinds in
:data:`KINDS` at random paths, inside kubetrain's own fields and inside pod templates;
about one document in ten is an unmutated sample, so something is always accepted.

The same ``seed`` gives the same documents, and ``documents(seed, n)`` is a prefix of
``documents(seed, m)`` for ``n <= m``: a master ``random.Random(seed)`` draws one seed per
document. Every document has a unique ``metadata.name`` (a DNS label of at most 40
characters, unless a mutation made it something else on purpose, and then it still starts
with the document's unique prefix), and none asks for more than :data:`MAX_TOTAL_REPLICAS`
replicas in total: a mutation that sets a count sets it out of bounds or small, and a
document whose mutations would add up to more is drawn again.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import random
from collections.abc import Iterator
from typing import Any

from kubetrain_bench import samples
from kubetrain_bench.hostile import mutate_pods, mutate_rules, mutate_values
from kubetrain_bench.hostile.walk import Mutation, total_replicas

VERSIONS = ("v1beta1", "v1alpha1")
MAX_TOTAL_REPLICAS = 8
NAME_LENGTH = 40
UNMUTATED = 0.1


@dataclasses.dataclass(frozen=True)
class Doc:
    """One hostile document: the JSON body, its version, and what was done to which sample."""

    index: int
    body: dict[str, Any]
    version: str  # "v1beta1" or "v1alpha1"
    sample: str  # e.g. "v1beta1/pytorch-ddp"
    kinds: tuple[str, ...]  # the mutation kinds applied, in order; () for an unmutated sample
    label: str  # "kind@path; kind@path", or "sample"

    @property
    def name(self) -> str | None:
        meta = self.body.get("metadata")
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


# --- the generator ---------------------------------------------------------------------------------


def unique_name(index: int, sample_name: str) -> str:
    prefix = f"h{index:05d}-"
    return (prefix + sample_name)[:NAME_LENGTH].rstrip("-")


def _mutate(rng: random.Random, body: dict[str, Any], version: str) -> tuple[list[str], list[str]]:
    """1-3 mutations; deep nesting always last, so no other mutation has to walk (or copy) it."""
    chosen = [rng.choice(list(KINDS)) for _ in range(rng.randint(1, 3))]
    if "deep_nesting" in chosen:
        chosen = [k for k in chosen if k != "deep_nesting"] + ["deep_nesting"]
    others = [k for k in KINDS if k != "deep_nesting"]
    kinds, wheres = [], []
    for kind in chosen:
        for candidate in (kind, *rng.sample(others, 4)):  # another kind when this one has no target
            where = KINDS[candidate](rng, body, version)
            if where is not None:
                kinds.append(candidate)
                wheres.append(f"{candidate}@{where}")
                break
    return kinds, wheres


def documents(seed: int, count: int) -> Iterator[Doc]:
    """``count`` hostile documents, the same for the same ``seed``."""
    every = load_samples()
    by_version = {v: [s for s in every if s[0] == v] for v in VERSIONS}
    master = random.Random(seed)
    for index in range(count):
        rng = random.Random(master.getrandbits(64))
        version = rng.choice(VERSIONS)
        _v, sample, original = rng.choice(by_version[version])
        name = unique_name(index, original["metadata"]["name"])
        body: dict[str, Any] = copy.deepcopy(original)
        body["metadata"]["name"] = name
        kinds: list[str] = []
        wheres: list[str] = []
        if rng.random() >= UNMUTATED:
            for _attempt in range(10):
                candidate = copy.deepcopy(body)
                kinds, wheres = _mutate(rng, candidate, version)
                if total_replicas(candidate) <= MAX_TOTAL_REPLICAS:
                    body = candidate
                    break
            else:
                kinds, wheres = [], []
        yield Doc(
            index=index,
            body=body,
            version=version,
            sample=sample,
            kinds=tuple(kinds),
            label="; ".join(wheres) if wheres else "sample",
        )
