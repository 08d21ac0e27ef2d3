"""The one way kubetrain reads a file (kubetrain.api.documents over kubetrain.api.yamlsafe).

Every input ends in documents of plain data or in one DocumentError line
``FILE:LINE:COLUMN: path: message`` — at the problem's line, never past the end — whatever
the bytes: encodings and byte-order marks, bytes that are not text, control characters,
nothing, keys written twice, tags, aliases and bombs, depth, size, numbers JSON cannot hold.
The same holds with PyYAML's own parser, where libyaml is missing.
"""

from __future__ import annotations

import codecs
import time
from typing import Any

import pytest

from kubetrain.api import documents, yamlsafe

JOB = """\
apiVersion: training.kubetrain.dev/v1beta1
kind: TrainingJob
metadata:
  name: x
  labels: {team: vision}
spec:
  replicaSpecs:
    Worker:
      replicas: 2
      template:
        spec:
          containers:
          - name: c
            image: busybox
"""


@pytest.fixture(params=["libyaml", "python"])
def parser(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each test with libyaml's parser and with PyYAML's own."""
    if request.param == "python":
        monkeypatch.setattr(yamlsafe, "_CParser", None)
    elif not yamlsafe.LIBYAML:
        pytest.skip("PyYAML without libyaml")
    return str(request.param)


def read(data: bytes | str) -> list[Any]:
    return [d.data for d in documents.loads(data, "job.yaml")]


def refused(data: bytes | str) -> str:
    with pytest.raises(documents.DocumentError) as e:
        documents.loads(data, "job.yaml")
    message = str(e.value)
    assert "\n" not in message
    return message


def test_libyaml_reads_where_pyyaml_has_it() -> None:
    import yaml

    assert yaml.__with_libyaml__ == yamlsafe.LIBYAML


@pytest.mark.parametrize(
    "encoding", ["utf-8", "utf-8-sig", "utf-16", "utf-16-le", "utf-16-be", "utf-32", "utf-32-le", "utf-32-be"]
)
def test_every_encoding_yaml_allows_reads_the_same(parser: str, encoding: str) -> None:
    assert read(JOB.encode(encoding)) == read(JOB)
    assert read(JOB.replace("\n", "\r\n").encode(encoding)) == read(JOB)


def test_bytes_that_are_not_text_are_named_at_their_line_and_column(parser: str) -> None:
    data = JOB.encode().replace(b"name: x", b"name: \xe9x")
    assert refused(data) == (
        "job.yaml:4:9: not UTF-8 text (0xe9: invalid continuation byte); YAML is UTF-8, UTF-16 or UTF-32 text"
    )
    assert refused(b"\xff\xd8\xff\xe0binary").startswith("job.yaml:1:1: not UTF-8 text (0xff")
    assert refused("a: 1\nb: x\x00y\n") == (
        "job.yaml:2:5: the control character U+0000 is not allowed in YAML "
        '(in a double-quoted string, write it as an escape such as "\\x00")'
    )
    assert read('a: "x\\x00y\\u0007"\n') == [{"a": "x\x00y\x07"}]


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\n\n",
        b"  \n \n",
        b"# only\n# comments",
        b"---\n",
        b"---\n...\n",
        b"~\n",
        b"null",
        codecs.BOM_UTF16_LE,
    ],
)
def test_nothing_is_an_error(parser: str, data: bytes) -> None:
    assert refused(data) == "job.yaml:1:1: no document in it: it is empty, or only comments"


def test_empty_documents_between_others_are_skipped(parser: str) -> None:
    assert read("---\n---\na: 1\n--- ~\n---\nb: 2\n...\n") == [{"a": 1}, {"b": 2}]


def test_a_key_written_twice_is_an_error_naming_both_lines(parser: str) -> None:
    assert refused(JOB.replace("      replicas: 2\n", "      replicas: 2\n      replicas: 3\n")) == (
        "job.yaml:10:7: spec.replicaSpecs.Worker.replicas: duplicate key 'replicas': "
        "written at line 9 and again at line 10; keep one"
    )
    assert refused("a: {b: 1, b: 2}\n").startswith("job.yaml:1:11: a.b: duplicate key 'b': written at line 1")
    # a merge gives defaults: keys written in the map win, and are no duplicates
    assert read("base: &b {x: 1, y: 2}\nm: {<<: *b, y: 3}\n") == [
        {"base": {"x": 1, "y": 2}, "m": {"x": 1, "y": 3}}
    ]
    assert read("a: &a {x: 1}\nb: &b {x: 2, z: 3}\nm:\n  <<: [*a, *b]\n") == [
        {"a": {"x": 1}, "b": {"x": 2, "z": 3}, "m": {"x": 1, "z": 3}}
    ]
    assert refused("m: {<<: 5}\n") == "job.yaml:1:9: m.<<: << merges a map, or a list of maps, into this one"


def test_an_alias_is_a_copy_and_a_bomb_is_refused_before_it_is_expanded(parser: str) -> None:
    (data,) = read("a: &x {b: [1, 2]}\nc: *x\n")
    assert data == {"a": {"b": [1, 2]}, "c": {"b": [1, 2]}}
    assert data["a"] is not data["c"]
    lines = ['a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    lines += [f"{c}: &{c} [{', '.join([f'*{p}'] * 9)}]" for p, c in zip("abcdefgh", "bcdefghi", strict=True)]
    started = time.perf_counter()
    message = refused("\n".join(lines) + "\n")
    assert time.perf_counter() - started < 1
    assert message.startswith(
        "job.yaml:6:12: f[1]: holds more than 200,000 values (aliases expanded: *e is 66,430)"
    )
    assert refused("a: *nowhere\n") == "job.yaml:1:4: a: *nowhere names no anchor (&nowhere) before it"
    assert refused("a: &a [*a]\n") == "job.yaml:1:8: a[0]: *a names no anchor (&a) before it"


def test_nesting_is_bounded_however_it_is_written(parser: str) -> None:
    assert read("a: " + "[" * 99 + "]" * 99 + "\n")
    assert refused("a: " + "[" * 100 + "]" * 100 + "\n").startswith(
        "job.yaml:1:103: a[0][0][0][0][0]... (100 levels): nests deeper than 100 levels"
    )
    for deep in ("{a: " * 5000 + "}" * 5000, "- " * 3000 + "x", "[" * 100_000):
        assert refused(deep).startswith("job.yaml:1:")


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("!!python/object/apply:os.system [echo]", "the tag !!python/object/apply:os.system is not allowed"),
        ("!!python/name:os.system", "the tag !!python/name:os.system is not allowed"),
        ("!!binary aGk=", "the tag !!binary is not allowed"),
        ("!!set {a, b}", "the tag !!set is not allowed"),
        ("!!omap [{a: 1}]", "the tag !!omap is not allowed"),
        ("!local x", "the tag !local is not allowed"),
        (".nan", ".nan is not a finite number; JSON, and so the cluster, cannot hold it"),
        ("-.inf", "-.inf is not a finite number"),
        ("1.0e+400", "1.0e+400 is not a finite number"),
        ("1" * 101, "a number 101 characters long; kubetrain reads numbers of at most 100"),
        ("!!int abc", "'abc' is not an integer"),
        ("!!int ''", "'' is not an integer"),
        ("!!bool maybe", "!!bool 'maybe' is not true or false"),
        ("{[1]: 2}", "a key must be a string, not a list"),
    ],
)
def test_tags_and_numbers_plain_data_cannot_hold_are_errors_at_their_path(
    parser: str, value: str, message: str
) -> None:
    assert refused(f"a:\n  b: {value}\n").startswith("job.yaml:2:")
    assert message in refused(f"a:\n  b: {value}\n")
    assert ": a.b: " in refused(f"a:\n  b: {value}\n")


def test_plain_data_reads_as_kubectl_reads_it(parser: str) -> None:
    (data,) = read(
        "s: !!str 12\ni: !!int '12'\nt: 2001-12-14\nts: !!timestamp 2001-12-14t21:59:43.10-05:00\n"
        "o: 010\nh: 0x1f\nf: 1.5\nb: yes\nn: ~\non: 1\n1: one\nbig: 99999999999999999999\n"
    )
    assert data == {
        "s": "12",
        "i": 12,
        "t": "2001-12-14",
        "ts": "2001-12-14t21:59:43.10-05:00",
        "o": 8,
        "h": 31,
        "f": 1.5,
        "b": True,
        "n": None,
        "on": 1,
        "1": "one",
        "big": 99999999999999999999,
    }


def test_a_syntax_error_is_at_the_problem_not_past_the_end(parser: str) -> None:
    assert refused('spec:\n  framework:\n    name: "unterminated\n') == (
        "job.yaml:3:11: spec.framework.name: while scanning a quoted scalar: found unexpected end of stream"
    )
    message = refused("a:\n  - b\n  c: [1, 2\n")
    line = int(message.split(":")[1])
    assert 1 <= line <= 3, message
    assert refused("a: b: c\n").startswith("job.yaml:1:5: mapping values are not allowed")


def test_size_and_count_are_bounded() -> None:
    assert refused(b"#" * (yamlsafe.MAX_BYTES + 1)) == (
        "job.yaml:1:1: larger than 8.0 MiB, more than kubetrain reads in one file"
    )
    started = time.perf_counter()
    message = refused("a: [" + "1, " * 1_000_000 + "1]\n")
    assert message.startswith("job.yaml:1:599996: a[199997]: holds more than 200,000 values"), message
    assert time.perf_counter() - started < 5
    many = "---\na: 1\n" * (yamlsafe.MAX_DOCUMENTS + 1)
    assert refused(many) == "job.yaml:202:1: more than 100 documents in one file; split it"


def test_where_names_the_line_and_column_of_a_field() -> None:
    (doc,) = documents.loads(JOB, "job.yaml")
    assert doc.where(("spec", "replicaSpecs", "Worker", "replicas")) == "job.yaml:9:7"
    assert doc.where(("spec", "replicaSpecs", "Worker", "template", "spec", "containers", 0, "image")) == (
        "job.yaml:14:13"
    )
    assert doc.where(("spec", "replicaSpecs", "Worker", "nope", "deeper")) == "job.yaml:8:5"
    assert doc.where(("metadata", "labels", "team")) == "job.yaml:5:12"
    assert doc.where(()) == "job.yaml:1:1"


def test_a_file_that_cannot_be_opened_is_named(tmp_path: Any) -> None:
    with pytest.raises(documents.DocumentError, match=r"nope.yaml: No such file or directory"):
        documents.load(str(tmp_path / "nope.yaml"))
    with pytest.raises(documents.DocumentError, match=r": Is a directory"):
        documents.load(str(tmp_path))
