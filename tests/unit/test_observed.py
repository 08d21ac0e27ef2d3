"""Reading a pod as the apiserver returns it."""

from kubetrain.api import naming, observed

POD = {
    "metadata": {
        "name": "tj-worker-1",
        "uid": "u-1",
        "creationTimestamp": "2026-11-21T12:00:00Z",
        "deletionTimestamp": "2026-11-21T12:05:00Z",
        "labels": {naming.REPLICA_TYPE: "worker", naming.REPLICA_INDEX: "1", naming.ATTEMPT: "2"},
    },
    "spec": {"nodeName": "n1"},
    "status": {
        "phase": "Running",
        "conditions": [
            {"type": "Ready", "status": "False"},
            {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"},
        ],
        "containerStatuses": [
            {
                "name": "tensorflow",
                "restartCount": 2,
                "state": {"waiting": {"reason": "CrashLoopBackOff"}},
                "lastState": {"terminated": {"exitCode": 137, "reason": "OOMKilled"}},
            },
            {"name": "sidecar", "restartCount": 1, "state": {"running": {}}},
        ],
    },
}


def test_a_pod_is_read_into_the_facts_that_decide_its_fate() -> None:
    pod = observed.Pod.of(POD, node_exists=False)
    assert (pod.name, pod.uid, pod.replica_type, pod.index, pod.attempt) == (
        "tj-worker-1",
        "u-1",
        "worker",
        1,
        2,
    )
    assert pod.restarts == 3
    assert pod.exit_codes == {"tensorflow": 137}
    assert pod.reasons == ("OOMKilled",)
    assert pod.waiting == {"CrashLoopBackOff"}
    assert pod.conditions == {"DisruptionTarget"}
    assert not pod.ready
    assert pod.disruption == "PreemptionByScheduler"
    assert pod.node == "n1"
    assert not pod.node_exists
    assert pod.deleting
    assert pod.deleted is not None
    assert pod.deleted.minute == 5


def test_missing_or_garbled_labels_do_not_crash_the_reader() -> None:
    pod = observed.Pod.of({"metadata": {"name": "x", "labels": {naming.REPLICA_INDEX: "one"}}})
    assert (pod.index, pod.attempt, pod.phase, pod.restarts) == (0, 0, "Pending", 0)
