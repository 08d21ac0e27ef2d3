"""The caches' projections keep what the operator reads, and little else.

``data/recorded_objects.json`` holds objects read back from the local apiserver as
``bench/runtime_bench.py`` makes them: the pytorch-ddp sample's TrainingJob as ``kubectl apply``
leaves it, one Worker's pod and Service as the operator renders them (with the apiserver's
defaults, ServiceAccount token volume and ``managedFields``, and a kubelet's status) and a Node.
"""

from __future__ import annotations

import copy
import json
import pathlib
from typing import Any

import pytest
from testkit.builders import a_job

from kubetrain.api import naming, observed, scheme, v1beta1
from kubetrain.operator import projection
from kubetrain.operator.policies import avoid, cleanup
from kubetrain.operator.runtime import cache
from kubetrain.operator.scheduling import kueue_pods

RECORDED: dict[str, Any] = json.loads(
    (pathlib.Path(__file__).parent / "data" / "recorded_objects.json").read_text()
)


def recorded(kind: str) -> dict[str, Any]:
    return copy.deepcopy(RECORDED[kind])


def size(obj: Any) -> int:
    return len(json.dumps(obj))


def failed(pod: dict[str, Any]) -> dict[str, Any]:
    """The recorded pod, OOM-killed after a restart, evicted and being deleted."""
    pod["metadata"]["deletionTimestamp"] = "2026-11-24T12:05:00Z"
    pod["metadata"]["annotations"][kueue_pods.RETRIABLE] = "false"
    status = pod["status"]
    status["phase"], status["reason"], status["message"] = "Failed", "Evicted", "The node was low on memory."
    status["conditions"].append(
        {
            "type": "DisruptionTarget",
            "status": "True",
            "reason": "EvictionByEvictionAPI",
            "message": "Eviction API: evicting",
            "lastTransitionTime": "2026-11-24T12:04:00Z",
        }
    )
    container = status["containerStatuses"][0]
    container["restartCount"] = 2
    container["state"] = {
        "terminated": {
            "exitCode": 137,
            "reason": "OOMKilled",
            "startedAt": "x",
            "finishedAt": "y",
            "containerID": "c",
        }
    }
    container["lastState"] = {"terminated": {"exitCode": 1, "reason": "Error", "containerID": "b"}}
    status["initContainerStatuses"] = [
        {"name": "init", "restartCount": 0, "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}
    ]
    return pod


def unschedulable(pod: dict[str, Any]) -> dict[str, Any]:
    del pod["spec"]["nodeName"]
    pod["status"] = {
        "phase": "Pending",
        "qosClass": "BestEffort",
        "conditions": [
            {
                "type": "PodScheduled",
                "status": "False",
                "reason": "Unschedulable",
                "message": "0/100 nodes are available: 100 Insufficient nvidia.com/gpu.",
                "lastProbeTime": None,
                "lastTransitionTime": "2026-11-24T12:01:00Z",
            }
        ],
        "containerStatuses": [{"name": "pytorch", "state": {"waiting": {"reason": "ContainerCreating"}}}],
    }
    return pod


def keeping_off(pod: dict[str, Any]) -> dict[str, Any]:
    """``pod`` rendered to keep off two nodes, in both of the user's node selector terms."""
    pod = unschedulable(pod)
    nodes = [{"key": "metadata.name", "operator": "NotIn", "values": [n]} for n in ("node-007", "node-003")]
    terms = [
        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}], "matchFields": nodes},
        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["b"]}], "matchFields": nodes},
    ]
    pod["spec"]["affinity"] = {
        "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}
    }
    return pod


PODS = [
    recorded("pod"),
    failed(recorded("pod")),
    unschedulable(recorded("pod")),
    keeping_off(recorded("pod")),
]


@pytest.mark.parametrize("pod", PODS, ids=["running", "failed", "unschedulable", "keeping-off"])
def test_a_projected_pod_reads_as_the_pod(pod: dict[str, Any]) -> None:
    projected = projection.pod(pod)
    for gone in (False, True):
        assert observed.Pod.of(projected, node_exists=False, gone=gone) == observed.Pod.of(
            pod, node_exists=False, gone=gone
        )
    # What the reconciler, the owner index, the tombstones and the store read besides.
    assert cache.key_of(projected) == cache.key_of(pod)
    assert (
        cache.by_owner()(projected)
        == cache.by_owner()(pod)
        == [f"bench/{pod['metadata']['labels'][naming.JOB_NAME]}"]
    )
    assert projected["metadata"]["labels"] == pod["metadata"]["labels"]
    assert projected["metadata"]["resourceVersion"] == pod["metadata"]["resourceVersion"]
    assert projected["metadata"]["uid"] == pod["metadata"]["uid"]
    assert (projected["apiVersion"], projected["kind"]) == ("v1", "Pod")
    assert projected.get("spec", {}).get("nodeName") == pod["spec"].get("nodeName")
    annotations = projected["metadata"].get("annotations", {})
    assert annotations.get(kueue_pods.RETRIABLE) == pod["metadata"]["annotations"].get(kueue_pods.RETRIABLE)
    assert projection.pod(projected) == projected


def test_the_facts_survive_in_detail() -> None:
    pod = observed.Pod.of(projection.pod(failed(recorded("pod"))))
    assert (pod.phase, pod.restarts, pod.exit_codes) == ("Failed", 2, {"pytorch": 137, "init": 0})
    assert pod.reasons == ("Evicted", "Completed", "OOMKilled")
    assert (pod.disruption, pod.deleting) == ("EvictionByEvictionAPI", True)
    pending = observed.Pod.of(projection.pod(unschedulable(recorded("pod"))))
    assert pending.unscheduled == (
        "Unschedulable",
        "0/100 nodes are available: 100 Insufficient nvidia.com/gpu.",
    )
    assert pending.unscheduled_since is not None
    assert pending.waiting == {"ContainerCreating"}
    assert pending.avoiding == frozenset()
    assert observed.Pod.of(projection.pod(keeping_off(recorded("pod")))).avoiding == {"node-003", "node-007"}


def test_a_projected_pod_is_a_small_part_of_the_pod() -> None:
    pod = recorded("pod")
    projected = projection.pod(pod)
    assert size(pod) > 7000
    assert size(projected) < size(pod) / 6, json.dumps(projected, indent=1)
    for dropped in ("managedFields", "annotations", "generation"):
        assert dropped not in projected["metadata"]
    assert projected["spec"] == {
        "nodeName": pod["spec"]["nodeName"],
        "restartPolicy": pod["spec"]["restartPolicy"],
    }
    assert set(projected["status"]) == {"phase", "conditions", "containerStatuses"}
    assert projected["metadata"]["ownerReferences"] == [
        {k: v for k, v in pod["metadata"]["ownerReferences"][0].items() if k != "blockOwnerDeletion"}
    ]


def test_projecting_changes_nothing_it_is_given() -> None:
    for kind, project in (
        ("pod", projection.pod),
        ("service", projection.service),
        ("job", projection.training_job),
        ("node", projection.node),
    ):
        obj = recorded(kind)
        project(obj)
        assert obj == RECORDED[kind], kind


def test_only_controlling_owners_are_kept() -> None:
    pod = recorded("pod")
    other = {"apiVersion": "v1", "kind": "ConfigMap", "name": "keeper", "uid": "u-9"}
    pod["metadata"]["ownerReferences"].append(other)
    assert [r["name"] for r in projection.pod(pod)["metadata"]["ownerReferences"]] == ["job-000000"]
    del pod["metadata"]["ownerReferences"][0]
    assert "ownerReferences" not in projection.pod(pod)["metadata"]


def test_pods_share_the_conditions_they_hold_alike() -> None:
    a, b = projection.pod(recorded("pod")), projection.pod(recorded("pod"))
    assert a["status"]["conditions"][2] is b["status"]["conditions"][2]
    assert a["status"]["containerStatuses"][0] is b["status"]["containerStatuses"][0]
    assert a["metadata"] is not b["metadata"]


def test_a_service_keeps_its_identity_labels_and_owner() -> None:
    service = recorded("service")
    projected = projection.service(service)
    assert set(projected) == {"apiVersion", "kind", "metadata"}
    assert set(projected["metadata"]) == {
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "labels",
        "ownerReferences",
    }
    assert cache.by_owner()(projected) == cache.by_owner()(service)
    spec = a_job().replicas("Worker", 1).build().spec  # worker-1 is past the count
    assert (
        cleanup.surplus_services(spec, [observed.Service.of(projected)])
        == cleanup.surplus_services(spec, [observed.Service.of(service)])
        == ["job-000000-worker-1"]
    )
    assert size(projected) < size(service) / 3


def test_a_config_map_keeps_no_data() -> None:
    config_map = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {**recorded("service")["metadata"], "name": "job-000000-config"},
        "data": {"hostfile": "job-000000-worker-0 slots=1\n" * 100},
    }
    projected = projection.config_map(config_map)
    assert "data" not in projected
    assert cache.key_of(projected) == "bench/job-000000-config"
    assert cache.by_owner()(projected) == ["bench/job-000000"]


def test_a_node_keeps_its_name() -> None:
    node = recorded("node")
    projected = projection.node(node)
    assert cache.key_of(projected) == "node-000"
    assert set(projected["metadata"]) == {"name", "uid", "resourceVersion"}
    assert "status" not in projected
    assert size(projected) < size(node) / 20


def test_a_node_keeps_what_says_it_is_unhealthy() -> None:
    node = recorded("node")
    node["spec"]["taints"] = [{"key": "nvidia.com/gpu-unhealthy", "effect": "NoSchedule", "value": "x"}]
    node["status"]["conditions"].append({"type": "KernelDeadlock", "status": "True", "reason": "Hung"})
    node["status"]["conditions"].append({"type": "ReadonlyFilesystem", "status": "False"})
    projected = projection.node(node)
    assert projected["spec"] == {"taints": [{"key": "nvidia.com/gpu-unhealthy"}]}
    assert projected["status"] == {"conditions": [{"type": "KernelDeadlock", "status": "True"}]}
    rule = avoid.Unhealthy(conditions=frozenset({"KernelDeadlock"}), taints=frozenset())
    assert rule.why(projected) == rule.why(node) == "condition KernelDeadlock"
    rule = avoid.Unhealthy(conditions=frozenset(), taints=frozenset({"nvidia.com/gpu-unhealthy"}))
    assert rule.why(projected) == "taint nvidia.com/gpu-unhealthy"
    assert avoid.Unhealthy(conditions=frozenset(), taints=frozenset()).why(projected) is None


def test_a_training_job_keeps_all_but_managed_fields_and_kubectls_copy() -> None:
    job = recorded("job")
    job["metadata"]["annotations"]["team"] = "vision"
    projected = projection.training_job(job)
    assert projected["metadata"]["annotations"] == {"team": "vision"}
    assert "managedFields" not in projected["metadata"]
    full, kept = scheme.to_hub(scheme.decode(job)), scheme.to_hub(scheme.decode(projected))
    assert (kept.spec, kept.status) == (full.spec, full.status)
    assert kept.status.state is v1beta1.JobState.RUNNING
    assert {k: v for k, v in projected.items() if k != "metadata"} == {
        k: v for k, v in job.items() if k != "metadata"
    }
    for key in ("name", "namespace", "uid", "resourceVersion", "generation", "creationTimestamp"):
        assert projected["metadata"][key] == job["metadata"][key]
    # Applied with kubectl and nothing else: no annotations at all, as the apiserver would show it.
    del job["metadata"]["annotations"]["team"]
    assert "annotations" not in projection.training_job(job)["metadata"]
