"""What a job says while the scheduler cannot place it, and scheduleTimeoutSeconds."""

from __future__ import annotations

import datetime

import attrs
from testkit.builders import a_job
from testkit.world import World

from kubetrain.api import observed, v1beta1
from kubetrain.operator.frameworks import pytorch, tensorflow
from kubetrain.operator.policies import placement

C = v1beta1.ConditionType
GANG_WAIT = "pod group is unschedulable, waiting for minCount pods from a gang to be scheduled"


def world(**policy: object) -> World:
    job = (
        a_job("pt")
        .framework("pytorch")
        .replicas("Master", 1)
        .replicas("Worker", 3)
        .with_spec(run_policy=v1beta1.RunPolicy(scheduling_policy=v1beta1.SchedulingPolicy(**policy)))
        .build()
    )
    w = World(job, pytorch.FRAMEWORK)
    w.reconcile()  # creates the four pods, Pending
    return w


def hold(w: World, reason: str, message: str = GANG_WAIT) -> None:
    """The scheduler (or a queue) holds every pod back."""
    for name, pod in w.pods.items():
        w.pods[name] = attrs.evolve(pod, unscheduled=(reason, message), unscheduled_since=w.now)


def scheduled(w: World) -> v1beta1.Condition | None:
    return next((c for c in w.status.conditions if c.type == C.SCHEDULED), None)


def test_a_gang_that_cannot_be_placed_says_so_once_with_the_schedulers_words() -> None:
    w = world()
    hold(w, "Unschedulable")
    first = w.reconcile()
    shown = scheduled(w)
    assert shown is not None
    assert shown.status.value == "False"
    assert shown.reason == "Unschedulable"
    assert shown.message == f"4 of 4 pods cannot be placed: {GANG_WAIT}"
    assert [(e.type, e.reason) for e in first.events] == [("Warning", "Unschedulable")]
    # Looking again says nothing new.
    assert w.reconcile().events == ()


def test_a_queued_job_says_which_queue_and_that_wait_is_not_a_timeout() -> None:
    w = world(queue="team-a", schedule_timeout_seconds=10)
    hold(w, "SchedulingGated", "Scheduling is blocked due to non-empty scheduling gates")
    decision = w.reconcile()
    shown = scheduled(w)
    assert shown is not None
    assert shown.reason == "Queued"
    assert shown.message.startswith("queued in team-a: 4 of 4 pods")
    assert [(e.type, e.reason) for e in decision.events] == [("Normal", "Queued")]
    w.tick(3600)
    w.reconcile()
    assert w.state is v1beta1.JobState.CREATED  # queued for an hour: not given up


def test_once_placed_the_condition_turns_true_and_the_job_runs() -> None:
    w = world()
    hold(w, "Unschedulable")
    w.reconcile()
    w.kubelets()
    w.reconcile()
    shown = scheduled(w)
    assert shown is not None
    assert (shown.status.value, shown.reason) == ("True", "Scheduled")
    assert w.state is v1beta1.JobState.RUNNING


def test_a_job_placed_at_once_gets_no_scheduled_condition() -> None:
    # One status write fewer per job: the condition is there to explain a wait.
    w = world()
    w.kubelets()
    w.reconcile()
    assert w.state is v1beta1.JobState.RUNNING
    assert scheduled(w) is None


def test_schedule_timeout_fails_an_unplaceable_job_when_it_runs_out_not_before() -> None:
    w = world(schedule_timeout_seconds=60)
    hold(w, "Unschedulable")
    decision = w.reconcile()
    assert decision.requeue_after == 60
    w.tick(59)
    w.reconcile()
    assert w.state is v1beta1.JobState.CREATED
    w.tick(1)
    decision = w.reconcile()
    assert w.state is v1beta1.JobState.FAILED
    failed = next(c for c in w.status.conditions if c.type == C.FAILED)
    assert failed.reason == "ScheduleTimeout"
    assert failed.message.startswith(
        "not placed within scheduleTimeoutSeconds (60s): 4 of 4 pods cannot be placed"
    )
    # Its pods are let go (cleanPodPolicy Running: pending pods are not finished).
    assert {d.pod for d in decision.delete} == set(w.pods)
    assert w.status.restarts.total == 0  # nothing charged: no pod ever ran


def test_assess_counts_only_pods_without_a_node() -> None:
    t = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
    waiting = observed.Pod(
        name="a",
        uid="1",
        replica_type="worker",
        index=0,
        unscheduled=("Unschedulable", "no"),
        unscheduled_since=t,
    )
    placed = observed.Pod(name="b", uid="2", replica_type="worker", index=1, node="n", phase="Running")
    seen = placement.assess([waiting, placed], None)
    assert seen is not None
    assert (seen.reason, seen.since) == ("Unschedulable", t)
    assert seen.message == "1 of 2 pods cannot be placed: no"
    assert placement.give_up_at(seen, 5) == t + datetime.timedelta(seconds=5)
    assert placement.give_up_at(seen, None) is None
    # Pending but not looked at yet: nothing to say.
    fresh = observed.Pod(name="c", uid="3", replica_type="worker", index=2)
    assert placement.assess([fresh], None) is None
    assert placement.assess([], None) is None


def test_observed_reads_why_a_pod_is_not_scheduled_and_kueues_preemption() -> None:
    pod = observed.Pod.of(
        {
            "metadata": {"name": "p", "uid": "u"},
            "status": {
                "phase": "Pending",
                "conditions": [
                    {
                        "type": "PodScheduled",
                        "status": "False",
                        "reason": "Unschedulable",
                        "message": "0/2 nodes are available",
                        "lastTransitionTime": "2026-11-23T10:00:00Z",
                    }
                ],
            },
        }
    )
    assert pod.unscheduled == ("Unschedulable", "0/2 nodes are available")
    assert pod.unscheduled_since == datetime.datetime(2026, 11, 23, 10, tzinfo=datetime.UTC)
    preempted = observed.Pod.of(
        {
            "metadata": {"name": "p", "uid": "u"},
            "status": {
                "phase": "Failed",
                "conditions": [{"type": "TerminationTarget", "status": "True", "reason": "PreemptedByKueue"}],
            },
        }
    )
    assert preempted.disruption == "PreemptedByKueue"


def test_in_a_kueue_queue_a_pod_restart_restarts_the_whole_gang() -> None:
    # Kueue holds a pod deleted for a restart until a replacement joins its group, and the
    # replacement would take its name: a deadlock, unless the gang moves to a new group.
    job = (
        a_job("tf")
        .framework("tensorflow")
        .replicas("Chief", 1, restart_policy=v1beta1.RestartPolicy.EXIT_CODE)
        .replicas("Worker", 2, restart_policy=v1beta1.RestartPolicy.EXIT_CODE)
        .build()
    )
    for queue, attempts in ((None, {"Chief": 0, "Worker": 0}), ("q", {"Chief": 1, "Worker": 1})):
        policy = v1beta1.SchedulingPolicy(queue=queue)
        rp = attrs.evolve(job.spec.run_policy, scheduling_policy=policy)
        w = World(attrs.evolve(job, spec=attrs.evolve(job.spec, run_policy=rp)), tensorflow.FRAMEWORK)
        assert w.queued == (queue is not None)
        w.reconcile()
        w.kubelets()
        w.reconcile()
        w.exit("tf-worker-1", 137)
        w.reconcile()
        assert {k: r.attempt for k, r in w.status.replica_statuses.items()} == attempts
