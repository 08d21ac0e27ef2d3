"""`kubetrain submit` checks the file before it looks for a cluster.

A person who mistyped a field should hear about the field, not that the cluster is
unreachable: the file is read and checked first, and only a good file is sent.
"""

from __future__ import annotations

import pathlib

import pytest
from testkit import kube

from kubetrain.cli import main


def test_a_bad_file_is_told_as_such_without_a_cluster(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kubeconfig, _ = kube.unreachable_kubeconfig(tmp_path)
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "apiVersion: training.kubetrain.dev/v1beta1\nkind: TrainingJob\nmetadata: {name: x}\n"
        "spec:\n  framework: {name: pytorch}\n  replicaSpecs:\n    Worker:\n      replicaz: 2\n"
    )
    assert main.main(["submit", str(bad), "--kubeconfig", str(kubeconfig)]) == 1
    err = capsys.readouterr().err
    assert f"{bad}:8:7: spec.replicaSpecs.Worker.replicaz: unknown field" in err
    assert "reach" not in err


def test_a_good_file_then_needs_the_cluster(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kubeconfig, port = kube.unreachable_kubeconfig(tmp_path)
    good = tmp_path / "good.yaml"
    good.write_text(
        "apiVersion: training.kubetrain.dev/v1beta1\nkind: TrainingJob\nmetadata: {name: x}\n"
        "spec:\n  framework: {name: generic}\n  replicaSpecs:\n    Worker:\n      template:\n"
        "        spec: {containers: [{name: c, image: busybox}]}\n"
    )
    assert main.main(["submit", str(good), "--kubeconfig", str(kubeconfig)]) == 1
    assert f"127.0.0.1:{port}" in capsys.readouterr().err


SHORT = (
    "apiVersion: training.kubetrain.dev/v1beta1\nkind: TrainingJob\nmetadata: {name: x}\n"
    "spec:\n  runtimeRef: {name: torch-distributed}\n  trainer:\n    image: i:1\n    numNodes: 2\n"
)


def test_a_short_job_file_is_left_to_admission_which_has_its_runtime(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Its framework's rules cannot be asked before it is expanded, in the cluster: it goes there.
    kubeconfig, port = kube.unreachable_kubeconfig(tmp_path)
    short = tmp_path / "short.yaml"
    short.write_text(SHORT)
    assert main.main(["submit", str(short), "--kubeconfig", str(kubeconfig)]) == 1
    assert f"127.0.0.1:{port}" in capsys.readouterr().err
    # What it says itself is checked first, by line.
    short.write_text(SHORT.replace("{name: torch-distributed}", "{name: torch-distributed, kind: Cluster}"))
    assert main.main(["submit", str(short), "--kubeconfig", str(kubeconfig)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"error: {short}:5:41: spec.runtimeRef.kind: ")
    assert "reach" not in err


def test_submit_parses_a_file_or_a_runtime_and_its_command() -> None:
    args = main.parser().parse_args(["submit", "job.yaml", "--wait"])
    assert (args.words, args.runtime, args.wait) == (["job.yaml"], None, True)
    args = main.parser().parse_args(["submit", "--runtime", "r", "--nodes", "2", "--", "python", "-m", "t"])
    assert (args.words, args.runtime, args.nodes) == (["python", "-m", "t"], "r", 2)
