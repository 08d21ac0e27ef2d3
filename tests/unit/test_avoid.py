"""Node-aware replacements: a node that failed a pod is kept off, until keeping off it strands a pod.

Scenarios on the simulated cluster (its scheduler honours each pod's ``metadata.name NotIn``
and says so when no node is left), then the pure parts on their own, and the affinity as
rendered.
"""

from __future__ import annotations

from typing import Any

import attrs
import pytest
from testkit.builders import a_ddp_job, a_job, container, template
from testkit.world import T0, World

from kubetrain.api import observed, v1beta1
from kubetrain.operator import render
from kubetrain.operator.frameworks import pytorch
from kubetrain.operator.policies import avoid, classify

S = v1beta1.JobState
DEVICE = v1beta1.FailureRule(
    name="xid",
    action=v1beta1.FailureAction.RESTART,
    on_exit_codes=v1beta1.ExitCodeMatch(values=(74,)),
    avoid_node=True,
)


def torch(workers: int = 2, nodes: int = 3, scope: v1beta1.RestartScope | None = None) -> World:
    job = (
        a_ddp_job(workers)
        .with_spec(
            failure_policy=v1beta1.FailurePolicy(
                rules=(DEVICE,), restart_scope=scope, termination_deadline_seconds=30
            )
        )
        .build()
    )
    return World(job, pytorch.FRAMEWORK, nodes=nodes)


def avoided(w: World) -> list[tuple[str, str]]:
    return [(a.node, a.reason) for a in w.status.avoided_nodes]


def test_a_replacement_keeps_off_the_node_its_predecessor_was_lost_with() -> None:
    w = torch(scope=v1beta1.RestartScope.POD)
    w.settle()
    lost = w.pod("Worker", 1).node
    assert lost is not None
    w.lose_node(lost)
    w.tick(1)
    w.settle()
    w.tick(60)  # its pod stays Terminating on the lost node until forced
    w.settle()
    assert lost in [n for n, _ in avoided(w)]
    assert dict(avoided(w))[lost] == "DeletionByTaintManager"
    replacement = w.pod("Worker", 1)
    assert lost in replacement.avoiding
    assert replacement.node not in (None, lost)
    assert w.state is S.RUNNING


def test_a_rule_keeps_replacements_off_the_node_of_a_device_error() -> None:
    w = torch()
    w.settle()
    node = w.pod("Worker", 0).node
    w.exit("pt-worker-0", 74)
    w.settle()
    assert avoided(w) == [(node, "Error")]
    record = w.status.failures[-1]
    assert (record.rule, record.node) == ("xid", node)
    assert all(node in p.avoiding and p.node != node for p in w.pods.values()), "the whole new attempt"


@pytest.mark.parametrize("how", ["user code", "eviction by the API"])
def test_failures_that_say_nothing_of_the_node_keep_no_node_off(how: str) -> None:
    w = torch()
    w.settle()
    if how == "user code":
        w.exit("pt-worker-0", 137)
    else:
        w.evict("pt-worker-0")
    w.settle()
    assert w.status.failures, "the failure was counted"
    assert avoided(w) == []
    assert all(not p.avoiding for p in w.pods.values())


def test_keeping_off_nodes_that_strand_a_pod_lets_them_go_and_makes_it_again() -> None:
    w = torch(workers=1, nodes=2, scope=v1beta1.RestartScope.POD)
    w.settle()
    first = w.pod("Worker", 0).node
    assert first is not None
    w.exit("pt-worker-0", 74)
    w.settle()
    second = w.pod("Worker", 0).node
    assert second not in (None, first)
    w.exit("pt-worker-0", 74)  # both nodes have failed it now
    for _ in range(2):  # deleted, then made again
        w.reconcile()
        w.kubelets()  # the replacement keeps off both: the scheduler cannot place it
    stuck = w.pod("Worker", 0)
    assert stuck.node is None
    assert stuck.avoiding == {first, second}
    restarts = w.status.restarts
    d = w.reconcile()
    assert [e.reason for e in d.events] == ["AvoidedNodesReleased"]
    assert first in d.events[0].message
    assert stuck.name in d.events[0].message
    assert w.status.avoided_nodes == ()
    assert [x.pod for x in d.delete] == [stuck.name], "made again, without the affinity"
    w.settle()
    again = w.pod("Worker", 0)
    assert again.uid != stuck.uid
    assert not again.avoiding
    assert again.node is not None
    assert w.status.restarts == restarts, "making it again is not a failure"
    assert w.state is S.RUNNING


def test_unhealthy_nodes_are_kept_off_at_creation_while_they_are() -> None:
    w = torch(nodes=3)
    w.unhealthy = {"node-0", "node-1"}
    w.settle()
    assert all(p.avoiding == {"node-0", "node-1"} and p.node == "node-2" for p in w.pods.values())
    assert w.status.avoided_nodes == (), "health is not a failure: nothing is recorded"
    w.unhealthy = {"node-0", "node-1", "node-2"}
    w.exit("pt-worker-0", 137)  # the whole job restarts, and no node is healthy
    w.settle()
    assert all(p.node is None and p.unscheduled for p in w.pods.values()), "they wait for a healthy node"
    w.unhealthy = {"node-0"}
    w.settle()
    assert all(p.node in ("node-1", "node-2") and p.avoiding == {"node-0"} for p in w.pods.values())


def test_the_list_is_bounded_and_each_node_is_on_it_once() -> None:
    pod = observed.Pod(name="p", uid="u", replica_type="worker", index=0)
    infra = v1beta1.FailureClass.INFRASTRUCTURE
    entries: tuple[v1beta1.AvoidedNode, ...] = ()
    for i in range(40):
        lost = classify.Failure(
            pod=attrs.evolve(pod, node=f"n-{i % 20}"), failure_class=infra, reason="NodeLost"
        )
        assert avoid.tied_to_node(lost, rule_says=False)
        entries = avoid.remember(entries, lost, T0)
    assert len(entries) == v1beta1.status_types.MAX_AVOIDED_NODES
    assert len({e.node for e in entries}) == len(entries)
    assert entries[-1].node == "n-19", "the newest last"
    gone = classify.Failure(
        pod=attrs.evolve(pod, node="n-1", vanished=True), failure_class=infra, reason="PodVanished"
    )
    assert not avoid.tied_to_node(gone, rule_says=True), "a pod gone unseen says nothing of its node"


def test_render_adds_the_nodes_to_every_term_of_the_users_affinity() -> None:
    zone = {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}
    pod_template: dict[str, Any] = template(container("pytorch"))
    pod_template["spec"]["affinity"] = {
        "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [zone, {}]}}
    }
    job = a_job("pt").framework("pytorch").replicas("Master", 1, tmpl=pod_template).build()
    pods = [o for o in render.render(job, pytorch.FRAMEWORK, keep_off=("n-2", "n-1")) if o["kind"] == "Pod"]
    terms = pods[0]["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"
    ]
    # One requirement per node: the apiserver takes one value per node field requirement.
    names = [{"key": "metadata.name", "operator": "NotIn", "values": [n]} for n in ("n-1", "n-2")]
    assert terms == [{**zone, "matchFields": names}, {"matchFields": names}]
    assert observed.avoided_nodes(pods[0]["spec"]) == {"n-1", "n-2"}
    assert zone == {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}, (
        "not the user's"
    )
    bare = next(o for o in render.render(job, pytorch.FRAMEWORK) if o["kind"] == "Pod")
    assert "matchFields" not in str(bare["spec"])
