"""A cached pod is its projection: the operator decides the same on it as on the whole pod.

Hypothesis draws pods as the apiserver returns them — every state a kubelet, the
scheduler, an eviction or Kueue leave them in, with the fields the operator never reads
(``managedFields``, the spec, container IDs and images, probe times, IPs) around what it
does — and checks that :meth:`~kubetrain.api.observed.Pod.of`, the owner index and
the Kueue path read the same of the projection, and that :func:`lifecycle.step` makes the
same decision on a job's projected pods as on the pods themselves.
"""

from __future__ import annotations

import itertools
from typing import Any

import attrs
from hypothesis import given
from hypothesis import strategies as st
from testkit.builders import a_job
from testkit.world import World

from kubetrain.api import naming, observed
from kubetrain.operator import lifecycle, projection
from kubetrain.operator.frameworks import pytorch, tensorflow
from kubetrain.operator.runtime import cache
from kubetrain.operator.scheduling import kueue_pods

Obj = dict[str, Any]
TIMES = st.sampled_from(["2026-11-24T12:00:00Z", "2026-11-24T12:03:07Z", "2026-11-24T13:00:00Z"])
WORDS = st.sampled_from(["", "x", "Error", "OOMKilled", "Completed", "Evicted", "ContainerCreating", "a b c"])
CONDITION_TYPES = st.sampled_from(
    [
        "PodScheduled",
        "Initialized",
        "Ready",
        "ContainersReady",
        "PodReadyToStartContainers",
        "DisruptionTarget",
        "TerminationTarget",
        "example.com/gate",
    ]
)


def pick(
    required: dict[str, st.SearchStrategy[Any]] | None = None, **fields: st.SearchStrategy[Any]
) -> st.SearchStrategy[Obj]:
    """A dict with the ``required`` keys, and each of ``fields`` present or not."""
    return st.fixed_dictionaries(required or {}, optional=fields)


TERMINATED = pick(
    exitCode=st.integers(0, 255),
    reason=WORDS,
    startedAt=TIMES,
    containerID=st.just("containerd://0f"),
)
CONTAINERS = pick(
    {"name": st.sampled_from(["main", "pytorch", "tensorflow", "sidecar", "init"])},
    restartCount=st.integers(0, 5),
    state=pick(
        running=st.fixed_dictionaries({"startedAt": TIMES}),
        waiting=pick(reason=WORDS, message=WORDS),
        terminated=TERMINATED,
    ),
    lastState=pick(terminated=TERMINATED),
    image=st.just("example.com/train:1"),
    containerID=st.just("containerd://0a"),
)
CONDITIONS = pick(
    {"type": CONDITION_TYPES, "status": st.sampled_from(["True", "False", "Unknown"])},
    reason=WORDS,
    message=WORDS,
    lastTransitionTime=TIMES,
    lastProbeTime=st.none(),
)
OWNERS = pick(
    {
        "apiVersion": st.just("training.kubetrain.dev/v1beta1"),
        "kind": st.sampled_from(["TrainingJob", "ReplicaSet"]),
        "name": st.sampled_from(["j", "k"]),
        "uid": st.just("u-j"),
    },
    controller=st.booleans(),
    blockOwnerDeletion=st.booleans(),
)
METADATA = pick(creationTimestamp=TIMES, deletionTimestamp=TIMES, deletionGracePeriodSeconds=st.just(30))
STATUSES = pick(
    phase=st.sampled_from(["Pending", "Running", "Succeeded", "Failed", "Unknown"]),
    reason=WORDS,
    message=WORDS,
    conditions=st.lists(CONDITIONS, max_size=6),
    containerStatuses=st.lists(CONTAINERS, max_size=3),
    initContainerStatuses=st.lists(CONTAINERS, max_size=2),
    podIP=st.just("10.64.0.1"),
    qosClass=st.just("BestEffort"),
)
LABELS = st.dictionaries(st.sampled_from(["app", "team", kueue_pods.QUEUE_NAME]), WORDS, max_size=2)
ANNOTATIONS = st.dictionaries(st.sampled_from(["a", "b", kueue_pods.RETRIABLE]), WORDS, max_size=2)
NODES = pick(nodeName=st.sampled_from(["node-0", "node-1"]))


@st.composite
def _pods(
    draw: st.DrawFn, names: st.SearchStrategy[tuple[str, int]], attempts: st.SearchStrategy[int]
) -> Obj:
    rtype, index = draw(names)
    labels = {
        naming.JOB_NAME: "j",
        naming.REPLICA_TYPE: rtype.lower(),
        naming.REPLICA_INDEX: str(index) if draw(st.integers(0, 3)) else "one",
        naming.ATTEMPT: str(draw(attempts)),
        **draw(LABELS),
    }
    meta = {
        "name": naming.replica_name("j", rtype, index),
        "namespace": "default",
        "uid": f"u-{draw(st.integers(1, 3))}",
        "resourceVersion": str(draw(st.integers(1, 10**6))),
        "generation": 1,
        "labels": labels,
        "annotations": draw(ANNOTATIONS),
        "ownerReferences": draw(st.lists(OWNERS, max_size=2)),
        "managedFields": [{"manager": "kubelet", "fieldsV1": {"f:status": {}}}],
        **draw(METADATA),
    }
    spec = {
        "containers": [
            {"name": "main", "image": "example.com/train:1", "env": [{"name": "RANK", "value": "0"}]}
        ],
        **draw(NODES),
    }
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": draw(STATUSES)}


def pods(names: list[tuple[str, int]], attempts: int) -> st.SearchStrategy[Obj]:
    """Pods as the apiserver returns them, of the (replica type, index) ``names``."""
    return _pods(st.sampled_from(names), st.integers(0, attempts))


@given(pods([("Worker", 0), ("Master", 0), ("PS", 3)], 2), st.booleans(), st.booleans())
def test_the_operator_reads_the_same_of_a_projected_pod(pod: Obj, node_exists: bool, gone: bool) -> None:
    projected = projection.pod(pod)
    assert observed.Pod.of(projected, node_exists=node_exists, gone=gone) == observed.Pod.of(
        pod, node_exists=node_exists, gone=gone
    )
    assert cache.key_of(projected) == cache.key_of(pod)
    assert cache.by_owner()(projected) == cache.by_owner()(pod)
    assert projected["metadata"]["labels"] == pod["metadata"]["labels"]
    assert projected["metadata"]["resourceVersion"] == pod["metadata"]["resourceVersion"]
    assert (projected.get("metadata", {}).get("annotations") or {}).get(kueue_pods.RETRIABLE) == pod[
        "metadata"
    ]["annotations"].get(kueue_pods.RETRIABLE)
    assert projected.get("spec", {}).get("nodeName") == pod["spec"].get("nodeName")
    assert projection.pod(projected) == projected


# What a kubelet, the scheduler, an eviction or Kueue write, each drawn whole for the lifecycle's
# property: drawing pods field by field is most of an example's time, and the first property
# varies each field already.
T = "2026-11-24T12:00:00Z"
KUBELET = {"image": "example.com/train:1", "imageID": "example.com/train@sha256:ab", "containerID": "c://0a"}
CONTAINER_STATUSES = [
    {**KUBELET, "name": "main", "restartCount": 0, "ready": True, "state": {"running": {"startedAt": T}}},
    {
        **KUBELET,
        "name": "main",
        "restartCount": 1,
        "state": {"running": {"startedAt": T}},
        "lastState": {"terminated": {"exitCode": 137, "reason": "OOMKilled", "finishedAt": T}},
    },
    {
        **KUBELET,
        "name": "main",
        "restartCount": 3,
        "state": {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 40s"}},
        "lastState": {"terminated": {"exitCode": 1, "reason": "Error", "finishedAt": T}},
    },
    *(
        {
            **KUBELET,
            "name": name,
            "restartCount": 0,
            "state": {"terminated": {"exitCode": code, "reason": why}},
        }
        for name in ("main", "sidecar")
        for code, why in ((0, "Completed"), (1, "Error"), (2, "Error"), (137, "OOMKilled"), (143, "Error"))
    ),
    {"name": "main", "restartCount": 0, "image": "x", "state": {"waiting": {"reason": "ImagePullBackOff"}}},
    {"name": "main", "restartCount": 0, "image": "x", "state": {"waiting": {"reason": "ContainerCreating"}}},
]
POD_CONDITIONS = [
    {"type": t, "status": "True", "lastProbeTime": None, "lastTransitionTime": T}
    for t in ("PodScheduled", "Initialized", "Ready", "ContainersReady")
] + [
    {"type": "Ready", "status": "False", "reason": "PodCompleted", "lastTransitionTime": T},
    {"type": "DisruptionTarget", "status": "True", "reason": "EvictionByEvictionAPI", "message": "m"},
    {"type": "DisruptionTarget", "status": "True", "reason": "DeletionByTaintManager", "message": "m"},
    {"type": "TerminationTarget", "status": "True", "reason": "Preempted", "message": "m"},
    {
        "type": "PodScheduled",
        "status": "False",
        "reason": "Unschedulable",
        "message": "0/2 nodes",
        "lastTransitionTime": T,
    },
    {"type": "PodScheduled", "status": "False", "reason": "SchedulingGated", "lastTransitionTime": T},
]


@st.composite
def _kubelet_pods(draw: st.DrawFn, names: st.SearchStrategy[tuple[str, int]]) -> Obj:
    rtype, index = draw(names)
    meta: Obj = {
        "name": naming.replica_name("j", rtype, index),
        "namespace": "default",
        "uid": f"u-{draw(st.integers(1, 3))}",
        "resourceVersion": "7",
        "labels": {
            naming.JOB_NAME: "j",
            naming.REPLICA_TYPE: rtype.lower(),
            naming.REPLICA_INDEX: str(index),
            naming.ATTEMPT: str(draw(st.integers(0, 1))),
        },
        "annotations": {"kubectl.kubernetes.io/default-container": "main"},
        "ownerReferences": [{"kind": "TrainingJob", "name": "j", "uid": "u-j", "controller": True}],
        "managedFields": [{"manager": "kubelet", "fieldsV1": {"f:status": {}}}],
        "creationTimestamp": T,
    }
    if draw(st.integers(0, 3)) == 0:
        meta["deletionTimestamp"] = T
    spec: Obj = {"containers": [{"name": "main", "image": "example.com/train:1"}]}
    if node := draw(st.sampled_from([None, "node-0", "node-1"])):
        spec["nodeName"] = node
    status: Obj = {
        "phase": draw(st.sampled_from(["Pending", "Running", "Running", "Succeeded", "Failed"])),
        "conditions": draw(st.lists(st.sampled_from(POD_CONDITIONS), max_size=4)),
        "containerStatuses": draw(st.lists(st.sampled_from(CONTAINER_STATUSES), max_size=2)),
        "podIP": "10.64.0.1",
    }
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}


def _worlds() -> list[tuple[World, st.SearchStrategy[list[Obj]]]]:
    """Jobs run for a while in the simulated cluster, each with pods of its replicas in any state.

    Built once: running a world is most of an example's time, and a few dozen cover the states
    a decision depends on (no pods yet, pods created, running, a restart).
    """
    out = []
    for torch, workers, rounds in itertools.product((True, False), (1, 3), range(4)):
        fw = pytorch.FRAMEWORK if torch else tensorflow.FRAMEWORK
        types = [("Master", 1), ("Worker", workers)] if torch else [("Chief", 1), ("PS", workers - 1)]
        b = a_job("j").framework(fw.name)
        for t, n in types:
            b.replicas(t, n)
        world = World(b.build(), fw)
        world.settle(rounds)
        if rounds == 3 and world.pods:
            world.exit(sorted(world.pods)[0], 1)
            world.reconcile()
        names = [(t, i) for t, n in types for i in range(n)]
        same = st.lists(
            _kubelet_pods(st.sampled_from(names)), max_size=4, unique_by=lambda p: p["metadata"]["name"]
        )
        out.append((world, same))
    return out


WORLDS = _worlds()


@given(st.sampled_from(WORLDS).flatmap(lambda w: st.tuples(st.just(w[0]), w[1])), st.booleans())
def test_the_lifecycle_decides_the_same_on_projected_pods(
    world_pods: tuple[World, list[Obj]], gone: bool
) -> None:
    world, raw = world_pods

    def decide(objs: list[Obj]) -> lifecycle.Decision:
        seen = tuple(observed.Pod.of(p, gone=gone and i == 0) for i, p in enumerate(objs))
        return lifecycle.step(attrs.evolve(world.input(), pods=seen))

    assert decide([projection.pod(p) for p in raw]) == decide(raw)
