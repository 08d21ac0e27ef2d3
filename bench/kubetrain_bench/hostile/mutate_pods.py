"""Mutations inside the pod templates: containers' fields, deep nesting, huge strings, and well-formed
JSON that Pod validation refuses (the pods the job renders could never be made)."""

from __future__ import annotations

import copy
import random
from typing import Any

from kubetrain_bench.hostile.values import (
    ARG_ITEMS,
    CONTAINER_NAMES,
    DEPTHS,
    IMAGES,
    RESOURCES,
    huge,
    nested,
)
from kubetrain_bench.hostile.walk import (
    Json,
    Path,
    at,
    containers,
    fmt,
    pick,
    pod_specs,
    replica_specs,
    set_at,
)


def m_resources(rng: random.Random, body: dict[str, Any], _version: str) -> str | None:
    picked = pick(rng, containers(body))
    if picked is None:
        return None
    path, c = picked
    c["resources"] = copy.deepcopy(rng.choice(RESOURCES))
    return fmt((*path, "resources"))


def m_no_image(rng: random.Random, body: dict[str, Any], _version: str) -> str | None:
    picked = pick(rng, [(p, c) for p, c in containers(body) if "image" in c])
    if picked is None:
        return None
    path, c = picked
    del c["image"]
    return fmt((*path, "image"))


def m_container_name(rng: random.Random, body: dict[str, Any], _version: str) -> str | None:
    picked = pick(rng, containers(body))
    if picked is None:
        return None
    path, c = picked
    c["name"] = copy.deepcopy(rng.choice(CONTAINER_NAMES))
    return fmt((*path, "name"))


def m_image_type(rng: random.Random, body: dict[str, Any], _version: str) -> str | None:
    picked = pick(rng, containers(body))
    if picked is None:
        return None
    path, c = picked
    c["image"] = copy.deepcopy(rng.choice(IMAGES))
    return fmt((*path, "image"))


def m_args_items(rng: random.Random, body: dict[str, Any], _version: str) -> str | None:
    picked = pick(rng, containers(body))
    if picked is None:
        return None
    path, c = picked
    field = rng.choice(("args", "command"))
    items = c.get(field) if isinstance(c.get(field), list) else ["ok"]
    items = list(items)
    items.insert(rng.randrange(len(items) + 1), copy.deepcopy(rng.choice(ARG_ITEMS)))
    c[field] = items
    return fmt((*path, field))


def m_deep_nesting(rng: random.Random, body: dict[str, Any], _version: str) -> str | None:
    spots: list[Path] = []
    for p, c in containers(body):
        spots += [(*p, "junk"), (*p, "env")] if "env" not in c else [(*p, "junk")]
    for p, _pod in pod_specs(body):
        spots += [(*p, "junk"), (*p, "affinity")]
        if "metadata" not in at(body, p[:-1]):
            spots.append((*p[:-1], "metadata"))
    spec = body.get("spec")
    if isinstance(spec, dict):
        spots.append(("spec", "junk"))
    spot = pick(rng, spots)
    if spot is None:
        return None
    depth = rng.choice(DEPTHS)
    set_at(body, spot, nested(rng, depth))
    return f"{fmt(spot)} ({depth} levels)"


def m_huge_string(rng: random.Random, body: dict[str, Any], _version: str) -> str | None:
    spots: list[tuple[Path, str]] = []  # (container path, field)
    for p, _c in containers(body):
        spots += [(p, "image"), (p, "args"), (p, "command"), (p, "env"), (p, "name")]
    meta = body.get("metadata")
    if isinstance(meta, dict):
        spots.append((("metadata",), "annotations"))
    for p, _spec in replica_specs(body):
        if isinstance(at(body, p).get("template"), dict):
            spots.append(((*p, "template"), "metadata"))
    spot = pick(rng, spots)
    if spot is None:
        return None
    parent, field = spot
    text = huge(rng)
    obj = at(body, parent)
    if field in ("args", "command"):
        obj[field] = [text]
    elif field == "env":
        obj[field] = [{"name": "HUGE", "value": text}]
    elif field == "annotations":
        obj[field] = {"example.com/huge": text}
    elif field == "metadata":
        obj[field] = {"annotations": {"example.com/huge": text}}
    else:
        obj[field] = text
    return f"{fmt((*parent, field))} ({len(text)} chars)"


POD_INVALID: tuple[tuple[str, Path, Json], ...] = (
    # (where: "container" or "pod" or "template", relative path, value)
    ("container", ("imagePullPolicy",), "Sometimes"),
    ("container", ("ports",), [{"containerPort": 70000}]),
    ("container", ("ports",), [{"containerPort": 80, "protocol": "QUIC"}]),
    ("container", ("env",), [{"name": "1BAD", "value": "x"}]),
    ("container", ("env",), [{"name": "A", "valueFrom": {}}]),
    ("container", ("volumeMounts",), [{"name": "missing", "mountPath": "/m"}]),
    ("container", ("securityContext",), {"runAsUser": -1}),
    ("container", ("livenessProbe",), {"periodSeconds": 5}),
    ("container", ("workingDir",), "relative\x00dir"),
    ("pod", ("restartPolicy",), "Sometimes"),
    ("pod", ("terminationGracePeriodSeconds",), -5),
    ("pod", ("activeDeadlineSeconds",), 0),
    ("pod", ("hostname",), "Bad_Host"),
    ("pod", ("dnsPolicy",), "Bogus"),
    ("pod", ("nodeSelector",), {"a": 3}),
    ("pod", ("tolerations",), [{"operator": "Maybe"}]),
    ("pod", ("volumes",), [{"name": "v", "emptyDir": {}}, {"name": "v", "emptyDir": {}}]),
    ("pod", ("volumes",), [{"name": "Bad Volume"}]),
    ("pod", ("serviceAccountName",), "Not A Name"),
    ("pod", ("priority",), 2**40),
    ("template", ("metadata",), {"labels": {"bad key!": "v"}}),
    ("template", ("metadata",), {"annotations": {"a": 1}}),
    ("template", ("metadata",), {"labels": {"k": "v" * 64}}),
    ("template", ("metadata",), {"name": "Not_A_Name"}),
)


def m_pod_invalid(rng: random.Random, body: dict[str, Any], _version: str) -> str | None:
    """Well-formed JSON that Pod validation refuses: the pods the job renders could never be made."""
    where, rel, value = rng.choice(POD_INVALID)
    if where == "container":
        targets = containers(body)
    elif where == "pod":
        targets = pod_specs(body)
    else:
        targets = [
            ((*p, "template"), s["template"])
            for p, s in replica_specs(body)
            if isinstance(s.get("template"), dict)
        ]
    picked = pick(rng, targets)
    if picked is None:
        return None
    path, obj = picked
    obj[rel[0]] = copy.deepcopy(value)
    return fmt((*path, *rel))
