"""Hostile files made at the level of YAML: aliases and bombs, depth, size, duplicate keys, tags,
numbers, several documents, keys that are not strings, broken syntax.

Most edit a sample's text where a key of a block map has its scalar value on its own line
(:func:`spots`, found by composing the sample, so never inside a block scalar): they replace
the value, or add a key beside it. Makers return a :class:`~kubetrain_bench.files.kinds.Made`.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Sequence

import yaml

from kubetrain.api.yamlsafe import MAX_BYTES, MAX_DEPTH, MAX_DOCUMENTS, MAX_VALUES
from kubetrain_bench.files.kinds import ANY, ERROR, OK, Base, Made

# MAX_*: what kubetrain reads at most. A case well past a bound must be an error.


@dataclasses.dataclass(frozen=True)
class Spot:
    """A key of a block map whose scalar value is on the key's line."""

    line: int  # 0-based
    column: int
    key: str
    depth: int  # maps and lists around it


def spots(text: str) -> list[Spot]:
    found: list[Spot] = []
    root = yaml.compose(text, Loader=yaml.CSafeLoader)
    todo: list[tuple[yaml.Node, int]] = [(root, 1)] if root is not None else []
    while todo:
        node, depth = todo.pop()
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                if (
                    not node.flow_style
                    and isinstance(k, yaml.ScalarNode)
                    and isinstance(v, yaml.ScalarNode)
                    and k.start_mark.line == v.end_mark.line
                    and k.value != "<<"
                ):
                    found.append(Spot(k.start_mark.line, k.start_mark.column, k.value, depth))
                todo.append((v, depth + 1))
        elif isinstance(node, yaml.SequenceNode):
            todo.extend((v, depth + 1) for v in node.value)
    return sorted(found, key=lambda s: s.line)


def _replace(base: Base, spot: Spot, value: str) -> str:
    lines = base.text.split("\n")
    lines[spot.line] = f"{' ' * spot.column}{spot.key}: {value}"
    return "\n".join(lines)


def _beside(base: Base, spot: Spot, line: str) -> str:
    """``line`` as a key of the same map, just below ``spot``."""
    lines = base.text.split("\n")
    lines.insert(spot.line + 1, " " * spot.column + line)
    return "\n".join(lines)


# --- duplicates, tags, numbers, keys ----------------------------------------------------------


def duplicate(rng: random.Random, base: Base) -> Made:
    """A key written twice in one map: an error at the second, naming both lines."""
    spot = rng.choice(spots(base.text))
    text = _beside(base, spot, f"{spot.key}: {rng.choice(('again', '2', 'true', '[]', '{}', 'null'))}")
    first, second = spot.line + 1, spot.line + 2
    return Made(text.encode(), ERROR, f"{spot.key!r} on lines {first} and {second}", second, (first, second))


REFUSED_TAGS = (
    '!!python/object/apply:os.system ["echo pwned"]',
    "!!python/object:__main__.Exploit {}",
    "!!python/object/new:type [x, [], {}]",
    "!!python/name:os.system",
    "!!python/module:os",
    "!!binary aGVsbG8=",
    "!!set {a, b}",
    "!!omap [{a: 1}]",
    "!!pairs [{a: 1}]",
    "!custom x",
    "!<tag:example.com,2000:app/foo> x",
    "!!float .nan",
    "!!int abc",
    "!!int ''",
    "!!bool maybe",
)
KEPT_TAGS = (
    "!!str 12",
    '!!int "12"',
    '!!float "1.5"',
    '!!null ""',
    '!!bool "true"',
    "! 12",
    "!!timestamp 2001-12-14",
    "!!map {}",
    "!!seq []",
)


def tag(rng: random.Random, base: Base) -> Made:
    """A tagged value: the tags of plain data are read, any other is an error at its line."""
    return _value(rng, base, rng.choice(spots(base.text)), REFUSED_TAGS, KEPT_TAGS, odds=0.75)


REFUSED_NUMBERS = (
    ".nan",
    ".NaN",
    ".inf",
    "-.Inf",
    "+.INF",
    "1.0e+400",
    "-1.5e+999",
    "1" * 101,
    "9" * 5000,
    "1:" * 60 + "1",
)
KEPT_NUMBERS = (
    "1e308",
    "-0",
    "0x7fffffffffffffff",
    "0o17",
    "0b101",
    "1_000_000",
    "1:30:00",
    "010",
    "99999999999999999999999999999",
    "-9223372036854775809",
    "1.7976931348623157e308",
    "5e-324",
    "-.5",
    "2001-12-14",
    "2001-12-14t21:59:43.10-05:00",
)


def number(rng: random.Random, base: Base) -> Made:
    """A value that is a number JSON cannot hold, or one too long to read (errors), or an odd one.

    Never a replica count: ``1:30:00`` is 5,400 there, a valid job of thousands of pods that
    ``render`` takes seconds to print (how big a job may be is admission's question, not a
    file's; as the webhook benchmark's generator, this one asks for few replicas)."""
    spot = rng.choice([s for s in spots(base.text) if not s.key.lower().endswith("replicas")])
    return _value(rng, base, spot, REFUSED_NUMBERS, KEPT_NUMBERS, odds=0.5)


def _value(
    rng: random.Random, base: Base, spot: Spot, refused: Sequence[str], kept: Sequence[str], *, odds: float
) -> Made:
    """``base`` with a value at ``spot``: one of ``refused`` (with probability ``odds``; an error at
    its line) or one of ``kept`` (any answer)."""
    if rng.random() < odds:
        value = rng.choice(refused)
        shown = value if len(value) <= 60 else f"{value[:8]}... ({len(value)} characters)"
        return Made(
            _replace(base, spot, value).encode(), ERROR, f"{shown} at line {spot.line + 1}", spot.line + 1
        )
    value = rng.choice(kept)
    return Made(_replace(base, spot, value).encode(), ANY, f"{value} at line {spot.line + 1}")


REFUSED_KEYS = (
    "? [a, b]\n{indent}: c",
    "? {a: 1}\n{indent}: c",
    "[1]: 2",
    "{{a: 1}}: 2",
    "<<: 5",
    "<<: [a, b]",
    "*nowhere : x",
)
KEPT_KEYS = ("1: x", "true: y", "null: z", "~: q", '"": e', "on: 1", "'key with spaces': 1", "0x10: hex")


def key(rng: random.Random, base: Base) -> Made:
    """A key that is a list, a map or an alias (errors), or a scalar that is not a word."""
    spot = rng.choice(spots(base.text))
    refused = rng.random() < 0.5
    line = rng.choice(REFUSED_KEYS if refused else KEPT_KEYS).replace("{indent}", " " * spot.column)
    text = _beside(base, spot, line)
    label = f"{line.splitlines()[0]!r} below line {spot.line + 1}"
    return Made(text.encode(), ERROR if refused else ANY, label, spot.line + 2 if refused else None)


# --- aliases and bombs ------------------------------------------------------------------------


def aliased(rng: random.Random, base: Base) -> Made:
    """Aliases and merges as people use them: the sample's metadata merged from an anchor (read as
    the sample, with a label more), or its first map repeated by an alias."""
    data = base.data
    others = "".join(
        yaml.safe_dump({k: v}, sort_keys=False, width=120) for k, v in data.items() if k != "metadata"
    )
    meta = dict(data.get("metadata") or {})
    labels = {**meta.pop("labels", {}), "team": "vision"}
    merged = yaml.safe_dump(meta, sort_keys=False, width=120) if meta else ""
    indented = "".join(f"  {ln}\n" for ln in merged.splitlines())
    text = f"metadata:\n  <<: &meta {{labels: {yaml.safe_dump(labels, default_flow_style=True).strip()}}}\n{indented}{others}"
    if rng.random() < 0.5:
        return Made(text.encode(), OK, "metadata merged from &meta")
    spot = rng.choice(spots(base.text))
    again = _beside(base, spot, "x-again: &again {a: [1, 2, {b: c}]}")
    again = again + "\n# an alias below\nx-copy: *again\n"
    return Made(again.encode(), ANY, f"&again below line {spot.line + 1}")


def bomb(rng: random.Random, base: Base) -> Made:
    """Billion laughs: levels of lists of aliases of the level before, somewhere in the sample;
    an error once it would expand past the bound, never expanded."""
    width, levels = rng.randint(2, 12), rng.randint(3, 12)
    items = ", ".join(["lol"] * width)
    parts = [f"l0: &l0 [{items}]"]
    for i in range(1, levels):
        parts.append(f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * width)}]")
    expanded = sum(width ** (i + 1) for i in range(levels))
    expect = ERROR if expanded > 2 * MAX_VALUES else ANY
    label = f"{width} wide, {levels} levels ({expanded:,} values)"
    style = rng.random()
    if style < 0.2:  # a document of its own
        return Made(("\n".join(parts) + "\n").encode(), expect, label + ", alone")
    spot = rng.choice(spots(base.text))
    if style < 0.6:  # one line, a flow map
        return Made(
            _beside(base, spot, f"bomb: {{{', '.join(parts)}}}").encode(),
            expect,
            f"{label} below line {spot.line + 1}",
        )
    block = "bomb:\n" + "\n".join(" " * (spot.column + 2) + p for p in parts)
    return Made(_beside(base, spot, block).encode(), expect, f"{label}, block, below line {spot.line + 1}")


def recursive(rng: random.Random, base: Base) -> Made:
    """An alias of what holds it, or of no anchor at all: an error."""
    spot = rng.choice(spots(base.text))
    value = rng.choice(("&a [*a]", "&a {b: *a}", "*nowhere", "[&a x, *b]", "&a [1, &b [2, *a]]"))
    return Made(
        _beside(base, spot, f"loop: {value}").encode(),
        ERROR,
        f"{value} below line {spot.line + 1}",
        spot.line + 2,
    )


# --- depth and size ---------------------------------------------------------------------------

DEPTHS = (20, 60, 99, 101, 150, 999, 1000, 1001, 5000, 100_000)


def deep(rng: random.Random, base: Base) -> Made:
    """A value nested ``d`` levels, in flow or block style: an error past the bound."""
    spot = rng.choice(spots(base.text))
    d = rng.choice(DEPTHS)
    style = rng.choice(("flow-list", "flow-map", "block-list", "block-map"))
    if style == "flow-list":
        value = "[" * d + "x" + "]" * d
    elif style == "flow-map":
        value = "{a: " * d + "x" + "}" * d
    elif style == "block-list":
        d = min(d, 2000)
        value = "- " * d + "x"
        value = "\n" + " " * (spot.column + 2) + value
    else:
        d = min(d, 400)
        value = "".join("\n" + " " * (spot.column + 2 + 2 * i) + "a:" for i in range(d)) + " x"
    total = spot.depth + d
    expect = ERROR if total > MAX_DEPTH + 1 else ANY
    return Made(
        _beside(base, spot, f"deep: {value}").encode(), expect, f"{style} {d} deep below line {spot.line + 1}"
    )


def size(rng: random.Random, base: Base) -> Made:
    """About 5 MB: one long value, many keys, a long list, comments; or past the bound in bytes."""
    style = rng.choice(("one-value", "many-keys", "long-list", "comments", "too-big", "long-key"))
    spot = rng.choice(spots(base.text))
    mb = 5_000_000
    if style == "one-value":
        return Made(_beside(base, spot, "big: " + "x" * mb).encode(), ANY, "a 5 MB value")
    if style == "many-keys":
        entries = "\n".join(" " * (spot.column + 2) + f"k{i}: {'v' * 120}" for i in range(mb // 130))
        return Made(_beside(base, spot, "big:\n" + entries).encode(), ANY, f"{mb // 130:,} keys of 120 bytes")
    if style == "long-list":
        n = mb // 4
        expect = ERROR if n > 2 * MAX_VALUES else ANY
        return Made(
            _beside(base, spot, "big: [" + "1, " * n + "1]").encode(), expect, f"a list of {n:,} numbers"
        )
    if style == "comments":
        return Made(
            (("#" * 99 + "\n") * (mb // 100) + base.text).encode(), OK, "5 MB of comments, then the sample"
        )
    if style == "too-big":
        return Made(
            (("#" * 99 + "\n") * (MAX_BYTES // 100 + 1000) + base.text).encode(),
            ERROR,
            "past the bound in bytes",
            1,
        )
    return Made(("k" * mb + ": 1\n").encode(), ERROR, "a 5 MB key")


# --- documents and syntax ---------------------------------------------------------------------

CONFIG_MAP = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {a: b}\n"


def documents(rng: random.Random, base: Base, others: list[Base]) -> Made:
    """Several documents: samples, empty ones, end markers, a directive, perhaps a ConfigMap;
    or more documents than kubetrain reads in one file (an error)."""
    if rng.random() < 0.1:
        n = MAX_DOCUMENTS + rng.randint(1, 50)
        return Made(("---\n" + base.text + "\n").encode() * n, ERROR, f"{n} documents")
    docs = [base.text, *(o.text for o in rng.sample(others, rng.randint(1, 4)))]
    if rng.random() < 0.3:
        docs.insert(rng.randrange(len(docs) + 1), CONFIG_MAP)
    if rng.random() < 0.3:
        docs.insert(rng.randrange(len(docs) + 1), "# nothing here\n")
    end = "...\n" if rng.random() < 0.3 else ""
    text = "".join(f"---\n{d.rstrip()}\n{end}" for d in docs)
    if rng.random() < 0.2:
        text = "%YAML 1.1\n" + text
    return Made(text.encode(), ANY, f"{len(docs)} documents")


BREAKERS = (
    "\tkey: tab",
    "key: [unclosed",
    'key: "unclosed',
    "key: 'unclosed",
    "key: {a: 1",
    "key: value: more",
    "- item",
    ": nokey",
    "key: &",
    "key: *",
    "key: @reserved",
    "key: `tick",
    "]",
    "}",
    "key: |\n bad",
    "%TAG ! tag:x,2000:",
    "--- !",
    "key: !<> x",
    'key: "\\q"',
    'key: "\\ud800"',
)


def syntax(rng: random.Random, base: Base) -> Made:
    """A line that breaks the YAML somewhere: the error, if any, is on a line of the file."""
    lines = base.text.split("\n")
    n = rng.randrange(len(lines))
    breaker = rng.choice(BREAKERS)
    indent = " " * rng.choice((0, 1, 2, 3, 4, 6))
    lines.insert(n, indent + breaker)
    return Made("\n".join(lines).encode(), ANY, f"{breaker!r} at line {n + 1}")
