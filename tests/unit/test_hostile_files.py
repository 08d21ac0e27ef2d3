"""Hostile files through every door: convert, render, submit, the client and the shared reader.

Three hundred cases of the seeded generator (bench/kubetrain_bench/files; ``make bench-files``
runs 10,000 through all five doors, each case in a process of its own, timed and measured) run
here in this process — each through the reader, the client and one of the three commands in
turn — and a handful through the installed ``kubetrain`` command: each ends with its output, or exit 1 and
``error: FILE:LINE:COLUMN: ...`` lines — never a traceback, never past the end of the file,
never a file that must be refused accepted (kubetrain_bench.files.doors.judge says what is
wrong). The generator itself is checked too: reproducible, every kind reached.
"""

from __future__ import annotations

import collections
import os
import pathlib
import subprocess
import sys
from collections.abc import Iterator

import pytest

from kubetrain import client
from kubetrain_bench.files import doors, generator, make_yaml
from kubetrain_bench.files.kinds import ERROR

SEED, COUNT = 27, 300
COMMANDS = ("convert", "render", "submit")


@pytest.fixture(scope="module")
def cases() -> list[generator.Case]:
    return [c for c in generator.cases(SEED, COUNT + 40) if not c.big][:COUNT]


@pytest.fixture(scope="module")
def no_cluster() -> Iterator[client.Client]:
    with doors.client_without_cluster() as c:
        yield c


def test_the_same_seed_makes_the_same_files_and_a_shorter_run_is_a_prefix() -> None:
    first = [(c.kind, c.label, c.data) for c in generator.cases(5, 200)]
    assert first == [(c.kind, c.label, c.data) for c in generator.cases(5, 200)]
    assert first[:50] == [(c.kind, c.label, c.data) for c in generator.cases(5, 50)]
    assert first != [(c.kind, c.label, c.data) for c in generator.cases(6, 200)]


def test_every_kind_and_every_sample_is_reached() -> None:
    many = list(generator.cases(12, 1000))
    kinds = collections.Counter(c.kind for c in many)
    assert set(kinds) == set(generator.KINDS)
    assert {c.base.name for c in many} == {b.name for b in generator.bases()}
    expected = collections.Counter(c.made.expect for c in many)
    assert expected[ERROR] > 250, expected
    assert sum(c.big for c in many) < 25


def test_hostile_files_through_every_door(
    cases: list[generator.Case], no_cluster: client.Client, tmp_path: pathlib.Path
) -> None:
    # No kubeconfig at all: submit must refuse a bad file before it looks for one (the bench's
    # kubeconfig points at a port nothing listens on; tests/unit/test_kubeconfig.py has both).
    kubeconfig = tmp_path / "no-kubeconfig"
    problems = []
    seen: collections.Counter[str] = collections.Counter()
    for case in cases:
        stdin = case.index % 4 == 3
        path = tmp_path / f"case-{case.index}.yaml"
        path.write_bytes(case.data)
        # Every case through the reader and the client, and through one command in turn (the
        # bench runs every case through all five).
        for door in ("read", "client", COMMANDS[case.index % len(COMMANDS)]):
            o = doors.run(
                door, "-" if stdin else str(path), str(kubeconfig), no_cluster, case.data if stdin else None
            )
            problem = doors.judge(case, o, doors.STDIN if stdin else str(path))
            if problem is not None:
                problems.append(f"case {case.index} ({case.label[:100]}) {door}: {problem}")
            seen[f"{door} {'done' if o.code == 0 else 'refused'}"] += 1
    assert not problems, "\n".join(problems[:20])
    # Both outcomes happen at every door that can succeed without a cluster.
    assert all(seen[f"{d} done"] >= 5 for d in ("read", "convert", "render")), seen


def cpu_seconds() -> float:
    """This process's CPU time and its waited-for children's: the work done, which a loaded machine
    does not stretch as it stretches the wall clock (a test of this file once took 6.8 s of wall time
    under a load average of 20)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def test_five_megabytes_are_read_or_refused_within_seconds(
    tmp_path: pathlib.Path, no_cluster: client.Client
) -> None:
    base = next(b for b in generator.bases() if b.name == "v1beta1/pytorch-ddp")
    spot = make_yaml.spots(base.text)[0]
    for text, done in (
        (make_yaml._beside(base, spot, "big: " + "x" * 5_000_000), True),
        (make_yaml._beside(base, spot, "big: [" + "1, " * 1_250_000 + "1]"), False),
    ):
        path = tmp_path / "big.yaml"
        path.write_text(text)
        started = cpu_seconds()
        o = doors.run("read", str(path), "", no_cluster)
        assert cpu_seconds() - started < 5
        assert (o.code == 0) == done, o.err


def test_the_command_itself_on_a_few(tmp_path: pathlib.Path) -> None:
    """The installed command, as a person runs it: one error line, within the limit."""
    lol = ", ".join(["lol"] * 9)
    bomb = (
        "a: &a ["
        + lol
        + "]\n"
        + "".join(
            f"{c}: &{c} [{', '.join([f'*{p}'] * 9)}]\n" for p, c in zip("abcdefgh", "bcdefghi", strict=True)
        )
    )
    script = pathlib.Path(sys.executable).parent / "kubetrain"
    for verb, data, said in (
        ("render", bomb.encode(), "holds more than 200,000 values"),
        ("convert", b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)), "not UTF-8 text"),
        ("submit", ("spec: " + "[" * 5000 + "]" * 5000 + "\n").encode(), "spec"),
    ):
        path = tmp_path / f"{verb}.yaml"
        path.write_bytes(data)
        started = cpu_seconds()
        result = subprocess.run(
            [str(script), verb, str(path)], capture_output=True, text=True, timeout=30, check=False
        )
        assert cpu_seconds() - started < 5
        assert result.returncode == 1, result.stderr
        (line,) = result.stderr.splitlines()
        assert line.startswith(f"error: {path}:1:") or line.startswith(f"error: {path}:"), line
        assert said in line, line
