"""The Python API people use (``kubetrain.client``) against the operator on the cluster tier.

Pods run on kwok nodes, so nothing here needs real output: logs are in tests/node. Each
error a person can meet is provoked for real — a job that is not there, the wrong
namespace, no cluster behind a kubeconfig, a file that is not YAML — and its message read.
"""

from __future__ import annotations

import pathlib
import time
from collections.abc import Iterator

import pytest
import yaml
from testkit import jobs, kube, operator
from testkit.kube import eventually
from testkit.pods import example_job

from kubetrain import client
from kubetrain.api import v1beta1
from kubetrain.devcluster import cluster as devcluster
from kubetrain.devcluster import kwok

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module", autouse=True)
def running_operator(cluster: devcluster.Cluster) -> Iterator[None]:
    op = operator.start(cluster)
    yield
    op.stop()


def a_job(name: str = "train", restart_policy: str | None = None) -> dict[str, object]:
    worker: dict[str, object] = {"command": ["python3", "train.py"], "replicas": 2}
    if restart_policy:
        worker["restartPolicy"] = restart_policy
    return example_job(name, {"Worker": worker})


@pytest.fixture
def kt(cluster: devcluster.Cluster, namespace: str) -> Iterator[client.Client]:
    with client.connect(str(cluster.kubeconfig), namespace=namespace) as c:
        yield c


def test_create_from_a_v1alpha1_file_reads_back_as_v1beta1_and_lists_by_label(
    kt: client.Client, namespace: str
) -> None:
    (job,) = kt.create_from_file(ROOT / "samples" / "v1alpha1" / "tfjob-master-worker-ps.yaml")
    assert isinstance(job, v1beta1.TrainingJob)
    assert job.api_version == v1beta1.API_VERSION
    assert sorted(job.spec.replica_specs) == ["Master", "PS", "Worker"]
    assert job.metadata.namespace == namespace
    assert kt.get(job.metadata.name or "").metadata.uid == job.metadata.uid

    labelled = a_job("labelled")
    labelled["metadata"] = {"name": "labelled", "labels": {"team": "vision"}}
    kt.create(labelled)
    assert [j.metadata.name for j in kt.list()] == sorted([job.metadata.name, "labelled"])
    assert [j.metadata.name for j in kt.list(selector="team=vision")] == ["labelled"]
    assert namespace in {j.metadata.namespace for j in kt.list(all_namespaces=True)}


def test_a_job_stored_past_todays_rules_is_listed_and_read_with_the_operators_verdict(
    cluster: devcluster.Cluster, kt: client.Client, namespace: str
) -> None:
    # Its TensorBoard's logDir is on no volume: a rule without a CEL twin, so with no webhook
    # (as here) kubectl stores it. One such job must not break listing the namespace.
    stored = a_job("past-rules")
    stored["spec"]["tensorboard"] = {"logDir": "/nowhere"}  # type: ignore[index]
    jobs.create(cluster, namespace, stored)
    kt.create(a_job("fine"))
    assert [j.metadata.name for j in kt.list()] == ["fine", "past-rules"]
    assert "past-rules" in {j.metadata.name for j in kt.list(all_namespaces=True)}
    failed = eventually(
        "the operator to fail the job with the reason",
        lambda: (j := kt.get("past-rules")).status.state is v1beta1.JobState.FAILED and j,
    )
    (condition,) = [c for c in failed.status.conditions if c.type == "Failed"]
    assert "spec.tensorboard.logDir" in condition.message


def test_wait_returns_the_job_when_it_succeeds_with_its_pods_and_events(
    cluster: devcluster.Cluster, kt: client.Client, namespace: str
) -> None:
    job = kt.create(a_job())
    name = job.metadata.name or ""
    running = kt.wait(name, "Running", timeout=60)
    assert running.status.state is v1beta1.JobState.RUNNING
    infos = kt.pods(name)
    assert {p.replica for p in infos} == {f"worker-{i}" for i in range(len(infos))}
    assert all(p.phase == "Running" and p.replica_type == "Worker" and p.attempt == 0 for p in infos)
    for p in infos:
        kwok.finish_pod(cluster, namespace, p.name, 0)
    done = kt.wait(name, "Succeeded", timeout=60)
    assert done.status.state is v1beta1.JobState.SUCCEEDED
    # "Running" is met by a job that ran and is done: a script waiting for it does not hang.
    assert kt.wait(name, "Running", timeout=5).status.state is v1beta1.JobState.SUCCEEDED

    # The outcome's Event is sent once the status that says it is stored: it may come a moment
    # after the wait returns.
    def seen() -> set[tuple[str, str]]:
        return {(e.object, e.reason) for e in kt.events(name)}

    def with_the_jobs_event() -> set[tuple[str, str]] | None:
        reasons = seen()
        return reasons if any(o == f"TrainingJob/{name}" for o, _ in reasons) else None

    reasons = eventually("the job's outcome Event", with_the_jobs_event, timeout=10, evidence=seen)
    assert (f"TrainingJob/{name}", "Succeeded") in reasons or any(o.startswith("Pod/") for o, _ in reasons)
    with pytest.raises(client.JobFinished, match="succeeded; it will never be Failed"):
        kt.wait(name, "Failed", timeout=5)


def test_a_failed_job_raises_with_the_reason_and_the_failure_history(
    cluster: devcluster.Cluster, kt: client.Client, namespace: str
) -> None:
    name = kt.create(a_job(restart_policy="ExitCode")).metadata.name or ""
    kt.wait(name, "Running", timeout=60)
    kwok.finish_pod(cluster, namespace, f"{name}-worker-0", 1)
    with pytest.raises(client.JobFailed) as failed:
        kt.wait(name, timeout=60)
    e = failed.value
    assert e.job.status.state is v1beta1.JobState.FAILED
    assert e.reason
    assert e.reason in str(e)
    (record,) = e.failures
    assert (record.replica_type, record.index, record.exit_code) == ("Worker", 0, 1)
    assert record.action is v1beta1.FailureAction.FAIL_JOB
    assert str(e).startswith(f"TrainingJob {name!r} failed: ")


def test_a_wait_that_runs_out_of_time_says_what_it_waited_for_and_the_state(
    kt: client.Client, namespace: str
) -> None:
    job = kt.create(a_job())
    kt.wait(job.metadata.name or "", "Running", timeout=60)
    started = time.monotonic()
    with pytest.raises(client.WaitTimeout) as timeout:
        kt.wait(job.metadata.name or "", "Succeeded", timeout=2)
    assert 2 <= time.monotonic() - started < 10
    assert str(timeout.value) == (
        f"timed out after 2s waiting for TrainingJob {job.metadata.name!r} to be Succeeded (it is Running)"
    )


def test_delete_with_wait_returns_once_the_job_and_its_pods_are_gone(
    cluster: devcluster.Cluster, kt: client.Client, namespace: str
) -> None:
    job = kt.create(a_job())
    name = job.metadata.name or ""
    kt.wait(name, "Running", timeout=60)
    assert jobs.pods(cluster, namespace, name)
    kt.delete(name, wait=True, timeout=60)
    assert jobs.get_job(cluster, namespace, name) is None
    assert jobs.pods(cluster, namespace, name) == {}


def test_unknown_jobs_and_namespaces_are_named_in_the_error(kt: client.Client, namespace: str) -> None:
    with pytest.raises(client.NotFound) as e:
        kt.get("nope")
    assert str(e.value) == f"TrainingJob 'nope' not found in namespace {namespace!r}"
    kt.create(a_job())
    with pytest.raises(client.NotFound, match="'train' not found in namespace 'elsewhere'"):
        kt.wait("train", namespace="elsewhere", timeout=5)
    with pytest.raises(client.NotFound):
        list(kt.logs("nope"))
    with pytest.raises(client.InvalidInput, match="has no replica type 'chief'; it has Worker"):
        list(kt.logs("train", replica="Chief/0"))


def test_no_cluster_is_reported_with_its_address(tmp_path: pathlib.Path) -> None:
    kubeconfig, port = kube.unreachable_kubeconfig(tmp_path)
    with pytest.raises(client.Unreachable) as e, client.connect(str(kubeconfig)) as c:
        c.get("anything")
    assert f"127.0.0.1:{port}" in str(e.value)
    assert "connection refused" in str(e.value)
    with pytest.raises(client.InvalidKubeconfig, match="kubeconfig /nonexistent: No such file or directory"):
        client.connect("/nonexistent")


def test_a_file_that_is_not_a_trainingjob_is_refused_with_its_line_before_anything_is_sent(
    cluster: devcluster.Cluster, kt: client.Client, namespace: str, tmp_path: pathlib.Path
) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("apiVersion: training.kubetrain.dev/v1beta1\nkind: TrainingJob\nspec: [\n")
    # At the line of the problem (the list left open), not past the end of the file.
    with pytest.raises(client.InvalidInput, match=r"broken.yaml:3:8: spec: "):
        kt.create_from_file(broken)
    wrong = tmp_path / "wrong.yaml"
    job = a_job()
    job["spec"]["replicaSpecs"]["Worker"]["replicas"] = "three"  # type: ignore[index]
    wrong.write_text(yaml.safe_dump(job, sort_keys=False))
    with pytest.raises(client.InvalidInput) as e:
        kt.create_from_file(wrong)
    assert "wrong.yaml:" in str(e.value)
    assert "spec.replicaSpecs.Worker.replicas" in str(e.value)
    assert kt.list() == []


def test_events_are_the_jobs_and_its_pods_oldest_first(
    cluster: devcluster.Cluster, kt: client.Client, namespace: str
) -> None:
    job = kt.create(a_job())
    name = job.metadata.name or ""
    kt.wait(name, "Running", timeout=60)
    # Running is told by the status alone; the outcome is an Event of the job.
    for p in kt.pods(name):
        kwok.finish_pod(cluster, namespace, p.name, 0)
    kt.wait(name, "Succeeded", timeout=60)
    events = eventually(
        "the scheduler's events and the job's",
        lambda: len({e.object.split("/")[0] for e in kt.events(name)}) == 2 and kt.events(name),
    )
    times = [e.time for e in events if e.time is not None]
    assert times == sorted(times)
    assert {e.object.split("/")[0] for e in events} == {"TrainingJob", "Pod"}
    assert all(e.object.split("/")[1].startswith(name) for e in events)
