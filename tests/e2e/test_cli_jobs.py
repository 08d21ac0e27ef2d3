"""The `kubetrain` command as a person runs it, against the operator on the cluster tier.

Every call is a new process (`python -P -m kubetrain.cli`), reading only its exit status,
standard output and standard error. Pods run on kwok nodes and are made to exit through
kwok's annotations; logs of real output are in tests/node/test_cli_logs.py. Every error a
person can meet — a job that is not there, the wrong namespace, no cluster, a file that is
not YAML, a wait that runs out, a job that fails — is provoked and its message read.
"""

from __future__ import annotations

import json
import pathlib
import re
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from testkit import jobs, kube, operator
from testkit.kube import eventually
from testkit.pods import example_job

from kubetrain.devcluster import cluster as devcluster
from kubetrain.devcluster import kwok

RESOURCE = "trainingjob.training.kubetrain.dev"


@pytest.fixture(scope="module", autouse=True)
def running_operator(cluster: devcluster.Cluster) -> Iterator[None]:
    op = operator.start(cluster)
    yield
    op.stop()


def kubetrain(
    c: devcluster.Cluster, *args: str, stdin: str | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """`kubetrain ARGS --kubeconfig ...`, to its end."""
    result = subprocess.run(
        [sys.executable, "-P", "-m", "kubetrain.cli", *args, f"--kubeconfig={c.kubeconfig}"],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert "Traceback" not in result.stderr, result.stderr
    return result


def background(c: devcluster.Cluster, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-P", "-m", "kubetrain.cli", *args, f"--kubeconfig={c.kubeconfig}"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def a_job(name: str = "train", *, replicas: int = 2, restart_policy: str | None = None) -> dict[str, Any]:
    worker: dict[str, Any] = {"command": ["python3", "train.py"], "replicas": replicas}
    if restart_policy:
        worker["restartPolicy"] = restart_policy
    return example_job(name, {"Worker": worker})


def write(tmp_path: pathlib.Path, *documents: dict[str, Any]) -> pathlib.Path:
    path = tmp_path / "jobs.yaml"
    path.write_text(yaml.safe_dump_all(documents, sort_keys=False))
    return path


def table(stdout: str) -> list[dict[str, str]]:
    """A kubectl-style table as rows of header -> cell (cells are split at the headers' columns)."""
    header, *lines = stdout.splitlines()
    names = header.split()
    starts: list[int] = []
    for n in names:
        starts.append(header.index(n, starts[-1] + 1 if starts else 0))
    ends = [*starts[1:], None]
    return [{n: line[s:e].strip() for n, s, e in zip(names, starts, ends, strict=True)} for line in lines]


def test_submit_get_list_describe_wait_delete(
    cluster: devcluster.Cluster, namespace: str, tmp_path: pathlib.Path
) -> None:
    ns = f"--namespace={namespace}"
    labelled = a_job("labelled", replicas=1)
    labelled["metadata"]["labels"] = {"team": "vision"}
    submitted = kubetrain(cluster, "submit", str(write(tmp_path, a_job(), labelled)), ns)
    assert submitted.returncode == 0, submitted.stderr
    assert submitted.stdout == f"{RESOURCE}/train created\n{RESOURCE}/labelled created\n"

    jobs.running_pods(cluster, namespace, "train", 2)
    jobs.wait_state(cluster, namespace, "train", "Running")
    got = kubetrain(cluster, "get", "train", ns)
    assert got.returncode == 0, got.stderr
    (row,) = table(got.stdout)
    assert (row["NAME"], row["FRAMEWORK"], row["STATE"], row["REPLICAS"], row["RESTARTS"]) == (
        "train",
        "generic",
        "Running",
        "2/2",
        "0",
    )
    assert row["AGE"].endswith(("s", "m"))

    listed = kubetrain(cluster, "list", ns)
    assert [r["NAME"] for r in table(listed.stdout)] == ["labelled", "train"]
    selected = kubetrain(cluster, "list", "-l", "team=vision", ns, "-o", "name")
    assert selected.stdout == f"{RESOURCE}/labelled\n"
    everywhere = table(kubetrain(cluster, "list", "-A").stdout)
    assert {"NAMESPACE": namespace, "NAME": "train", "STATE": "Running"}.items() <= next(
        r for r in everywhere if r["NAME"] == "train" and r["NAMESPACE"] == namespace
    ).items()

    as_json = json.loads(kubetrain(cluster, "get", "train", ns, "-o", "json").stdout)
    assert (as_json["apiVersion"], as_json["kind"]) == ("training.kubetrain.dev/v1beta1", "TrainingJob")
    assert as_json["status"]["state"] == "Running"
    assert "managedFields" not in as_json["metadata"]
    as_list = json.loads(kubetrain(cluster, "get", ns, "-o", "json").stdout)
    assert (as_list["kind"], len(as_list["items"])) == ("List", 2)
    as_yaml = yaml.safe_load(kubetrain(cluster, "get", "labelled", ns, "-o", "yaml").stdout)
    assert as_yaml["metadata"]["labels"] == {"team": "vision"}

    described = kubetrain(cluster, "describe", "train", ns)
    assert described.returncode == 0, described.stderr
    text = described.stdout
    assert f"Namespace:    {namespace}\n" in text
    assert "State:        Running\n" in text
    assert "Message:      every replica is running\n" in text
    assert "\nPods:\n" in text
    assert "train-worker-1   Worker/1   0         Running" in text
    assert text.endswith(f"next: kubetrain logs train -n {namespace} -f\n")

    for pod in ("train-worker-0", "train-worker-1"):
        kwok.finish_pod(cluster, namespace, pod, 0)
    waited = kubetrain(cluster, "wait", "train", "--for", "succeeded", "--timeout", "1m", ns)
    assert waited.returncode == 0, waited.stderr
    assert waited.stdout.startswith(f"{RESOURCE}/train Succeeded: ")
    done = table(kubetrain(cluster, "get", "train", ns).stdout)[0]
    assert (done["STATE"], done["REPLICAS"]) == ("Succeeded", "2/2 succeeded")

    deleted = kubetrain(cluster, "delete", "train", "labelled", "--wait", "--timeout", "60s", ns)
    assert deleted.returncode == 0, deleted.stderr
    assert deleted.stdout == f"{RESOURCE}/train deleted\n{RESOURCE}/labelled deleted\n"
    assert jobs.get_job(cluster, namespace, "train") is None
    assert jobs.pods(cluster, namespace, "train") == {}
    empty = kubetrain(cluster, "list", ns)
    assert (empty.returncode, empty.stdout, empty.stderr) == (
        0,
        "",
        f"No TrainingJobs found in namespace {namespace!r}.\n",
    )


def test_submit_from_stdin_into_the_namespace_given(cluster: devcluster.Cluster, namespace: str) -> None:
    result = kubetrain(cluster, "submit", "-", "-n", namespace, stdin=yaml.safe_dump(a_job("piped")))
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"{RESOURCE}/piped created\n"
    assert jobs.get_job(cluster, namespace, "piped") is not None


def test_submit_wait_of_a_failing_job_exits_1_with_the_reason_the_last_failure_and_what_next(
    cluster: devcluster.Cluster, namespace: str, tmp_path: pathlib.Path
) -> None:
    path = write(tmp_path, a_job("broken", restart_policy="ExitCode"))
    waiting = background(cluster, "submit", str(path), "--wait", "-n", namespace)
    try:
        jobs.running_pods(cluster, namespace, "broken", 2)
        kwok.finish_pod(cluster, namespace, "broken-worker-1", 3)
        out, err = waiting.communicate(timeout=90)
    finally:
        waiting.kill()
    assert waiting.returncode == 1, err
    message = "Worker 1 (broken-worker-1) failed: UserCode Error, exit code 3; FailJob"
    assert out.splitlines() == [f"{RESOURCE}/broken created", f"{RESOURCE}/broken Failed: {message}"]
    lines = err.splitlines()
    assert lines[0] == f"error: TrainingJob 'broken' failed: PermanentExitCode: {message}"
    assert re.fullmatch(
        r"error: last failure: \S+Z Worker/1 \(pod broken-worker-1 on kwok-node-\d\): "
        r"exit code 3, Error, UserCode, no rule matched -> FailJob",
        lines[1],
    ), lines[1]
    assert lines[2:] == [f"next: kubetrain logs broken -n {namespace} --replica Worker/1"]

    again = kubetrain(cluster, "wait", "broken", "-n", namespace)
    assert (again.returncode, again.stderr.splitlines()[0]) == (1, lines[0])

    text = kubetrain(cluster, "describe", "broken", "-n", namespace).stdout
    assert "State:        Failed\nReason:       PermanentExitCode\n" in text
    history = text.split("Failures (oldest first):\n")[1].splitlines()
    assert history[0].split() == [
        "AGE",
        "REPLICA",
        "POD",
        "NODE",
        "EXIT",
        "CLASS",
        "REASON",
        "RULE",
        "ACTION",
    ]
    assert history[1].split()[1:] == [
        "Worker/1",
        "broken-worker-1",
        history[1].split()[3],
        "3",
        "UserCode",
        "Error",
        "-",
        "FailJob",
    ]
    assert "PermanentExitCode" in text.split("\nEvents:\n")[1]
    assert text.endswith(f"next: kubetrain logs broken -n {namespace} --replica Worker/1\n")


def test_a_wait_that_runs_out_exits_2_and_says_what_the_job_is_doing(
    cluster: devcluster.Cluster, namespace: str
) -> None:
    jobs.create(cluster, namespace, a_job("slow"))
    jobs.wait_state(cluster, namespace, "slow", "Running")
    result = kubetrain(cluster, "wait", "slow", "--timeout", "2s", "-n", namespace)
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr == (
        "error: timed out after 2s waiting for TrainingJob 'slow' to be Succeeded (it is Running)\n"
        f"next: kubetrain logs slow -n {namespace} -f\n"
    )


def test_an_unknown_job_is_named_with_its_namespace_by_every_verb(
    cluster: devcluster.Cluster, namespace: str
) -> None:
    missing = f"error: TrainingJob 'nope' not found in namespace {namespace!r}\n"
    for verb in (
        ["get", "nope"],
        ["describe", "nope"],
        ["logs", "nope"],
        ["wait", "nope"],
        ["delete", "nope"],
    ):
        result = kubetrain(cluster, *verb, "-n", namespace)
        assert (result.returncode, result.stderr) == (1, missing), verb


def test_a_job_looked_for_in_the_wrong_namespace_names_the_namespace_looked_in(
    cluster: devcluster.Cluster, namespace: str
) -> None:
    jobs.create(cluster, namespace, a_job("here"))
    result = kubetrain(cluster, "describe", "here", "-n", "default")
    assert (result.returncode, result.stderr) == (
        1,
        "error: TrainingJob 'here' not found in namespace 'default'\n",
    )
    # Some found, some not: the found ones are shown, the rest named, and the status says so.
    both = kubetrain(cluster, "get", "here", "there", "-n", namespace)
    assert both.returncode == 1
    assert [r["NAME"] for r in table(both.stdout)] == ["here"]
    assert both.stderr == f"error: TrainingJob 'there' not found in namespace {namespace!r}\n"


def test_no_cluster_is_an_error_naming_the_address(
    cluster: devcluster.Cluster, tmp_path: pathlib.Path
) -> None:
    kubeconfig, port = kube.unreachable_kubeconfig(tmp_path)
    argv = [sys.executable, "-P", "-m", "kubetrain.cli", "list", f"--kubeconfig={kubeconfig}"]
    result = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 1
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"error: cannot reach the cluster at https://127.0.0.1:{port}: connection refused")
    argv[-1] = "--kubeconfig=/nonexistent"
    result = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 1
    assert result.stderr == "error: kubeconfig /nonexistent: No such file or directory\n"
    assert "Traceback" not in result.stderr


def test_bad_yaml_is_named_by_file_line_and_column_and_nothing_is_created(
    cluster: devcluster.Cluster, namespace: str, tmp_path: pathlib.Path
) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("apiVersion: training.kubetrain.dev/v1beta1\nkind: TrainingJob\nspec: [\n")
    result = kubetrain(cluster, "submit", str(broken), "-n", namespace)
    assert result.returncode == 1
    assert result.stderr.startswith(f"error: {broken}:3:8: spec: ")
    assert len(result.stderr.splitlines()) == 1

    job = a_job("wrong")
    job["spec"]["replicaSpecs"]["Worker"]["replicas"] = "three"
    wrong = write(tmp_path, a_job("fine"), job)
    result = kubetrain(cluster, "submit", str(wrong), "-n", namespace)
    assert result.returncode == 1
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"error: {wrong}:")
    assert ": spec.replicaSpecs.Worker.replicas: " in line
    # Every document is checked before the first is sent.
    assert result.stdout == ""
    assert jobs.get_job(cluster, namespace, "fine") is None


def test_describe_shows_a_job_waiting_for_room_and_the_next_step(
    cluster: devcluster.Cluster, namespace: str
) -> None:
    job = a_job("huge", replicas=1)
    job["spec"]["replicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["resources"] = {
        "requests": {"cpu": "1000"}
    }
    job["spec"]["runPolicy"] = {"schedulingPolicy": {"scheduleTimeoutSeconds": 600}}
    jobs.create(cluster, namespace, job)

    def unschedulable() -> str | None:
        text = kubetrain(cluster, "describe", "huge", "-n", namespace).stdout
        return text if "Unschedulable" in text else None

    text = eventually("the job to say its pods cannot be placed", unschedulable, timeout=60)
    scheduling = text.split("Scheduling:\n")[1].split("\n\n")[0]
    assert scheduling.startswith("  Scheduled:         False, Unschedulable for ")
    assert "1 of 1 pods cannot be placed: " in scheduling
    assert "  Schedule timeout:  600s" in scheduling
    assert text.endswith(
        "next: no room for its pods: free room on the nodes, or lower the pods' requests;"
        " it fails after scheduleTimeoutSeconds (600s)\n"
    )
    (row,) = table(kubetrain(cluster, "get", "huge", "-n", namespace).stdout)
    assert row["STATE"] == "Created (Unschedulable)"


def test_tensorboard_of_a_job_without_one_says_how_to_ask_for_it(
    cluster: devcluster.Cluster, namespace: str
) -> None:
    jobs.create(cluster, namespace, a_job("plain"))
    result = kubetrain(cluster, "tensorboard", "plain", "-n", namespace)
    assert result.returncode == 1
    assert result.stderr.startswith("error: TrainingJob 'plain' has no TensorBoard: add spec.tensorboard")
    missing = kubetrain(cluster, "tensorboard", "nope", "-n", namespace)
    assert (missing.returncode, missing.stderr) == (
        1,
        f"error: TrainingJob 'nope' not found in namespace {namespace!r}\n",
    )
