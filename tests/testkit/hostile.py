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
import pathlib
import random
from collections.abc import Callable, Iterator
from typing import Any

import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "samples"
VERSIONS = ("v1beta1", "v1alpha1")
MAX_TOTAL_REPLICAS = 8
MAX_REPLICAS = 10000  # the schema's bound on one replica type's count
NAME_LENGTH = 40
MIB = 1 << 20
UNMUTATED = 0.1
DEPTHS = (100, 500, 500)  # levels of junk under a pod template

Json = Any
Path = tuple[str | int, ...]


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


def load_samples() -> list[tuple[str, str, dict[str, Any]]]:
    """(version, "version/stem", body) of every sample, in a fixed order."""
    out = []
    for version in VERSIONS:
        for path in sorted((SAMPLES / version).glob("*.yaml")):
            out.append((version, f"{version}/{path.stem}", yaml.safe_load(path.read_text())))
    return out


# --- paths into a document ---------------------------------------------------------------------


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
    out = []
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
    out = []
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


# --- values --------------------------------------------------------------------------------------

UNICODE = (
    "训练",
    "Wörker",
    "\u202egnp",
    "🙂",
    "e\u0301",
    "\u200b",
    "\x00",
    "\ud800",
    "\uff46\uff55\uff4c\uff4c",
    "Ω≈ç√",
)
JUNK_VALUES: tuple[Json, ...] = (3, -1, 1.5, "x", True, False, [], {}, [1, "a"], {"a": 1}, "", 0)
EXTREME_NUMBERS: tuple[Json, ...] = (-1, 0, -(2**31), 2**31, 2**53 + 1, 2**63, 10**30, 1e308, 1.5, -0.5, 1e-9)
BAD_COUNTS: tuple[Json, ...] = (-1, MAX_REPLICAS + 1, 2**31, 2**63, 0, 1, 2, 3, "2", 1.5, 2.0, True, None)
BAD_ENUMS = (
    "Sometimes",
    "",
    "always",
    "ALL",
    "Running ",
    "theano",
    "None\x00",
    "pytorch2",
    "TensorFlow",
    "🙂",
)
BAD_BETA_TYPES = ("", "worker-1", "1Worker", "Wörker", "W" * 64, "Work er", "Launcher", "Bogus", "ps", "a_b")
BAD_ALPHA_TYPES: tuple[Json, ...] = (
    "worker",
    "",
    "WORKER-1",
    "W" * 64,
    3,
    None,
    "LAUNCHER",
    "BOGUS",
    "MÄSTER",
)
UNKNOWN_KEYS = ("replicaz", "bogus", "x-kubetrain", "", "Spec", "🙂", "a.b", "$ref", "__proto__")
CONTAINER_NAMES: tuple[Json, ...] = ("-1", "", "UPPER", "a" * 64, "x y", "ü", "main.1", 1, None, ["main"])
IMAGES: tuple[Json, ...] = (["a", "b"], 3, {"a": 1}, True, None, "", " ", "UPPER/Case:tag", "a b", "x" * 300)
RESOURCES: tuple[Json, ...] = (
    {"limits": 3},
    {"limits": 1.5},
    {"limits": "x"},
    3,
    "x",
    [],
    {"limits": {"cpu": "x"}},
    {"limits": {"memory": -1}},
    {"limits": {"cpu": "-1"}},
    {"requests": {"cpu": "2"}, "limits": {"cpu": "1"}},
    {"limits": {"nvidia.com/gpu": 0.5}},
    {"limits": {"bogus/res": "1"}},
    {"limits": {"cpu": {"a": 1}}},
)
ARG_ITEMS: tuple[Json, ...] = (3, None, {}, [], True, 1.5, {"a": "b"})


def other_type(rng: random.Random, value: Json) -> Json:
    """A junk value whose JSON type differs from ``value``'s."""

    def kind(v: Json) -> str:
        if isinstance(v, bool):
            return "bool"
        if isinstance(v, int | float):
            return "number"
        return type(v).__name__

    choices = [v for v in JUNK_VALUES if kind(v) != kind(value)]
    return copy.deepcopy(rng.choice(choices))


def nested(rng: random.Random, depth: int) -> Json:
    """``depth`` levels of objects and lists, innermost a string."""
    value: Json = "bottom"
    for _ in range(depth):
        value = {"a": value} if rng.random() < 0.5 else [value]
    return value


def huge(rng: random.Random) -> str:
    size = rng.choice((64 * 1024, MIB, MIB))
    return rng.choice("abxyz") * size


# --- the mutations -------------------------------------------------------------------------------
# Each takes (rng, body, version), changes body and returns a short description (a path), or
# returns None when the document has nothing it could apply to.

Mutation = Callable[[random.Random, dict[str, Any], str], str | None]


def _pick(rng: random.Random, items: list[Any]) -> Any:
    return rng.choice(items) if items else None


def m_resources(rng: random.Random, body: dict[str, Any], _version: str) -> str | None:
    picked = _pick(rng, containers(body))
    if picked is None:
        return None
    path, c = picked
    c["resources"] = copy.deepcopy(rng.choice(RESOURCES))
    return fmt((*path, "resources"))


def m_no_image(rng: random.Random, body: dict[str, Any], _version: str) -> str | None:
    picked = _pick(rng, [(p, c) for p, c in containers(body) if "image" in c])
    if picked is None:
        return None
    path, c = picked
    del c["image"]
    return fmt((*path, "image"))


def m_container_name(rng: random.Random, body: dict[str, Any], _version: str) -> str | None:
    picked = _pick(rng, containers(body))
    if picked is None:
        return None
    path, c = picked
    c["name"] = copy.deepcopy(rng.choice(CONTAINER_NAMES))
    return fmt((*path, "name"))


def m_image_type(rng: random.Random, body: dict[str, Any], _version: str) -> str | None:
    picked = _pick(rng, containers(body))
    if picked is None:
        return None
    path, c = picked
    c["image"] = copy.deepcopy(rng.choice(IMAGES))
    return fmt((*path, "image"))


def m_args_items(rng: random.Random, body: dict[str, Any], _version: str) -> str | None:
    picked = _pick(rng, containers(body))
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
    spot = _pick(rng, spots)
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
    spot = _pick(rng, spots)
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


def m_unknown_field(rng: random.Random, body: dict[str, Any], _version: str) -> str | None:
    region = own_paths(body) if rng.random() < 0.5 else template_paths(body)
    picked = _pick(rng, [(p, v) for p, v in region if isinstance(v, dict)])
    if picked is None:
        return None
    path, obj = picked
    key = rng.choice(UNKNOWN_KEYS)
    obj[key] = copy.deepcopy(rng.choice(JUNK_VALUES))
    return fmt((*path, key))


def _replace_in(rng: random.Random, region: list[tuple[Path, Json]], leaves_only: bool) -> Path | None:
    candidates = [p for p, v in region if len(p) > 1 and not (leaves_only and isinstance(v, dict | list))]
    return _pick(rng, candidates)


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
    path = _pick(rng, numbers)
    if path is None:
        return None
    set_at(body, path, rng.choice(EXTREME_NUMBERS))
    return fmt(path)


def m_replicas(rng: random.Random, body: dict[str, Any], _version: str) -> str | None:
    picked = _pick(rng, replica_specs(body))
    if picked is None:
        return None
    path, spec = picked
    spec["replicas"] = rng.choice(BAD_COUNTS)
    return fmt((*path, "replicas"))


def m_replica_type(rng: random.Random, body: dict[str, Any], version: str) -> str | None:
    specs = replica_specs(body)
    picked = _pick(rng, specs)
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
    path = _pick(rng, _enum_spots(body, version))
    if path is None:
        return None
    set_at(body, path, rng.choice(BAD_ENUMS))
    return fmt(path)


def _required_spots(body: dict[str, Any], version: str) -> list[Path]:
    spots: list[Path] = [("spec",)] if "spec" in body else []
    meta = body.get("metadata")
    if isinstance(meta, dict) and "name" in meta:
        spots.append(("metadata", "name"))
    spec = body.get("spec")
    if isinstance(spec, dict):
        spots += [("spec", k) for k in ("framework", "replicaSpecs") if k in spec]
        if version == "v1beta1" and isinstance(spec.get("framework"), dict):
            spots.append(("spec", "framework", "name"))
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
    path = _pick(rng, _required_spots(body, version))
    if path is None:
        return None
    del at(body, path[:-1])[path[-1]]
    return fmt(path)


def m_unicode(rng: random.Random, body: dict[str, Any], _version: str) -> str | None:
    region = own_paths(body) if rng.random() < 0.5 else template_paths(body)
    path = _pick(rng, [p for p, v in region if isinstance(v, str)])
    if path is None:
        return None
    old, text = at(body, path), rng.choice(UNICODE)
    # A name keeps its unique prefix; other strings are replaced or extended at random.
    set_at(body, path, f"{old}{text}" if path == ("metadata", "name") or rng.random() < 0.5 else text)
    return fmt(path)


def m_empty(rng: random.Random, body: dict[str, Any], _version: str) -> str | None:
    region = own_paths(body) + template_paths(body)
    path = _pick(rng, [p for p, v in region if isinstance(v, dict | list) and len(p) > 1])
    if path is None:
        return None
    value = at(body, path)
    set_at(
        body, path, rng.choice(([] if isinstance(value, list) else {}, {} if isinstance(value, list) else []))
    )
    return fmt(path)


def m_null(rng: random.Random, body: dict[str, Any], _version: str) -> str | None:
    region = own_paths(body) if rng.random() < 0.5 else template_paths(body)
    path = _pick(rng, [p for p, _v in region if len(p) > 1])
    if path is None:
        return None
    set_at(body, path, None)
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
        elif isinstance(path[-1], str):

            def dup_case() -> str:
                twin = path[-1].swapcase() if rng.random() < 0.5 else path[-1].lower()
                if twin == path[-1]:
                    twin = path[-1].upper()
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
    picked = _pick(rng, targets)
    if picked is None:
        return None
    path, obj = picked
    obj[rel[0]] = copy.deepcopy(value)
    return fmt((*path, *rel))


KINDS: dict[str, Mutation] = {
    "resources_junk": m_resources,
    "no_image": m_no_image,
    "container_name": m_container_name,
    "image_type": m_image_type,
    "args_items": m_args_items,
    "deep_nesting": m_deep_nesting,
    "huge_string": m_huge_string,
    "unknown_field": m_unknown_field,
    "wrong_type": m_wrong_type,
    "template_wrong_type": m_template_wrong_type,
    "number_extreme": m_number_extreme,
    "replicas": m_replicas,
    "replica_type": m_replica_type,
    "enum": m_enum,
    "missing_required": m_missing_required,
    "unicode": m_unicode,
    "empty": m_empty,
    "null": m_null,
    "duplicate": m_duplicate,
    "long_name": m_long_name,
    "own_field": m_own_field,
    "pod_invalid": m_pod_invalid,
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
    samples = load_samples()
    by_version = {v: [s for s in samples if s[0] == v] for v in VERSIONS}
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
