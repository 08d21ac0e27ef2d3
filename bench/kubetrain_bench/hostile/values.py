"""The values the mutations put in: junk of every JSON type, extremes, bad names and enums."""

from __future__ import annotations

import copy
import random

from kubetrain_bench.hostile.walk import MAX_REPLICAS, Json

MIB = 1 << 20
DEPTHS = (100, 500, 500)  # levels of junk under a pod template

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
