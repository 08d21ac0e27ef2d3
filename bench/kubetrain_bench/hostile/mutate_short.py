"""Mutations of what only short jobs and runtimes say: a short job's ``trainer`` section and the
fields it overrides its runtime with, and a runtime's ``trainer`` policy, ``accelerators`` and
``runtimeRef``.

The pod mutations of :mod:`.mutate_pods` have a trainer form here (:func:`trainer_or`): a short
job's ``trainer`` says what a container does (image, command, args, env, resources), so junk goes
there as often as into a container the job overrides. :func:`m_override` gives a short job fields
of its own over the runtime's — a container by name, a count, a replica type, another framework,
a ``null`` that removes a field, and the same places with a value of the wrong type (a short job
reaches the mutating webhook before the schema looks at it).
"""

from __future__ import annotations

import copy
import json
import random
from collections.abc import Mapping
from typing import Any

from kubetrain_bench.hostile.values import (
    ARG_ITEMS,
    BAD_COUNTS,
    DEPTHS,
    IMAGES,
    RESOURCES,
    huge,
    nested,
)
from kubetrain_bench.hostile.walk import Json, Mutation, Path, fmt

TRAINER = ("spec", "trainer")
OTHER_NAMESPACE = "kube-system"
FRAMEWORKS = (
    "pytorch",
    "tensorflow",
    "mpi",
    "jax",
    "xgboost",
    "mxnet",
    "chainer",
    "caffe2",
    "paddle",
    "generic",
)
NEW_TYPES = ("Master", "Chief", "Launcher", "PS", "Evaluator", "Scheduler", "Server", "Worker")

# resourcesPerNode: limits and requests merged into the node type's main container.
TRAINER_RESOURCES: tuple[Json, ...] = (
    *RESOURCES,
    {"limits": {"nvidia.com/gpu": 1}},  # the runtime's accelerator profile applies
    {"limits": {"nvidia.com/gpu": 2}, "requests": {"cpu": "100m"}},
    {"limits": {"nvidia.com/gpu": 64}},  # more than a node has: waits on the scheduler
    {"limits": {"nvidia.com/gpu": "1"}, "requests": {"nvidia.com/gpu": "2"}},
    {"bogus": {"cpu": "1"}},
    {"limits": None},
    {"limits": {"cpu": "1"}, "requests": []},
)
TRAINER_ENV: tuple[Json, ...] = (
    [{"name": "1BAD", "value": "x"}],
    [{"name": "A", "valueFrom": {}}],
    [{"name": "A", "value": "x", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
    [{"name": "A", "valueFrom": {"fieldRef": {"fieldPath": "spec.bogus"}}}],
    [{"name": "A", "valueFrom": {"secretKeyRef": {"name": "not-there", "key": "k"}}}],
    [{"name": "DUP", "value": "1"}, {"name": "DUP", "value": "2"}],
    [{"name": "A"}],
    [{"name": ""}],
    [{"value": "x"}],
    # What the framework sets itself: the trainer's word replaces the runtime's, not kubetrain's.
    [{"name": "MASTER_ADDR", "value": "elsewhere"}, {"name": "WORLD_SIZE", "value": "-1"}],
    [{"name": "PET_NNODES", "value": "0"}, {"name": "TF_CONFIG", "value": "{"}],
    [{"name": "OMPI_MCA_orte_default_hostfile", "value": "/nowhere"}],
)
PROCS_PER_NODE: tuple[Json, ...] = (
    "0",
    "1",
    "2",
    "8",
    "9999",
    "10000",
    "auto",
    "cpu",
    "gpu",
    "Auto",
    "-1",
    "",
    4,
)
COMMANDS: tuple[Json, ...] = ([], [""], ["a b"], None, "python train.py", ["x" * 5000])


def _trainer(body: dict[str, Any]) -> dict[str, Any] | None:
    spec = body.get("spec")
    trainer = spec.get("trainer") if isinstance(spec, dict) else None
    return trainer if isinstance(trainer, dict) else None


# --- the trainer section, as a container ------------------------------------------------------------


def t_resources(rng: random.Random, body: dict[str, Any], _version: str) -> str | None:
    trainer = _trainer(body)
    if trainer is None:
        return None
    trainer["resourcesPerNode"] = copy.deepcopy(rng.choice(TRAINER_RESOURCES))
    return fmt((*TRAINER, "resourcesPerNode"))


def t_no_image(rng: random.Random, body: dict[str, Any], _version: str) -> str | None:
    trainer = _trainer(body)
    if trainer is None or "image" not in trainer:
        return None
    del trainer["image"]
    return fmt((*TRAINER, "image"))


def t_image_type(rng: random.Random, body: dict[str, Any], _version: str) -> str | None:
    trainer = _trainer(body)
    if trainer is None:
        return None
    trainer["image"] = copy.deepcopy(rng.choice(IMAGES))
    return fmt((*TRAINER, "image"))


def t_args_items(rng: random.Random, body: dict[str, Any], _version: str) -> str | None:
    trainer = _trainer(body)
    if trainer is None:
        return None
    field = rng.choice(("args", "command"))
    given = trainer.get(field)
    items: list[Json] = list(given) if isinstance(given, list) else ["ok"]
    items.insert(rng.randrange(len(items) + 1), copy.deepcopy(rng.choice(ARG_ITEMS)))
    trainer[field] = items
    return fmt((*TRAINER, field))


def t_huge_string(rng: random.Random, body: dict[str, Any], _version: str) -> str | None:
    trainer = _trainer(body)
    if trainer is None:
        return None
    field, text = rng.choice(("image", "command", "args", "env")), huge(rng)
    if field == "image":
        trainer[field] = text
    elif field == "env":
        trainer[field] = [{"name": "HUGE", "value": text}]
    else:
        trainer[field] = [text]
    return f"{fmt((*TRAINER, field))} ({len(text)} chars)"


def t_deep_nesting(rng: random.Random, body: dict[str, Any], _version: str) -> str | None:
    trainer = _trainer(body)
    if trainer is None:
        return None
    depth = rng.choice(DEPTHS)
    spot: Path = rng.choice(
        (
            (*TRAINER, "resourcesPerNode", "limits", "cpu"),
            (*TRAINER, "resourcesPerNode", "requests"),
            (*TRAINER, "env"),
            (*TRAINER, "junk"),
        )
    )
    if spot[-1] == "env":
        trainer["env"] = [{"name": "DEEP", "valueFrom": nested(rng, depth)}]
        spot = (*spot, 0, "valueFrom")
    else:
        node: dict[str, Any] = trainer
        for key in spot[2:-1]:
            node = node.setdefault(str(key), {}) if isinstance(node.get(str(key)), dict | None) else {}
        node[str(spot[-1])] = nested(rng, depth)
    return f"{fmt(spot)} ({depth} levels)"


def t_env(rng: random.Random, body: dict[str, Any], _version: str) -> str | None:
    """An env the Pod's validation refuses, or that clashes with the framework's own."""
    trainer = _trainer(body)
    if trainer is None:
        return None
    trainer["env"] = copy.deepcopy(rng.choice(TRAINER_ENV))
    return fmt((*TRAINER, "env"))


def trainer_or(in_trainer: Mutation, elsewhere: Mutation) -> Mutation:
    """A mutation that goes into the trainer section or, as often, where ``elsewhere`` goes (a
    container the job overrides); each when the other has nothing to change."""

    def mutate(rng: random.Random, body: dict[str, Any], version: str) -> str | None:
        first, second = (in_trainer, elsewhere) if rng.random() < 0.5 else (elsewhere, in_trainer)
        return first(rng, body, version) or second(rng, body, version)

    return mutate


# --- the trainer's own fields ---------------------------------------------------------------------


def m_trainer_value(rng: random.Random, body: dict[str, Any], _version: str) -> str | None:
    """A trainer field well typed (or nearly) and wrong for the runtime: numNodes out of bounds or
    0, a processes-per-node the framework does not take, an empty command."""
    trainer = _trainer(body)
    if trainer is None:
        return None
    field = rng.choice(("numNodes", "numNodes", "procsPerNode", "procsPerNode", "command", "args"))
    if field == "numNodes":
        trainer[field] = rng.choice(BAD_COUNTS)
    elif field == "procsPerNode":
        trainer[field] = rng.choice(PROCS_PER_NODE)
    else:
        trainer[field] = copy.deepcopy(rng.choice(COMMANDS))
    return fmt((*TRAINER, field))


# --- a short job's own fields over the runtime's ---------------------------------------------------


def _short(value: Json) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 48 else text[:45] + "..."


def _types(runtime: Mapping[str, Any]) -> list[str]:
    return list((runtime.get("spec") or {}).get("replicaSpecs") or {}) or ["Worker"]


def _main(runtime: Mapping[str, Any], replica_type: str) -> str:
    spec = ((runtime.get("spec") or {}).get("replicaSpecs") or {}).get(replica_type) or {}
    containers = ((spec.get("template") or {}).get("spec") or {}).get("containers") or [{}]
    return str(containers[0].get("name", "main"))


def override_choices(runtime: Mapping[str, Any], rng: random.Random) -> list[tuple[Path, Json]]:
    """(path, value) a short job may say over ``runtime``: well formed, or refused, or ill typed."""
    t = rng.choice(_types(runtime))
    main = _main(runtime, t)
    replica: Path = ("spec", "replicaSpecs", t)
    pod: Path = (*replica, "template", "spec")
    container = {"name": main, "env": [{"name": "FROM_JOB", "value": "1"}]}
    new_type = rng.choice([n for n in NEW_TYPES if n not in _types(runtime)] or ["Extra"])
    other_fw = rng.choice(FRAMEWORKS)
    return [
        # Well formed: merged by name, by key.
        ((*pod, "containers"), [container]),
        ((*pod, "containers"), [{"name": main, "resources": {"limits": {"cpu": "500m"}}}]),
        ((*replica, "template", "metadata"), {"labels": {"team": "a"}}),
        ((*replica, "replicas"), rng.choice((0, 1, 2, 3))),
        ((*replica, "restartPolicy"), rng.choice(("Never", "OnFailure", "Always", "ExitCode"))),
        (("spec", "replicaSpecs", new_type), {"replicas": 1}),
        (("spec", "replicaSpecs", new_type), {"template": {"spec": {"containers": [{"name": main}]}}}),
        (("spec", "framework"), {"name": other_fw}),
        (("spec", "framework", "options"), {"mpiImplementation": "Intel"}),
        (("spec", "runPolicy"), {"suspend": True}),
        (("spec", "runPolicy"), {"backoffLimit": 0, "cleanPodPolicy": "All"}),
        (("spec", "failurePolicy", "rules"), [{"name": "preempted", "action": "FailJob"}]),
        (("spec", "successPolicy"), {"targets": [{"replicaType": t}]}),
        (("spec", "network"), {"hostNames": "PerReplica"}),
        # Another container beside the main one, or two of the same name.
        ((*pod, "containers"), [{"name": "sidecar", "image": "busybox:1"}]),
        ((*pod, "containers"), [{"name": main}, {"name": main}]),
        ((*pod, "containers"), [{"name": "sidecar"}]),
        # A null removes what the runtime said.
        (("spec", "framework"), None),
        (("spec", "replicaSpecs"), None),
        (replica, None),
        ((*replica, "template"), None),
        ((*pod, "containers"), None),
        (("spec", "failurePolicy"), None),
        (("spec", "runPolicy"), None),
        (("spec", "network"), None),
        (("spec", "successPolicy"), None),
        # The wrong type where the expansion looks.
        (("spec", "replicaSpecs"), rng.choice(("x", [], [{"replicas": 1}], 3))),
        (replica, rng.choice(("x", [], 3, True))),
        ((*replica, "template"), rng.choice(("x", [], 3))),
        (pod, rng.choice(("x", [], 3))),
        ((*pod, "containers"), rng.choice(("x", {}, {"name": main}, ["x"], [3], [None]))),
        ((*pod, "containers"), [{"name": main, "env": rng.choice(("x", ["x"], [3], {"A": "1"}))}]),
        (
            (*pod, "containers"),
            [{"name": main, "resources": rng.choice(("x", {"limits": "x"}, {"limits": []}))}],
        ),
        ((*pod, "containers"), [{"name": rng.choice((3, None, ["x"]))}]),
        (("spec", "framework"), rng.choice(("pytorch", [], 3))),
        (("spec", "framework", "pytorch"), rng.choice(("x", [], 3))),
        (("spec", "framework", "options"), rng.choice(("x", [], 3))),
        (("spec", "network"), rng.choice(("x", [], 3))),
        (("spec", "runPolicy"), rng.choice(("x", [], 3))),
    ]


def m_override(runtime: Mapping[str, Any]) -> Mutation:
    """A field of the short job's own over ``runtime``'s (one of :func:`override_choices`)."""

    def mutate(rng: random.Random, body: dict[str, Any], _version: str) -> str | None:
        spec = body.get("spec")
        if not isinstance(spec, dict):
            return None
        path, value = rng.choice(override_choices(runtime, rng))
        node: dict[str, Any] = spec
        for key in path[1:-1]:
            child = node.get(str(key))
            if not isinstance(child, dict):
                child = node[str(key)] = {}
            node = child
        node[str(path[-1])] = copy.deepcopy(value)
        return f"{fmt(path)} = {_short(value)}"

    return mutate


def m_container_override(runtime: Mapping[str, Any]) -> Mutation:
    """The main container of one of ``runtime``'s replica types, named in the job (well formed): so
    that the container mutations have something of the job's own to change."""

    def mutate(rng: random.Random, body: dict[str, Any], _version: str) -> str | None:
        spec = body.get("spec")
        if not isinstance(spec, dict) or isinstance(spec.get("replicaSpecs"), dict):
            return None
        t = rng.choice(_types(runtime))
        container = {"name": _main(runtime, t), "env": [{"name": "FROM_JOB", "value": "1"}]}
        spec["replicaSpecs"] = {t: {"template": {"spec": {"containers": [container]}}}}
        return fmt(("spec", "replicaSpecs", t, "template", "spec", "containers", 0))

    return mutate


# --- what only a runtime says ----------------------------------------------------------------------


def m_trainer_policy(rng: random.Random, body: dict[str, Any], _version: str) -> str | None:
    """A runtime's trainer policy naming a replica type it lacks, the launcher as the node type, ..."""
    spec = body.get("spec")
    if not isinstance(spec, dict):
        return None
    types = list(spec["replicaSpecs"]) if isinstance(spec.get("replicaSpecs"), dict) else ["Worker"]
    value: dict[str, Any] = rng.choice(
        (
            {"replicaType": "Nope"},
            {"replicaType": rng.choice(types).lower()},
            {"replicaType": rng.choice(types)},
            {"commandReplicaTypes": []},
            {"commandReplicaTypes": ["Nope"]},
            {"commandReplicaTypes": [*types, *types]},
            {"commandReplicaTypes": types},
            {"replicaType": "Worker", "commandReplicaTypes": [rng.choice(types)]},
            {},
        )
    )
    spec["trainer"] = copy.deepcopy(value)
    return f"spec.trainer = {_short(value)}"


ACCELERATORS: tuple[Json, ...] = (
    {"nvidia.com/gpu": {"env": {"1BAD": "x"}}},
    {"nvidia.com/gpu": {"env": {"NVIDIA_VISIBLE_DEVICES": "all"}}},
    {"nvidia.com/gpu": {"volumes": [{"name": "Bad Name", "hostPath": "/usr/lib", "mountPath": "/drv"}]}},
    {"nvidia.com/gpu": {"volumes": [{"name": "drv", "hostPath": "", "mountPath": "/drv"}]}},
    {"nvidia.com/gpu": {"volumes": [{"name": "drv", "hostPath": "relative", "mountPath": "relative"}]}},
    {
        "nvidia.com/gpu": {
            "volumes": [
                {"name": "drv", "hostPath": "/usr/lib", "mountPath": "/drv"},
                {"name": "drv", "hostPath": "/opt", "mountPath": "/opt"},
            ]
        }
    },
    {"nvidia.com/gpu": {"volumes": [{"name": "kubetrain-ssh", "hostPath": "/x", "mountPath": "/root/.ssh"}]}},
    {"nvidia.com/gpu": {"tolerations": [{"operator": "Maybe"}]}},
    {"nvidia.com/gpu": {"tolerations": [{"key": "k", "operator": "Exists", "value": "v"}]}},
    {"nvidia.com/gpu": {"tolerations": ["x"]}},
    {"cpu": {"env": {"FROM_PROFILE": "1"}}},
    {"bad key!": {}},
    {"nvidia.com/gpu": None},
    {"nvidia.com/gpu": {"bogus": 1}},
)


def m_accelerators(rng: random.Random, body: dict[str, Any], _version: str) -> str | None:
    """A runtime's accelerator profile that a job requesting the resource (and only such a job) meets."""
    spec = body.get("spec")
    if not isinstance(spec, dict):
        return None
    value = copy.deepcopy(rng.choice(ACCELERATORS))
    spec["accelerators"] = value
    return f"spec.accelerators = {_short(value)}"


def m_runtime_ref(namespace: str) -> Mutation:
    """A runtime building on another: a shipped one (well formed), one not there, itself (a loop),
    one of another namespace, a ClusterTrainingRuntime said with a namespace."""

    def mutate(rng: random.Random, body: dict[str, Any], _version: str) -> str | None:
        spec, meta = body.get("spec"), body.get("metadata")
        if not isinstance(spec, dict) or not isinstance(meta, dict):
            return None
        me = meta.get("name")
        value = rng.choice(
            (
                {"name": "torch-distributed"},
                {"name": rng.choice(("mpi-distributed", "tensorflow-ps", "jax-distributed"))},
                {"name": f"{me}-not-there"},
                {"kind": "TrainingRuntime", "name": me},
                {"kind": "ClusterTrainingRuntime", "name": me},
                {"kind": "TrainingRuntime", "name": me, "namespace": OTHER_NAMESPACE},
                {"kind": "TrainingRuntime", "name": "torch-distributed"},
                {"name": "torch-distributed", "namespace": namespace},
                {"kind": "Bogus", "name": "torch-distributed"},
                {"name": "torch-distributed", "generation": 0},
            )
        )
        spec["runtimeRef"] = copy.deepcopy(value)
        if rng.random() < 0.5:  # built on another: say only what it changes
            for key in ("framework", "failurePolicy", "runPolicy", "accelerators", "progress"):
                spec.pop(key, None)
        return f"spec.runtimeRef = {_short(value)}"

    return mutate


def runtime_kinds(namespace: str) -> dict[str, Mutation]:
    return {
        "trainer_policy": m_trainer_policy,
        "accelerators": m_accelerators,
        "runtime_ref": m_runtime_ref(namespace),
    }


def trainer_kinds(kinds: Mapping[str, Mutation]) -> dict[str, Mutation]:
    """``kinds`` (the whole jobs' mutations) with the trainer form of those that have one, and the
    trainer's own."""
    forms: dict[str, Mutation] = {
        "resources_junk": t_resources,
        "no_image": t_no_image,
        "image_type": t_image_type,
        "args_items": t_args_items,
        "huge_string": t_huge_string,
        "deep_nesting": t_deep_nesting,
        "pod_invalid": t_env,
    }
    out = {k: (trainer_or(forms[k], m) if k in forms else m) for k, m in kinds.items()}
    out["trainer_value"] = m_trainer_value
    return out
