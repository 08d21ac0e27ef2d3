"""One way in for a job: `intake.decode`, and the commands that check with it before a cluster."""

from __future__ import annotations

import pathlib

import pytest
from testkit import kube
from testkit.builders import a_job

from kubetrain.api import scheme, validation
from kubetrain.cli import main
from kubetrain.operator import intake
from kubetrain.operator.frameworks import registry

TENSORFLOW = """\
apiVersion: training.kubetrain.dev/v1beta1
kind: TrainingJob
metadata: {name: tj}
spec:
  framework: {name: tensorflow}
  replicaSpecs:
    Worker:
      template: {spec: {containers: [{name: tensorflow, image: tf}]}}
    Launcher:
      template: {spec: {containers: [{name: tensorflow, image: tf}]}}
"""


def test_a_job_its_framework_runs_comes_in_as_the_hub_job_with_that_framework() -> None:
    job = a_job("tj").framework("tensorflow").replicas("Chief", 1).replicas("Worker", 2).build()
    decoded = intake.decode(scheme.encode(job))
    assert decoded.job == job
    assert decoded.framework is registry.default().get("tensorflow")


def test_every_refusal_is_told_and_the_job_is_still_there() -> None:
    job = a_job("tj").framework("tensorflow").replicas("Chief", 1).replicas("Master", 1)
    job = job.replicas("Launcher", 1)
    with pytest.raises(intake.Unrunnable) as e:
        intake.decode(scheme.encode(job.build()))
    assert [validation.format_path(f.path) for f in e.value.errors] == [
        "spec.replicaSpecs.Launcher",
        "spec.replicaSpecs",
    ]
    assert e.value.job.metadata.name == "tj"
    assert e.value.framework is not None
    assert e.value.framework.name == "tensorflow"


def test_an_unknown_framework_is_a_field_error_with_no_framework() -> None:
    data = scheme.encode(a_job("tj").framework("generic").replicas("Worker", 1).build())
    data["spec"]["framework"]["name"] = "theano"
    with pytest.raises(intake.Unrunnable) as e:
        intake.decode(data)
    (error,) = e.value.errors
    assert error.path == ("spec", "framework", "name")
    assert error.message.startswith("unknown framework 'theano'; registered: ")
    assert e.value.framework is None


def test_what_does_not_decode_is_every_decoding_error() -> None:
    data = scheme.encode(a_job("tj").framework("generic").replicas("Worker", 1).build())
    data["spec"]["replicaSpecs"]["Worker"]["replicaz"] = 2
    data["spec"]["bogus"] = 1
    with pytest.raises(validation.ValidationError) as e:
        intake.decode(data)
    assert not isinstance(e.value, intake.Unrunnable)
    assert len(e.value.errors) == 2


def test_render_refuses_what_the_framework_cannot_run_with_the_line(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "job.yaml"
    path.write_text(TENSORFLOW)
    assert main.main(["render", str(path)]) == 1
    out = capsys.readouterr()
    assert out.out == ""
    assert f"{path}:9:5: spec.replicaSpecs.Launcher: tensorflow has no replica type Launcher" in out.err


def test_submit_refuses_what_the_framework_cannot_run_before_looking_for_a_cluster(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kubeconfig, _ = kube.unreachable_kubeconfig(tmp_path)
    path = tmp_path / "job.yaml"
    path.write_text(TENSORFLOW)
    assert main.main(["submit", str(path), "--kubeconfig", str(kubeconfig)]) == 1
    err = capsys.readouterr().err
    assert f"{path}:9:5: spec.replicaSpecs.Launcher: tensorflow has no replica type Launcher" in err
    assert "reach" not in err


def test_submit_leaves_a_framework_it_does_not_know_to_the_cluster(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A plugin installed with the operator alone: the cluster's webhook judges it.
    kubeconfig, port = kube.unreachable_kubeconfig(tmp_path)
    path = tmp_path / "job.yaml"
    path.write_text(TENSORFLOW.replace("name: tensorflow}", "name: myframework}"))
    assert main.main(["submit", str(path), "--kubeconfig", str(kubeconfig)]) == 1
    assert f"127.0.0.1:{port}" in capsys.readouterr().err
