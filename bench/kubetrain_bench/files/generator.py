"""Hostile files and streams, made from the repository's samples at random, reproducibly.

:func:`cases` draws, for each case, a kind from :data:`KINDS` (by weight) and a sample of
``samples/v1beta1``, ``samples/v1alpha1`` or ``samples/legacy`` (an old operator's job), and
makes the bytes: the sample in another encoding, with bytes that are not text, a binary, an
alias bomb, a value nested thousands deep, five megabytes, a key written twice, a
``!!python/object`` tag, a number JSON cannot hold, several documents, nothing at all, a wrong
type at any path (:func:`wrong_type`, and the webhook benchmark's own hostile documents,
:func:`hostile_document`), broken syntax. Each :class:`Case` says what every door must make of it
(:mod:`kubetrain_bench.files.kinds`).

The same ``seed`` gives the same cases, and ``cases(seed, n)`` is a prefix of ``cases(seed, m)``
for ``n <= m``: a master ``random.Random(seed)`` draws one seed per case.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import json
import random
from collections.abc import Callable, Iterator
from typing import Any

import yaml

from kubetrain_bench import samples
from kubetrain_bench.files import make_bytes, make_yaml
from kubetrain_bench.files.kinds import ANY, OK, Base, Made
from kubetrain_bench.hostile import generator as hostile
from kubetrain_bench.hostile import values, walk

VERSIONS = ("v1beta1", "v1alpha1", "legacy")
DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)  # libyaml's: a 1 MiB string in a blink
BIG = 1 << 20  # a case of more bytes than this is "big" (the unit tier runs few of them)


@dataclasses.dataclass(frozen=True)
class Case:
    index: int
    kind: str
    base: Base
    made: Made

    @property
    def data(self) -> bytes:
        return self.made.data

    @property
    def label(self) -> str:
        return f"{self.kind} of {self.base.name}: {self.made.label}"

    @property
    def big(self) -> bool:
        return len(self.made.data) > BIG


@functools.cache
def bases() -> tuple[Base, ...]:
    """Every sample, in a fixed order."""
    found = []
    for version in VERSIONS:
        for name in samples.names(version):
            text = (samples.SAMPLES / version / f"{name}.yaml").read_text()
            found.append(Base(f"{version}/{name}", text, yaml.load(text, Loader=yaml.CSafeLoader)))
    return tuple(found)


def sample(_rng: random.Random, _base: Base) -> Made:
    return Made(_base.text.encode(), OK, "as written")


def wrong_type(rng: random.Random, base: Base) -> Made:
    """A value of another type at any path of the sample (its metadata, spec or a pod template)."""
    data: Any = copy.deepcopy(base.data)
    path, value = rng.choice([(p, v) for p, v in walk.paths(data) if p])
    walk.at(data, path[:-1])[path[-1]] = values.other_type(rng, value)
    return Made(_dump(rng, data, "block"), ANY, walk.fmt(path))


def hostile_document(rng: random.Random, _base: Base) -> Made:
    """One of the webhook benchmark's hostile documents (1-3 mutations of a sample), as YAML."""
    doc = next(hostile.documents(rng.getrandbits(32), 1))
    style = rng.choice(("block", "flow", "json"))
    return Made(_dump(rng, doc.body, style), ANY, f"{doc.label} ({style})")


def _dump(rng: random.Random, data: Any, style: str) -> bytes:
    """``data`` as YAML in ``style``; as JSON (YAML too) where the emitter cannot write it (lone
    surrogates, hundreds of levels), the surrogates then as the bytes that are not UTF-8."""
    if style != "json":
        try:
            text: str = yaml.dump(
                data,
                Dumper=DUMPER,
                sort_keys=False,
                width=120,
                default_flow_style=style == "flow",
                allow_unicode=True,
            )
            return text.encode()
        except (UnicodeEncodeError, RecursionError):
            pass
    return json.dumps(data, ensure_ascii=rng.random() < 0.5).encode(errors="surrogatepass")


def _documents(rng: random.Random, base: Base) -> Made:
    return make_yaml.documents(rng, base, list(bases()))


KINDS: dict[str, tuple[int, Callable[[random.Random, Base], Made]]] = {
    # kind: (weight, maker)
    "sample": (3, sample),
    "encoding": (8, make_bytes.encoded),
    "bad_bytes": (5, make_bytes.bad_bytes),
    "latin1": (2, make_bytes.latin1),
    "control": (4, make_bytes.control),
    "binary": (4, make_bytes.binary),
    "truncated": (5, make_bytes.truncated),
    "empty": (4, make_bytes.empty),
    "aliased": (4, make_yaml.aliased),
    "bomb": (6, make_yaml.bomb),
    "recursive": (2, make_yaml.recursive),
    "deep": (6, make_yaml.deep),
    "size": (1, make_yaml.size),
    "duplicate": (8, make_yaml.duplicate),
    "tag": (7, make_yaml.tag),
    "number": (7, make_yaml.number),
    "key": (4, make_yaml.key),
    "documents": (5, _documents),
    "syntax": (8, make_yaml.syntax),
    "wrong_type": (10, wrong_type),
    "hostile_document": (8, hostile_document),
}


def cases(seed: int, count: int) -> Iterator[Case]:
    """``count`` hostile files, the same for the same ``seed``."""
    every = bases()
    kinds = list(KINDS)
    weights = [KINDS[k][0] for k in kinds]
    master = random.Random(seed)
    for index in range(count):
        rng = random.Random(master.getrandbits(64))
        kind = rng.choices(kinds, weights)[0]
        base = rng.choice(every)
        yield Case(index=index, kind=kind, base=base, made=KINDS[kind][1](rng, base))
