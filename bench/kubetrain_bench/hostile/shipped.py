"""What short jobs and runtimes start from: the shipped runtimes (``config/runtimes``), the short
samples made from them (``samples/v1beta1/short``), and what a short job would ask for once
expanded (its replicas, for the generator's bound)."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import yaml

from kubetrain_bench import ROOT, samples
from kubetrain_bench.hostile.walk import MAX_REPLICAS

RUNTIMES = ROOT / "config" / "runtimes"
SHORT = "v1beta1/short"
CLUSTER_KIND = "ClusterTrainingRuntime"
KIND = "TrainingRuntime"
RUNTIME_KINDS = (CLUSTER_KIND, KIND)


@functools.cache
def runtimes() -> dict[str, dict[str, Any]]:
    """The shipped ClusterTrainingRuntimes by name, in a fixed order (read once: copy before
    changing one)."""
    out: dict[str, dict[str, Any]] = {}
    for path in sorted(RUNTIMES.glob("*.yaml")):
        if path.name == "kustomization.yaml":
            continue
        body: dict[str, Any] = yaml.safe_load(path.read_text())
        out[body["metadata"]["name"]] = body
    return out


@functools.cache
def short_samples() -> list[tuple[str, dict[str, Any]]]:
    """("short/stem", body) of every short sample, in a fixed order (read once: copy first)."""
    return [(f"short/{name}", samples.load(SHORT, name)) for name in samples.names(SHORT)]


def short_sample_for(runtime_name: str) -> dict[str, Any] | None:
    """The short sample made from the shipped runtime ``runtime_name`` (read once: copy first)."""
    for _sample, body in short_samples():
        if body["spec"]["runtimeRef"]["name"] == runtime_name:
            return body
    return None


def _count(value: Any) -> int | None:
    """A replica count the schema takes, or None."""
    if isinstance(value, bool) or not isinstance(value, int | float) or value != int(value):
        return None
    return int(value) if 0 <= value <= MAX_REPLICAS else None


def _counts(spec: Any, into: dict[str, int]) -> None:
    """Merge the replica counts ``spec`` (a job's or a runtime's) says over ``into``."""
    specs = spec.get("replicaSpecs") if isinstance(spec, Mapping) else None
    if specs is None and isinstance(spec, Mapping) and "replicaSpecs" in spec:
        into.clear()  # a null removes them all
        return
    if not isinstance(specs, Mapping):
        return
    for t, s in specs.items():
        if s is None:
            into.pop(str(t), None)
        elif isinstance(s, Mapping):
            n = _count(s.get("replicas", into.get(str(t), 1)))
            into[str(t)] = n if n is not None else 0


def _node_type(types: list[str], policy: Any) -> str | None:
    wanted = policy.get("replicaType") if isinstance(policy, Mapping) else None
    for name in (wanted, "Worker"):
        if isinstance(name, str):
            found = next((t for t in types if t.lower() == name.lower()), None)
            if found is not None:
                return found
    return types[0] if len(types) == 1 else None


def expanded_replicas(job: Mapping[str, Any], chain: list[Mapping[str, Any]]) -> int:
    """About the replicas ``job`` (a short job) asks for once expanded from ``chain`` (its runtime
    first, then the one that builds on, ...): the runtimes' counts, the base first, then the job's
    own, then ``numNodes`` on the node type. Counts out of bounds, or not numbers, count 0."""
    counts: dict[str, int] = {}
    policy: Any = None
    for runtime in reversed(chain):
        spec = runtime.get("spec")
        _counts(spec, counts)
        if isinstance(spec, Mapping) and isinstance(spec.get("trainer"), Mapping):
            policy = spec["trainer"]
    spec = job.get("spec")
    _counts(spec, counts)
    trainer = spec.get("trainer") if isinstance(spec, Mapping) else None
    num = _count(trainer.get("numNodes")) if isinstance(trainer, Mapping) else None
    node = _node_type(list(counts), policy)
    if num is not None and node is not None:
        counts[node] = num
    return sum(counts.values())
