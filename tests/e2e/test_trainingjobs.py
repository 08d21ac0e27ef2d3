"""TrainingJobs end to end: the operator, a real control plane, pods on kwok nodes.

One operator process serves the module (all namespaces); each test has its own
namespace. Pods "run" on kwok nodes, and the tests make them exit, get evicted, or lose
their node through the same APIs a kubelet or a drain would use.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from testkit import operator
from testkit.jobs import (
    condition,
    create,
    env_of,
    events,
    get_job,
    pods,
    run,
    running_pods,
    sample,
    status,
    summary,
    wait_state,
)
from testkit.kube import eventually

from kubetrain.devcluster import cluster as devcluster
from kubetrain.devcluster import kwok


@pytest.fixture(scope="module", autouse=True)
def running_operator(cluster: devcluster.Cluster) -> Iterator[None]:
    op = operator.start(cluster)
    yield
    op.stop()


# --- the happy paths -------------------------------------------------------------------------


def test_tensorflow_runs_with_tf_config_and_succeeds_when_the_chief_does(
    cluster: devcluster.Cluster, namespace: str
) -> None:
    name = create(cluster, namespace, sample("tensorflow-ps"))
    running = running_pods(cluster, namespace, name, 5)
    s = wait_state(cluster, namespace, name, "Running")
    assert {t: r["active"] for t, r in s["replicaStatuses"].items()} == {"Chief": 1, "Worker": 2, "PS": 2}
    tf = json.loads(env_of(running["tensorflow-ps-worker-1"])["TF_CONFIG"])
    assert tf["task"] == {"type": "worker", "index": 1}
    assert tf["cluster"]["ps"] == [f"tensorflow-ps-ps-{i}.{namespace}.svc:2222" for i in range(2)]
    services = json.loads(cluster.kubectl("get", "services", "-n", namespace, "-o", "json").stdout)["items"]
    assert sorted(x["metadata"]["name"] for x in services) == sorted(running)
    for pod in running.values():
        (owner,) = pod["metadata"]["ownerReferences"]
        assert owner["kind"] == "TrainingJob"
        assert owner["controller"] is True
        assert pod["spec"]["hostname"] == pod["metadata"]["name"] == pod["spec"]["subdomain"]

    kwok.finish_pod(cluster, namespace, "tensorflow-ps-chief-0", 0)
    s = wait_state(cluster, namespace, name, "Succeeded")
    assert condition(s, "Succeeded")["message"] == "Chief 0 succeeded"
    assert s["completionTime"]
    # cleanPodPolicy Running (default): the others are stopped; the chief is kept for its logs.
    eventually(
        "the running replicas to be cleaned up",
        lambda: list(pods(cluster, namespace, name)) == ["tensorflow-ps-chief-0"],
    )
    reasons = [e["reason"] for e in events(cluster, namespace, name)]
    # The outcome is an Event; the normal course (created, running) is told by the status only.
    assert "SuccessPolicyMet" in reasons
    assert not {"TrainingJobCreated", "Running"} & set(reasons)


def test_pytorch_runs_with_master_env_and_fails_on_a_permanent_exit_code(
    cluster: devcluster.Cluster, namespace: str
) -> None:
    job = sample("pytorch-ddp", restart_policy="ExitCode", replicaSpecs__Worker__replicas=3)
    name = create(cluster, namespace, job)
    running = running_pods(cluster, namespace, name, 4)
    env = env_of(running["pytorch-ddp-worker-2"])
    assert env["MASTER_ADDR"] == f"pytorch-ddp-master-0.{namespace}.svc"
    assert (env["WORLD_SIZE"], env["RANK"], env["PET_NNODES"], env["PET_NODE_RANK"]) == ("4", "3", "4", "3")
    wait_state(cluster, namespace, name, "Running")

    kwok.finish_pod(cluster, namespace, "pytorch-ddp-worker-1", 1)
    s = wait_state(cluster, namespace, name, "Failed")
    failed = condition(s, "Failed")
    assert failed["reason"] == "PermanentExitCode"
    assert "Worker 1 (pytorch-ddp-worker-1) failed: UserCode Error, exit code 1" in failed["message"]
    assert "restarts" not in s
    eventually(
        "running pods to be stopped", lambda: list(pods(cluster, namespace, name)) == ["pytorch-ddp-worker-1"]
    )


def test_per_job_host_names_make_one_headless_service_whose_name_is_every_pods_subdomain(
    cluster: devcluster.Cluster, namespace: str
) -> None:
    name = create(cluster, namespace, sample("pytorch-ddp", network__hostNames="PerJob"))
    running = running_pods(cluster, namespace, name, 3)
    assert env_of(running[f"{name}-worker-1"])["MASTER_ADDR"] == f"{name}-master-0.{name}.{namespace}.svc"
    assert {(p["spec"]["hostname"], p["spec"]["subdomain"]) for p in running.values()} == {
        (pod, name) for pod in running
    }
    wait_state(cluster, namespace, name, "Running")
    (service,) = json.loads(cluster.kubectl("get", "services", "-n", namespace, "-o", "json").stdout)["items"]
    assert service["metadata"]["name"] == name
    assert service["spec"]["clusterIP"] == "None"
    assert service["metadata"]["ownerReferences"][0]["kind"] == "TrainingJob"
    # Pods already running know their peers by these names.
    changed = cluster.kubectl(
        "patch", "trainingjob", name, "-n", namespace, "--type=merge",
        "-p", '{"spec":{"network":{"hostNames":"PerReplica"}}}', check=False,
    )  # fmt: skip
    assert changed.returncode != 0
    assert "spec.network.hostNames" in changed.stderr
    assert "field is immutable" in changed.stderr


# --- failures --------------------------------------------------------------------------------


def test_a_retryable_exit_code_recreates_the_pod_and_counts_one_restart(
    cluster: devcluster.Cluster, namespace: str
) -> None:
    name = "tensorflow-ps"
    before = run(cluster, namespace, sample("tensorflow-ps"), 5)
    kwok.finish_pod(cluster, namespace, "tensorflow-ps-worker-0", 137, reason="OOMKilled")

    def replaced() -> dict[str, Any] | None:
        now = running_pods(cluster, namespace, name, 5)
        old = before["tensorflow-ps-worker-0"]["metadata"]["uid"]
        return now if now["tensorflow-ps-worker-0"]["metadata"]["uid"] != old else None

    after = eventually("worker 0 to be replaced", replaced, timeout=60)
    s = wait_state(cluster, namespace, name, "Running")
    assert s["restarts"] == {"userCode": 1}
    (record,) = s["failures"]
    assert (record["pod"], record["exitCode"], record["class"], record["rule"], record["action"]) == (
        "tensorflow-ps-worker-0",
        137,
        "UserCode",
        "signalled",
        "Restart",
    )
    restarting = condition(s, "Restarting")
    assert (restarting["status"], restarting["reason"]) == ("False", "Restarted")
    assert any(
        e["reason"] == "Rule:signalled" and e["type"] == "Warning" for e in events(cluster, namespace, name)
    )
    # Only the failed pod was replaced (restartScope Pod).
    for pod in ("tensorflow-ps-chief-0", "tensorflow-ps-worker-1", "tensorflow-ps-ps-0"):
        assert after[pod]["metadata"]["uid"] == before[pod]["metadata"]["uid"]
    assert (
        after["tensorflow-ps-worker-0"]["metadata"]["labels"]["training.kubetrain.dev/restart-attempt"] == "0"
    )


def test_an_eviction_is_charged_to_the_infrastructure_budget_and_the_job_runs_on(
    cluster: devcluster.Cluster, namespace: str
) -> None:
    name = "tensorflow-ps"
    run(cluster, namespace, sample("tensorflow-ps"), 5)
    kwok.evict_pod(cluster, namespace, "tensorflow-ps-ps-1")
    eventually("the eviction to be recorded", lambda: status(cluster, namespace, name).get("restarts"))
    running_pods(cluster, namespace, name, 5)
    s = wait_state(cluster, namespace, name, "Running")
    assert s["restarts"] == {"infrastructure": 1}, s["failures"]
    assert s["failures"][0]["class"] == "Infrastructure"
    assert s["failures"][0]["reason"] == "EvictionByEvictionAPI"


def test_pods_on_a_lost_node_are_force_deleted_after_the_deadline_and_recreated(
    cluster: devcluster.Cluster, namespace: str
) -> None:
    job = sample("tensorflow-ps", failurePolicy__terminationDeadlineSeconds=3)
    name = create(cluster, namespace, job)
    before = running_pods(cluster, namespace, name, 5)
    wait_state(cluster, namespace, name, "Running")
    node = before["tensorflow-ps-worker-0"]["spec"]["nodeName"]
    lost = {n for n, p in before.items() if p["spec"]["nodeName"] == node}
    kwok.lose_node(cluster, node)
    try:
        eventually(
            "the lost pods to be Terminating",
            lambda: all(
                pods(cluster, namespace, name).get(n, {}).get("metadata", {}).get("deletionTimestamp")
                for n in lost
            ),
            timeout=60,
        )
        after = running_pods(cluster, namespace, name, 5)
    finally:
        kwok.restore_node(cluster, node)
    assert all(after[n]["spec"]["nodeName"] != node for n in lost)
    assert all(after[n]["metadata"]["uid"] != before[n]["metadata"]["uid"] for n in lost)
    s = wait_state(cluster, namespace, name, "Running")
    assert s["restarts"] == {"infrastructure": len(lost)}
    assert {f["reason"] for f in s["failures"]} == {"DeletionByTaintManager"}


def test_the_active_deadline_fails_the_job(cluster: devcluster.Cluster, namespace: str) -> None:
    name = create(cluster, namespace, sample("tensorflow-ps", runPolicy={"activeDeadlineSeconds": 3}))
    s = wait_state(cluster, namespace, name, "Failed", timeout=30)
    assert condition(s, "Failed")["reason"] == "DeadlineExceeded"
    eventually("the pods to be stopped", lambda: not pods(cluster, namespace, name))


def test_a_finished_job_and_its_children_are_gone_after_the_ttl(
    cluster: devcluster.Cluster, namespace: str
) -> None:
    name = create(cluster, namespace, sample("tensorflow-ps", runPolicy={"ttlSecondsAfterFinished": 2}))
    running_pods(cluster, namespace, name, 5)
    kwok.finish_pod(cluster, namespace, "tensorflow-ps-chief-0", 0)
    wait_state(cluster, namespace, name, "Succeeded")
    eventually("the job to be deleted", lambda: get_job(cluster, namespace, name) is None, timeout=30)
    eventually("its pods to be collected", lambda: not pods(cluster, namespace, name), timeout=60)
    eventually(
        "its services to be collected",
        lambda: (
            not json.loads(cluster.kubectl("get", "services", "-n", namespace, "-o", "json").stdout)["items"]
        ),
        timeout=60,
    )


def test_a_job_deleted_and_made_again_under_its_name_never_takes_its_predecessors_pods_as_its_own(
    cluster: devcluster.Cluster, namespace: str
) -> None:
    job = sample("pytorch-ddp")
    name = create(cluster, namespace, job)
    running_pods(cluster, namespace, name, 3)
    old = get_job(cluster, namespace, name)
    assert old is not None
    # A pod that outlives its job a while, as one whose containers are slow to stop does.
    held = f"{name}-worker-1"
    hold = '{"metadata":{"finalizers":["kubetrain.dev/test-hold"]}}'
    cluster.kubectl("patch", "pod", held, "-n", namespace, "--type=merge", "-p", hold)
    cluster.kubectl("delete", "trainingjob", name, "-n", namespace, "--wait=false")
    eventually("the job to be gone", lambda: get_job(cluster, namespace, name) is None)
    # The garbage collector deletes it; it may first have to discover the CRD's kind (40 s here).
    eventually(
        "the held pod to be stopped",
        lambda: pods(cluster, namespace, name)[held]["status"]["phase"] == "Failed",
        timeout=120,
    )
    create(cluster, namespace, job)

    # The predecessor's pod, stopped with exit code 137, is no failure of this job.
    s = eventually(
        "the held name to be shown",
        lambda: (
            (s := status(cluster, namespace, name)).get("conditions")
            and any(c["type"] == "ReplicaFailure" and c["reason"] == "NameHeld" for c in s["conditions"])
            and s
        ),
    )
    assert old["metadata"]["uid"] in condition(s, "ReplicaFailure")["message"]
    assert (s["state"], s.get("restarts")) == ("Created", None)

    cluster.kubectl("patch", "pod", held, "-n", namespace, "--type=json", "-p",
                    '[{"op":"remove","path":"/metadata/finalizers"}]')  # fmt: skip
    running = running_pods(cluster, namespace, name, 3)
    new = get_job(cluster, namespace, name)
    assert new is not None
    assert {p["metadata"]["ownerReferences"][0]["uid"] for p in running.values()} == {new["metadata"]["uid"]}
    s = wait_state(cluster, namespace, name, "Running")
    assert "restarts" not in s
    assert condition(s, "ReplicaFailure")["status"] == "False"


def test_suspend_deletes_the_pods_and_resume_brings_them_back_for_free(
    cluster: devcluster.Cluster, namespace: str
) -> None:
    name = "tensorflow-ps"
    run(cluster, namespace, sample("tensorflow-ps"), 5)

    def suspend(value: bool) -> None:
        patch = {"spec": {"runPolicy": {"suspend": value}}}
        cluster.kubectl(
            "patch",
            "trainingjobs.v1beta1.training.kubetrain.dev",
            name,
            "-n",
            namespace,
            "--type=merge",
            "-p",
            json.dumps(patch),
        )

    suspend(True)
    s = wait_state(cluster, namespace, name, "Suspended")
    assert "startTime" not in s
    eventually("the pods to be deleted", lambda: not pods(cluster, namespace, name))
    suspend(False)
    running = running_pods(cluster, namespace, name, 5)
    s = wait_state(cluster, namespace, name, "Running")
    assert s.get("restarts", {}) == {}
    assert "failures" not in s
    assert {p["metadata"]["labels"]["training.kubetrain.dev/restart-attempt"] for p in running.values()} == {
        "1"
    }
    assert (condition(s, "Suspended")["status"], condition(s, "Suspended")["reason"]) == ("False", "Resumed")


def test_a_job_scope_restart_replaces_every_pytorch_pod(cluster: devcluster.Cluster, namespace: str) -> None:
    job = sample("pytorch-ddp", restart_policy="ExitCode", replicaSpecs__Worker__replicas=3)
    name = create(cluster, namespace, job)
    before = running_pods(cluster, namespace, name, 4)
    wait_state(cluster, namespace, name, "Running")
    kwok.finish_pod(cluster, namespace, "pytorch-ddp-worker-0", 143)
    after = eventually(
        "a new world",
        lambda: (
            (now := running_pods(cluster, namespace, name, 4))
            and all(now[n]["metadata"]["uid"] != before[n]["metadata"]["uid"] for n in before)
            and now
        ),
        timeout=60,
        evidence=lambda: summary(cluster, namespace, name),
    )
    attempts = {p["metadata"]["labels"]["training.kubetrain.dev/restart-attempt"] for p in after.values()}
    assert attempts == {"1"}, summary(cluster, namespace, name)
    s = wait_state(cluster, namespace, name, "Running")
    assert s["restarts"] == {"userCode": 1}, summary(cluster, namespace, name)
