"""`kubetrain render` and `kubetrain manifests`, as a user runs them."""

import pathlib
import subprocess
import sys

import yaml

from kubetrain.cli import main as cli

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
        [sys.executable, "-P", "-m", "kubetrain.cli", *args],
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
        ("PodGroup", "dist-mnist-gang-0"),
        ("Pod", "dist-mnist-worker-0"),
        ("Pod", "dist-mnist-worker-1"),
        ("Pod", "dist-mnist-ps-0"),
    ]
    assert objects[3]["apiVersion"] == "scheduling.k8s.io/v1alpha2"


def test_render_takes_the_operators_gang_scheduler() -> None:
    result = kubetrain("render", "-", "--gang-scheduler", "volcano", stdin=LEGACY)
    assert result.returncode == 0, result.stderr
    objects = list(yaml.safe_load_all(result.stdout))
    assert objects[3]["apiVersion"] == "scheduling.volcano.sh/v1beta1"
    assert {o["spec"]["schedulerName"] for o in objects if o["kind"] == "Pod"} == {"volcano"}
    none = list(yaml.safe_load_all(kubetrain("render", "-", "--gang-scheduler", "none", stdin=LEGACY).stdout))
    assert "PodGroup" not in {o["kind"] for o in none}


def test_render_shows_a_queued_jobs_workload_or_its_kueue_pod_groups() -> None:
    queued = """\
apiVersion: training.kubetrain.dev/v1beta1
kind: TrainingJob
metadata: {name: tf, namespace: team-a}
spec:
  framework: {name: tensorflow}
  runPolicy: {schedulingPolicy: {queue: q}}
  replicaSpecs:
    Worker: {replicas: 2, template: {spec: {containers: [{name: tensorflow, image: tf}]}}}
    PS: {replicas: 1, template: {spec: {containers: [{name: tensorflow, image: tf}]}}}
"""
    objects = list(yaml.safe_load_all(kubetrain("render", "-", stdin=queued).stdout))
    assert objects[0]["kind"] == "Workload", "the operator makes it before anything else"
    assert objects[0]["spec"]["queueName"] == "q"
    assert [(p["name"], p["count"]) for p in objects[0]["spec"]["podSets"]] == [("worker", 2), ("ps", 1)]
    pods = [o for o in objects if o["kind"] == "Pod"]
    assert all("kueue.x-k8s.io/queue-name" not in p["metadata"]["labels"] for p in pods)
    grouped = list(yaml.safe_load_all(kubetrain("render", "-", "--kueue", "pods", stdin=queued).stdout))
    assert "Workload" not in {o["kind"] for o in grouped}
    assert {o["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] for o in grouped if o["kind"] == "Pod"} == {
        "q"
    }


def test_render_reports_bad_input_without_a_traceback(tmp_path: pathlib.Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        LEGACY.replace("replicas: 2", "replicas: -2").replace("tensorflow\n", "tensorflow\n  foo: 1\n", 1)
    )
    result = kubetrain("render", str(bad))
    assert result.returncode == 1
    assert sorted(result.stderr.splitlines()) == [
        f"error: {bad}:6:3: spec.foo: unknown field",
        f"error: {bad}:9:5: spec.replicaSpecs[0].replicas: must be at least 0, got -2",
    ]


def test_render_names_an_unknown_framework() -> None:
    result = kubetrain("render", "-", stdin=LEGACY.replace("framework: tensorflow", "framework: theano"))
    assert result.returncode == 1
    assert result.stderr.startswith("error: <stdin>:5:3: spec.framework.name: unknown framework 'theano'; ")


def test_render_points_at_the_line_of_a_field_inside_a_pod_template(tmp_path: pathlib.Path) -> None:
    bad = tmp_path / "limits.yaml"
    bad.write_text(
        LEGACY.replace(
            "image: tf}]}}\n  - replicaType: PS", "image: tf, resources: {limits: 3}}]}}\n  - replicaType: PS"
        )
    )
    result = kubetrain("render", str(bad))
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        f"error: {bad}:9:78: spec.replicaSpecs[0].template.spec.containers[0].resources.limits:"
        " expected a map of resource quantities, got integer"
    ]


def test_render_names_the_file_line_and_column_of_malformed_yaml(tmp_path: pathlib.Path) -> None:
    bad = tmp_path / "broken.yaml"
    bad.write_text(LEGACY.replace("  framework: tensorflow", "  framework: [tensorflow"))
    result = kubetrain("render", str(bad))
    assert result.returncode == 1
    assert result.stderr == (
        f"error: {bad}:6:15: spec.framework: did not find expected ',' or ']' "
        "(while parsing a flow sequence at line 5, column 14)\n"
    )
    assert "Traceback" not in result.stderr


def test_render_names_a_missing_file() -> None:
    result = kubetrain("render", "no-such-file.yaml")
    assert result.returncode == 1
    assert result.stderr == "error: no-such-file.yaml: No such file or directory\n"


def test_manifests_check_passes_on_the_repository() -> None:
    assert cli.main(["manifests", "--check", "--root", str(ROOT)]) == 0


def test_manifests_check_fails_on_a_stale_crd(tmp_path: pathlib.Path) -> None:
    assert cli.main(["manifests", "--root", str(tmp_path)]) == 0
    path = tmp_path / "config/crd/bases/training.kubetrain.dev_trainingjobs.yaml"
    path.write_text(path.read_text().replace("shortNames", "shortnames"))
    assert cli.main(["manifests", "--check", "--root", str(tmp_path)]) == 1
