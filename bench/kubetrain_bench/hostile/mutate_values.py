"""Mutations of a field's value, anywhere: unknown keys, wrong types, extreme numbers, bad counts,
replica types and enums, unicode, empty and null values."""

from __future__ import annotations

import copy
import random
from typing import Any

from kubetrain_bench.hostile.values import (
    BAD_ALPHA_TYPES,
    BAD_BETA_TYPES,
    BAD_COUNTS,
    BAD_ENUMS,
    EXTREME_NUMBERS,
    JUNK_VALUES,
    UNICODE,
    UNKNOWN_KEYS,
    other_type,
)
from kubetrain_bench.hostile.walk import (
    Json,
    Path,
    at,
    fmt,
    own_paths,
    pick,
    replica_specs,
    set_at,
    template_paths,
)


def m_unknown_field(rng: random.Random, body: dict[str, Any], _version: str) -> str | None:
    region = own_paths(body) if rng.random() < 0.5 else template_paths(body)
    picked = pick(rng, [(p, v) for p, v in region if isinstance(v, dict)])
    if picked is None:
        return None
    path, obj = picked
    key = rng.choice(UNKNOWN_KEYS)
    obj[key] = copy.deepcopy(rng.choice(JUNK_VALUES))
    return fmt((*path, key))


def _replace_in(rng: random.Random, region: list[tuple[Path, Json]], leaves_only: bool) -> Path | None:
    candidates = [p for p, v in region if len(p) > 1 and not (leaves_only and isinstance(v, dict | list))]
    path: Path | None = pick(rng, candidates)
    return path


def m_wrong_type(rng: random.Random, body: dict[str, Any], _version: str) -> str | None:
    path = _replace_in(rng, own_paths(body), leaves_only=rng.random() < 0.7)
    if path is None:
        return None
    value = other_type(rng, at(body, path))
    while path == ("metadata", "name") and isinstance(value, str):  # a string name would not be unique
        value = other_type(rng, "")
    set_at(body, path, value)
    return fmt(path)


def m_template_wrong_type(rng: random.Random, body: dict[str, Any], _version: str) -> str | None:
    path = _replace_in(rng, template_paths(body), leaves_only=rng.random() < 0.7)
    if path is None:
        return None
    set_at(body, path, other_type(rng, at(body, path)))
    return fmt(path)


def m_number_extreme(rng: random.Random, body: dict[str, Any], _version: str) -> str | None:
    region = own_paths(body) + template_paths(body)
    numbers = [p for p, v in region if isinstance(v, int | float) and not isinstance(v, bool)]
    path = pick(rng, numbers)
    if path is None:
        return None
    set_at(body, path, rng.choice(EXTREME_NUMBERS))
    return fmt(path)


def m_replicas(rng: random.Random, body: dict[str, Any], _version: str) -> str | None:
    picked = pick(rng, replica_specs(body))
    if picked is None:
        return None
    path, spec = picked
    spec["replicas"] = rng.choice(BAD_COUNTS)
    return fmt((*path, "replicas"))


def m_replica_type(rng: random.Random, body: dict[str, Any], version: str) -> str | None:
    specs = replica_specs(body)
    picked = pick(rng, specs)
    if picked is None:
        return None
    path, spec = picked
    if version == "v1alpha1" or isinstance(path[-1], int):
        spec["replicaType"] = rng.choice(BAD_ALPHA_TYPES)
        return fmt((*path, "replicaType"))
    parent = at(body, path[:-1])
    new = rng.choice(BAD_BETA_TYPES)
    # Keep the order of the other types: rebuild the mapping with the key renamed.
    renamed = {(new if k == path[-1] else k): v for k, v in parent.items()}
    parent.clear()
    parent.update(renamed)
    return fmt((*path[:-1], new))


def _enum_spots(body: dict[str, Any], version: str) -> list[Path]:
    spots: list[Path] = [(*p, "restartPolicy") for p, _s in replica_specs(body) if version == "v1beta1"]
    spec = body.get("spec")
    if not isinstance(spec, dict):
        return spots
    if version == "v1alpha1":
        spots += [("spec", "framework"), ("spec", "cleanupPodPolicy")]
        if isinstance(spec.get("backend"), dict):
            spots.append(("spec", "backend", "type"))
        return spots
    fw = spec.get("framework")
    if isinstance(fw, dict):
        spots.append(("spec", "framework", "name"))
        for block, key in (("options", "mpiImplementation"), ("options", "mode")):
            if isinstance(fw.get(block), dict) and key in fw[block]:
                spots.append(("spec", "framework", block, key))
        caffe2 = fw.get("caffe2")
        if isinstance(caffe2, dict) and isinstance(caffe2.get("backend"), dict):
            spots.append(("spec", "framework", "caffe2", "backend", "type"))
    if isinstance(spec.get("runPolicy"), dict):
        spots.append(("spec", "runPolicy", "cleanPodPolicy"))
    fp = spec.get("failurePolicy")
    if isinstance(fp, dict):
        spots.append(("spec", "failurePolicy", "restartScope"))
        rules = fp.get("rules")
        if isinstance(rules, list):
            for i, r in enumerate(rules):
                if isinstance(r, dict):
                    spots += [("spec", "failurePolicy", "rules", i, k) for k in ("action", "onFailureClass")]
    sp = spec.get("successPolicy")
    if isinstance(sp, dict):
        spots.append(("spec", "successPolicy", "operator"))
    return spots


def m_enum(rng: random.Random, body: dict[str, Any], version: str) -> str | None:
    path = pick(rng, _enum_spots(body, version))
    if path is None:
        return None
    set_at(body, path, rng.choice(BAD_ENUMS))
    return fmt(path)


def m_unicode(rng: random.Random, body: dict[str, Any], _version: str) -> str | None:
    region = own_paths(body) if rng.random() < 0.5 else template_paths(body)
    path = pick(rng, [p for p, v in region if isinstance(v, str)])
    if path is None:
        return None
    old, text = at(body, path), rng.choice(UNICODE)
    # A name keeps its unique prefix; other strings are replaced or extended at random.
    set_at(body, path, f"{old}{text}" if path == ("metadata", "name") or rng.random() < 0.5 else text)
    return fmt(path)


def m_empty(rng: random.Random, body: dict[str, Any], _version: str) -> str | None:
    region = own_paths(body) + template_paths(body)
    path = pick(rng, [p for p, v in region if isinstance(v, dict | list) and len(p) > 1])
    if path is None:
        return None
    value = at(body, path)
    set_at(
        body, path, rng.choice(([] if isinstance(value, list) else {}, {} if isinstance(value, list) else []))
    )
    return fmt(path)


def m_null(rng: random.Random, body: dict[str, Any], _version: str) -> str | None:
    region = own_paths(body) if rng.random() < 0.5 else template_paths(body)
    path = pick(rng, [p for p, _v in region if len(p) > 1])
    if path is None:
        return None
    set_at(body, path, None)
    return fmt(path)
