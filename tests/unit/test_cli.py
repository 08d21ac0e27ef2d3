"""`kubetrain render` and `kubetrain manifests`, as a user runs them."""

import pathlib
import subprocess
import sys

import yaml

from kubetrain.operator import cli

ROOT = pathlib.Path(__file__).resolve().parents[2]
LEGACY = """\
apiVersion: training.kubetrain.dev/v1alpha1
kind: TrainingJob
metadata: {name: dist-mnist, namespace: team-a}
spec:
  framework: tensorflow
  replicaSpecs:
  - replicaType: WORKER
    replicas: 2
    template: {spec: {containers: [{name: tensorflow, image: tf}]}}
  - replicaType: PS
    template: {spec: {containers: [{name: tensorflow, image: tf}]}}
"""


def kubetrain(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-P", "-m", "kubetrain.operator.cli", *args],
        input=stdin,
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )


def test_render_prints_every_object_of_a_legacy_job() -> None:
    result = kubetrain("render", "-", stdin=LEGACY)
    assert result.returncode == 0, result.stderr
    objects = list(yaml.safe_load_all(result.stdout))
    assert [(o["kind"], o["metadata"]["name"]) for o in objects] == [
        ("Service", "dist-mnist-worker-0"),
        ("Service", "dist-mnist-worker-1"),
        ("Service", "dist-mnist-ps-0"),
        ("Pod", "dist-mnist-worker-0"),
        ("Pod", "dist-mnist-worker-1"),
        ("Pod", "dist-mnist-ps-0"),
    ]


def test_render_reports_bad_input_without_a_traceback(tmp_path: pathlib.Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        LEGACY.replace("replicas: 2", "replicas: -2").replace("tensorflow\n", "tensorflow\n  foo: 1\n", 1)
    )
    result = kubetrain("render", str(bad))
    assert result.returncode == 1
    assert sorted(result.stderr.splitlines()) == [
        "error: spec.foo: unknown field",
        "error: spec.replicaSpecs[0].replicas: must be at least 0, got -2",
    ]


def test_render_names_an_unknown_framework() -> None:
    result = kubetrain("render", "-", stdin=LEGACY.replace("framework: tensorflow", "framework: theano"))
    assert result.returncode == 1
    assert result.stderr.startswith("error: unknown framework 'theano'; registered: ")


def test_manifests_check_passes_on_the_repository() -> None:
    assert cli.main(["manifests", "--check", "--root", str(ROOT)]) == 0


def test_manifests_check_fails_on_a_stale_crd(tmp_path: pathlib.Path) -> None:
    assert cli.main(["manifests", "--root", str(tmp_path)]) == 0
    path = tmp_path / "config/crd/bases/training.kubetrain.dev_trainingjobs.yaml"
    path.write_text(path.read_text().replace("shortNames", "shortnames"))
    assert cli.main(["manifests", "--check", "--root", str(tmp_path)]) == 1
