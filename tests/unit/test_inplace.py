"""Restarts in place: pods move to the new attempt where they are, held until none of the old runs.

Scenarios on the simulated cluster (its kubelets restart a moved pod's containers and hold it at
its barrier until it is opened), then the pod as rendered, and what the caches keep of it.
"""

from __future__ import annotations

from typing import Any

import attrs
import pytest
from testkit.builders import a_ddp_job, a_job
from testkit.world import World

from kubetrain.api import naming, observed, v1beta1
from kubetrain.operator import projection, render
from kubetrain.operator.frameworks import pytorch
from kubetrain.operator.policies import inplace

S = v1beta1.JobState
M = v1beta1.RestartMethod


def torch(method: M | None = M.IN_PLACE, workers: int = 2) -> World:
    job = (
        a_ddp_job(workers)
        .with_spec(
            failure_policy=v1beta1.FailurePolicy(
                restart_scope=v1beta1.RestartScope.JOB, restart_method=method, termination_deadline_seconds=30
            )
        )
        .build()
    )
    return World(job, pytorch.FRAMEWORK, nodes=3)


def uids(w: World) -> dict[str, str]:
    return {name: p.uid for name, p in w.pods.items()}


def test_a_job_restart_moves_the_running_pods_and_makes_only_the_failed_one_again() -> None:
    w = torch()
    w.settle()
    before = uids(w)
    w.exit(naming.replica_name("pt", "Worker", 1), 137)
    w.tick(1)
    w.settle()
    assert w.state is S.RUNNING
    after = uids(w)
    # The two that ran stayed (same UIDs, restarted once each); the failed one was made again.
    assert after["pt-master-0"] == before["pt-master-0"]
    assert after["pt-worker-0"] == before["pt-worker-0"]
    assert after["pt-worker-1"] != before["pt-worker-1"]
    assert {p.attempt for p in w.pods.values()} == {1}
    assert w.pod("Master", 0).restarts >= 1, "restarted by its kubelet"
    # Charged once, exactly as a recreate is, and said how it was carried out.
    assert w.status.restarts.user_code == 1
    [record] = w.status.failures
    assert record.restart is M.IN_PLACE
    # The kubelet's restarts of the moved pods are not failures.
    w.tick(1)
    w.settle()
    assert w.status.restarts.total == 1
    assert len(w.status.failures) == 1


def test_moved_pods_are_opened_only_when_none_of_the_old_attempt_runs() -> None:
    w = torch()
    w.restarting = False  # the agents do not act yet: the moved pods keep running
    w.settle()
    w.exit(naming.replica_name("pt", "Worker", 1), 137)
    w.tick(1)
    decision = w.reconcile()
    assert {m.pod for m in decision.move} == {"pt-master-0", "pt-worker-0"}
    assert not decision.open
    w.kubelets()
    decision = w.reconcile()  # moved and still running; the failed pod is gone and made closed
    assert not decision.open
    assert decision.create == (("Worker", 1),)
    assert decision.closed
    assert w.running_attempts() == {"master": {0}, "worker": {0}}
    w.restarting = True
    w.kubelets()
    decision = w.reconcile()
    assert {m.pod for m in decision.open} == {"pt-master-0", "pt-worker-0", "pt-worker-1"}
    w.kubelets()
    assert w.running_attempts() == {"master": {1}, "worker": {1}}


def test_a_moved_pod_that_does_not_stop_in_time_is_made_again() -> None:
    w = torch()
    w.settle()
    w.restarting = False  # its kubelet cannot restart in place after all
    w.exit(naming.replica_name("pt", "Worker", 1), 137)
    w.tick(1)
    w.settle()
    assert w.state is S.RESTARTING
    master = w.pod("Master", 0).uid
    w.tick(inplace.STOP_TIMEOUT_SECONDS)
    decision = w.reconcile()
    assert {d.pod for d in decision.delete} == {"pt-master-0", "pt-worker-0"}
    assert [e.reason for e in decision.events] == ["InPlaceRestartFellBack"] * 2
    w.tick(1)
    w.settle()
    assert w.state is S.RUNNING
    assert w.pod("Master", 0).uid != master
    assert w.status.restarts.total == 1, "the fall-back is the same restart"


def test_moved_pods_wait_out_the_restart_backoff_as_made_ones_do() -> None:
    w = torch()
    backoff = v1beta1.RestartBackoff(initial_seconds=20)
    w.job = attrs.evolve(
        w.job,
        spec=attrs.evolve(
            w.job.spec, failure_policy=attrs.evolve(w.job.spec.failure_policy, restart_backoff=backoff)
        ),
    )
    w.settle()
    w.exit(naming.replica_name("pt", "Worker", 1), 137)
    w.tick(1)
    w.settle()
    assert w.state is S.RESTARTING
    assert {p.opened for p in w.pods.values()} <= {0, inplace.CLOSED}, "none opened within the backoff"
    w.tick(20)
    w.settle()
    assert w.state is S.RUNNING
    assert {p.opened for p in w.pods.values()} == {1}


def test_recreate_deletes_every_pod_as_before() -> None:
    w = torch(method=None)
    w.settle()
    before = uids(w)
    w.exit(naming.replica_name("pt", "Worker", 1), 137)
    w.tick(1)
    w.settle()
    assert w.state is S.RUNNING
    assert not set(before.values()) & set(uids(w).values())
    assert w.status.failures[0].restart is M.RECREATE


def test_pods_are_made_restartable_in_place_only_where_a_node_can() -> None:
    w = torch()
    w.in_place = False
    decision = w.reconcile()
    assert decision.create
    assert not decision.in_place
    w2 = torch()
    assert w2.reconcile().in_place


def rendered(closed: bool = False, env: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    job = (
        a_job("pt")
        .framework("pytorch")
        .replicas("Master", 1)
        .with_spec(failure_policy=v1beta1.FailurePolicy(restart_method=M.IN_PLACE))
        .build()
    )
    if env is not None:
        job.spec.replica_specs["Master"].template["spec"]["containers"][0]["env"] = env
    [pod] = [
        o for o in render.render(job, pytorch.FRAMEWORK, in_place=True, closed=closed) if o["kind"] == "Pod"
    ]
    return pod


def test_the_rendered_pod_has_its_agent_then_its_barrier() -> None:
    pod = rendered()
    agent, barrier = pod["spec"]["initContainers"][:2]
    assert (agent["name"], barrier["name"]) == (naming.AGENT, naming.BARRIER)
    assert agent["restartPolicy"] == "Always"
    assert agent["restartPolicyRules"] == [
        {
            "action": "RestartAllContainers",
            "exitCodes": {"operator": "In", "values": [naming.AGENT_EXIT_CODE]},
        }
    ]
    main = pod["spec"]["containers"][0]
    assert agent["image"] == barrier["image"] == main["image"]
    assert pod["metadata"]["annotations"][naming.OPENED] == "0"
    assert rendered(closed=True)["metadata"]["annotations"][naming.OPENED] == "-1"
    env = {e["name"]: e for e in main["env"]}
    assert env[render.RESTART_ATTEMPT_ENV]["valueFrom"]["fieldRef"]["fieldPath"] == (
        f"metadata.labels['{naming.ATTEMPT}']"
    )
    assert "value" not in env[render.RESTARTS_ENV]


def test_a_restart_env_the_user_set_is_kept() -> None:
    pod = rendered(env=[{"name": render.RESTART_ATTEMPT_ENV, "value": "7"}])
    env = [e for e in pod["spec"]["containers"][0]["env"] if e["name"] == render.RESTART_ATTEMPT_ENV]
    assert env == [{"name": render.RESTART_ATTEMPT_ENV, "value": "7"}]


def test_a_move_sets_the_attempt_and_what_the_restart_env_reads() -> None:
    status = v1beta1.TrainingJobStatus(restarts=v1beta1.RestartCounts(user_code=2))
    md = render.moved(status, 3)
    assert md["labels"] == {naming.ATTEMPT: "3"}
    assert md["annotations"][naming.RESTARTS] == "2"


@pytest.mark.parametrize("through", [lambda p: p, projection.pod], ids=["as is", "projected"])
def test_a_moving_pod_is_read_from_its_metadata_and_container_states(through: Any) -> None:
    pod = rendered()
    pod["metadata"].update(uid="u1", creationTimestamp="2026-11-27T00:00:00Z")
    pod["metadata"]["labels"][naming.ATTEMPT] = "1"
    pod["spec"]["nodeName"] = "n1"
    pod["status"] = {
        "phase": "Running",
        "initContainerStatuses": [
            {"name": naming.AGENT, "restartCount": 4, "state": {"running": {}}},
            {"name": naming.BARRIER, "restartCount": 4, "state": {"terminated": {"exitCode": 137}}},
        ],
        "containerStatuses": [
            {"name": "pytorch", "restartCount": 1, "state": {"running": {"startedAt": "x"}}}
        ],
    }
    seen = observed.Pod.of(through(pod))
    assert seen.moving
    assert seen.running
    assert seen.restarts == 1, "kubetrain's own containers restart with the pod, not for a failure"
    assert seen.exit_codes == {}
    assert inplace.restartable(seen)


@pytest.mark.parametrize("method", [None, M.IN_PLACE])
def test_peers_that_crash_with_the_failed_rank_are_the_old_attempts_and_one_restart_is_charged_once(
    method: M | None,
) -> None:
    w = torch(method)
    w.settle()
    for name in ("pt-worker-1", "pt-master-0", "pt-worker-0"):  # a rank dies; its peers crash with it
        w.exit(name, 137)
    w.tick(1)
    w.settle()
    assert w.state is S.RUNNING
    assert w.status.restarts.user_code == 1
    assert len(w.status.failures) == 1
