"""Paths into a TrainingJob document of either version, and what the mutations look for there.

A path is a tuple of keys and indexes; :func:`fmt` writes it as the apiserver names a field
(``spec.replicaSpecs.Worker.template.spec.containers[0].image``).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from typing import Any

Json = Any
Path = tuple[str | int, ...]
# Each mutation takes (rng, body, version), changes body and returns a short description (a
# path), or returns None when the document has nothing it could apply to.
Mutation = Callable[[random.Random, dict[str, Any], str], str | None]

MAX_REPLICAS = 10000  # the schema's bound on one replica type's count


def pick(rng: random.Random, items: list[Any]) -> Any:
    """One of ``items`` at random; None when there are none."""
    return rng.choice(items) if items else None


def fmt(path: Path) -> str:
    """``spec.replicaSpecs.Worker.template.spec.containers[0].image``."""
    out = ""
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out or "(root)"


def at(doc: Json, path: Path) -> Json:
    for p in path:
        doc = doc[p]
    return doc


def paths(data: Json, prefix: Path = ()) -> Iterator[tuple[Path, Json]]:
    """(path, value) of ``data`` and of everything below it, depth first."""
    yield prefix, data
    if isinstance(data, dict):
        for k, v in list(data.items()):
            yield from paths(v, (*prefix, k))
    elif isinstance(data, list):
        for i, v in enumerate(data):
            yield from paths(v, (*prefix, i))


def is_template(path: Path) -> bool:
    return "template" in path


def own_paths(body: dict[str, Any]) -> list[tuple[Path, Json]]:
    """kubetrain's own fields: spec outside the pod templates, and metadata.name."""
    out = [(p, v) for p, v in paths(body.get("spec"), ("spec",)) if not is_template(p)]
    meta = body.get("metadata")
    if isinstance(meta, dict) and "name" in meta:
        out.append((("metadata", "name"), meta["name"]))
    return out


def template_paths(body: dict[str, Any]) -> list[tuple[Path, Json]]:
    """Everything inside (and including) the pod templates."""
    out: list[tuple[Path, Json]] = []
    for p, _spec in replica_specs(body):
        spec = at(body, p)
        if "template" in spec:
            out.extend(paths(spec["template"], (*p, "template")))
    return out


def replica_specs(body: dict[str, Any]) -> list[tuple[Path, dict[str, Any]]]:
    """(path, replica spec) of every replica spec that is still an object, either version."""
    spec = body.get("spec")
    specs = spec.get("replicaSpecs") if isinstance(spec, dict) else None
    if isinstance(specs, dict):
        items: list[tuple[str | int, Any]] = list(specs.items())
    elif isinstance(specs, list):
        items = list(enumerate(specs))
    else:
        return []
    return [(("spec", "replicaSpecs", k), v) for k, v in items if isinstance(v, dict)]


def containers(body: dict[str, Any]) -> list[tuple[Path, dict[str, Any]]]:
    out: list[tuple[Path, dict[str, Any]]] = []
    for p, spec in replica_specs(body):
        tmpl = spec.get("template")
        pod = tmpl.get("spec") if isinstance(tmpl, dict) else None
        cs = pod.get("containers") if isinstance(pod, dict) else None
        if isinstance(cs, list):
            out.extend(
                ((*p, "template", "spec", "containers", i), c)
                for i, c in enumerate(cs)
                if isinstance(c, dict)
            )
    return out


def pod_specs(body: dict[str, Any]) -> list[tuple[Path, dict[str, Any]]]:
    out = []
    for p, spec in replica_specs(body):
        tmpl = spec.get("template")
        if isinstance(tmpl, dict) and isinstance(tmpl.get("spec"), dict):
            out.append(((*p, "template", "spec"), tmpl["spec"]))
    return out


def set_at(body: Json, path: Path, value: Json) -> None:
    at(body, path[:-1])[path[-1]] = value


def total_replicas(body: dict[str, Any]) -> int:
    """The replicas a document asks for, if it were accepted: counts in bounds, 1 when unset."""
    total = 0
    for _p, spec in replica_specs(body):
        n = spec.get("replicas", 1)
        if isinstance(n, bool) or not isinstance(n, int | float) or n != int(n):
            continue  # not a count the schema takes
        if 0 <= n <= MAX_REPLICAS:
            total += int(n)
    return total
