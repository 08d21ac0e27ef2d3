"""Mutations against the schema's and kubetrain's rules: a required field missing, duplicates, names
too long, and fields of kubetrain's own, well typed, that break a bound or a cross-field rule."""

from __future__ import annotations

import copy
import random
from collections.abc import Callable
from typing import Any

from kubetrain_bench.hostile.walk import (
    Json,
    Path,
    at,
    containers,
    fmt,
    own_paths,
    pick,
    replica_specs,
)


def _required_spots(body: dict[str, Any], version: str) -> list[Path]:
    spots: list[Path] = [("spec",)] if "spec" in body else []
    meta = body.get("metadata")
    if isinstance(meta, dict) and "name" in meta:
        spots.append(("metadata", "name"))
    spec = body.get("spec")
    if isinstance(spec, dict):
        spots += [("spec", k) for k in ("framework", "replicaSpecs") if k in spec]
        if version == "v1beta1" and isinstance(spec.get("framework"), dict) and "name" in spec["framework"]:
            spots.append(("spec", "framework", "name"))
        if isinstance(spec.get("runtimeRef"), dict):  # a short job, or a runtime built on another
            spots.append(("spec", "runtimeRef"))
            if "name" in spec["runtimeRef"]:
                spots.append(("spec", "runtimeRef", "name"))
    for p, s in replica_specs(body):
        spots += [(*p, k) for k in ("template", "replicaType") if k in s]
        tmpl = s.get("template")
        if isinstance(tmpl, dict) and "spec" in tmpl:
            spots.append((*p, "template", "spec"))
            if isinstance(tmpl["spec"], dict) and "containers" in tmpl["spec"]:
                spots.append((*p, "template", "spec", "containers"))
    spots += [(*p, "name") for p, c in containers(body) if "name" in c]
    for p, v in own_paths(body):
        if isinstance(v, dict) and "rules" in p[-2:-1]:
            spots += [(*p, k) for k in ("name", "action") if k in v]
        if isinstance(v, dict) and "targets" in p[-2:-1] and "replicaType" in v:
            spots.append((*p, "replicaType"))
        if isinstance(v, dict) and p[-1:] == ("backend",) and "type" in v:
            spots.append((*p, "type"))
    return spots


def m_missing_required(rng: random.Random, body: dict[str, Any], version: str) -> str | None:
    path = pick(rng, _required_spots(body, version))
    if path is None:
        return None
    del at(body, path[:-1])[path[-1]]
    return fmt(path)


def m_duplicate(rng: random.Random, body: dict[str, Any], version: str) -> str | None:
    options: list[Callable[[], str | None]] = []
    specs = replica_specs(body)
    if specs:
        path, spec = rng.choice(specs)
        if version == "v1alpha1" and isinstance(path[-1], int):

            def dup_alpha() -> str:
                at(body, path[:-1]).append(copy.deepcopy(spec))
                return fmt(path[:-1]) + f" (replicaType {spec.get('replicaType')!r} twice)"

            options.append(dup_alpha)
        elif isinstance(key := path[-1], str):

            def dup_case() -> str:
                twin = key.swapcase() if rng.random() < 0.5 else key.lower()
                if twin == key:
                    twin = key.upper()
                at(body, path[:-1])[twin] = copy.deepcopy(spec)
                return fmt((*path[:-1], twin))

            options.append(dup_case)
    cs = containers(body)
    if cs:
        cpath, c = rng.choice(cs)

        def dup_container() -> str:
            at(body, cpath[:-1]).append(copy.deepcopy(c))
            return fmt(cpath[:-1]) + " (container twice)"

        def dup_env() -> str:
            c["env"] = [{"name": "DUP", "value": "1"}, {"name": "DUP", "value": "2"}]
            return fmt((*cpath, "env"))

        def dup_ports() -> str:
            c["ports"] = [{"name": "p", "containerPort": 80}, {"name": "p", "containerPort": 80}]
            return fmt((*cpath, "ports"))

        options += [dup_container, dup_env, dup_ports]
    spec_obj = body.get("spec")
    if version == "v1beta1" and isinstance(spec_obj, dict):

        def dup_rules() -> str:
            rule = {"name": "same", "action": "FailJob", "onReasons": ["OOMKilled"]}
            fp = spec_obj.get("failurePolicy")
            spec_obj["failurePolicy"] = fp = fp if isinstance(fp, dict) else {}
            fp["rules"] = [rule, dict(rule)]
            return "spec.failurePolicy.rules"

        def dup_targets() -> str:
            first = next((p[-1] for p, _s in specs if isinstance(p[-1], str)), "Worker")
            target = {"replicaType": first, "index": 0}
            spec_obj["successPolicy"] = {"targets": [target, dict(target)]}
            return "spec.successPolicy.targets"

        options += [dup_rules, dup_targets]
    if not options:
        return None
    return rng.choice(options)()


def m_long_name(rng: random.Random, body: dict[str, Any], version: str) -> str | None:
    meta = body.get("metadata")
    options: list[Callable[[], str]] = []
    if isinstance(meta, dict) and isinstance(meta.get("name"), str):

        def long_job_name() -> str:
            size = rng.choice((41, 50, 54, 63, 64, 253, 254, 1000))
            meta["name"] = (meta["name"] + "-" + "n" * size)[: size - 1] + "n"
            return f"metadata.name ({size} chars)"

        def long_labels() -> str:
            meta["labels"] = {"example.com/" + "k" * 64: "v", "k": "v" * 64}
            return "metadata.labels"

        options += [long_job_name, long_job_name, long_labels]
    specs = replica_specs(body)
    if specs:
        path, spec = rng.choice(specs)

        def long_type() -> str:
            size = rng.choice((20, 40, 63, 64, 300))
            if version == "v1alpha1" or isinstance(path[-1], int):
                spec["replicaType"] = "W" * size
                return f"{fmt((*path, 'replicaType'))} ({size} chars)"
            parent = at(body, path[:-1])
            new = "W" + "w" * (size - 1)
            renamed = {(new if k == path[-1] else k): v for k, v in parent.items()}
            parent.clear()
            parent.update(renamed)
            return f"{fmt(path[:-1])}.W… ({size} chars)"

        options.append(long_type)
    cs = containers(body)
    if cs:
        cpath, c = rng.choice(cs)

        def long_container() -> str:
            c["name"] = "c" * rng.choice((63, 64, 253))
            return fmt((*cpath, "name"))

        options.append(long_container)
    if not options:
        return None
    return rng.choice(options)()


def _own_additions(body: dict[str, Any], version: str) -> list[tuple[Path, Json]]:
    first = next((p[-1] for p, _s in replica_specs(body)), "Worker")
    if version == "v1alpha1":
        return [
            (("spec", "backend"), {"type": "redis", "redisHost": "r"}),
            (("spec", "backend"), {"type": "nfs"}),
            (("spec", "terminationPolicy"), {"chief": {"replicaName": "NOPE", "replicaIndex": 0}}),
            (("spec", "terminationPolicy"), {"chief": {"replicaName": "WORKER", "replicaIndex": 99}}),
            (("spec", "runtimeId"), "x" * 17),
            (("spec", "runtimeId"), "UPPER"),
            (("spec", "replicaSpecs", 0, "port"), 0),
        ]
    return [
        (("spec", "runPolicy", "schedulingPolicy"), {"minAvailable": 100}),
        (("spec", "runPolicy", "schedulingPolicy"), {"minAvailable": 0, "queue": ""}),
        (("spec", "successPolicy"), {"targets": [{"replicaType": "Nope"}]}),
        (("spec", "successPolicy"), {"targets": [{"replicaType": first, "index": 99}]}),
        (("spec", "successPolicy"), {"targets": []}),
        (
            ("spec", "failurePolicy", "rules"),
            [{"name": "r", "action": "Restart", "onExitCodes": {"ranges": [{"min": 5, "max": 1}]}}],
        ),
        (("spec", "failurePolicy", "rules"), [{"name": "Bad Name", "action": "Restart"}]),
        (("spec", "failurePolicy", "rules"), [{"name": "r", "action": "Restart", "replicaTypes": ["Nope"]}]),
        (("spec", "failurePolicy", "budgets"), {"userCode": {"limit": 1}}),
        (("spec", "runPolicy", "managedBy"), "not a controller name"),
        (("spec", "runtimeId"), "UPPER"),
        (("spec", "framework", "pytorch"), {"elastic": {"minReplicas": 5, "maxReplicas": 1}}),
        (("spec", "framework", "caffe2"), {"backend": {"type": "redis"}}),
        (("spec", "framework", "options"), {"anything": 1}),
        (("spec", "replicaSpecs", first, "port"), 70000),
    ]


def m_own_field(rng: random.Random, body: dict[str, Any], version: str) -> str | None:
    """A field of kubetrain's own, well typed, that breaks a bound or a cross-field rule."""
    path, value = rng.choice(_own_additions(body, version))
    node: Json = body
    for depth, p in enumerate(path[:-1]):
        if isinstance(node, dict) and (p in node or depth >= 1):  # spec must be there
            node = node.setdefault(p, {})
        elif isinstance(node, list) and isinstance(p, int) and p < len(node):
            node = node[p]
        else:
            return None
    if not isinstance(node, dict):
        return None
    if path[-1:] == ("budgets",):
        # Conflicts with runPolicy.backoffLimit, which these samples set.
        spec = body.get("spec")
        if isinstance(spec, dict) and not isinstance(spec.get("runPolicy"), dict):
            spec["runPolicy"] = {"backoffLimit": 1}
        elif isinstance(spec, dict):
            spec["runPolicy"]["backoffLimit"] = 1
    node[path[-1]] = copy.deepcopy(value)
    return fmt(path)
