"""Checkpoint before a stop the operator sees coming, on the simulated cluster (the real shell).

Each stop — a suspend, Kueue's eviction, the deadline, a node notice, an elastic scale-down —
asks every pod for a checkpoint (the request number in its annotation), waits for the first
rank's answer on its progress line or for the grace, then stops as it would have; the next
attempt is told the step to resume from. A job that did not opt in never waits.
"""

from __future__ import annotations

import datetime

import attrs
from testkit.builders import a_ddp_job
from testkit.world import World

from kubetrain.api import v1beta1
from kubetrain.operator import render
from kubetrain.operator.frameworks import pytorch
from kubetrain.operator.policies import checkpoint

S = v1beta1.JobState
R = v1beta1.StopReason
GRACE = 60
T0 = datetime.datetime(2026, 12, 1, tzinfo=datetime.UTC)


def running(grace: int | None = GRACE, **run: object) -> World:
    spec = {"progress": v1beta1.ProgressSpec()}
    if grace is not None:
        spec["checkpoint"] = v1beta1.CheckpointSpec(grace_seconds=grace)
    job = a_ddp_job(2).with_spec(run_policy=v1beta1.RunPolicy(**run), **spec).build()  # type: ignore[arg-type]
    w = World(job, pytorch.FRAMEWORK)
    w.settle()
    assert w.state is S.RUNNING
    return w


def suspend(w: World) -> None:
    run = attrs.evolve(w.job.spec.run_policy, suspend=True)
    w.job = attrs.evolve(w.job, spec=attrs.evolve(w.job.spec, run_policy=run))


def answer(w: World, step: int) -> None:
    asked = w.status.checkpoint.requested if w.status.checkpoint else None
    w.report(step, checkpoint=step, answered=asked.number if asked else None)


def live(w: World) -> set[str]:
    return {p.name for p in w.pods.values() if p.deleted is None}


def test_a_suspend_waits_for_the_first_ranks_answer_then_deletes_the_pods() -> None:
    w = running()
    suspend(w)
    w.reconcile()
    asked = w.status.checkpoint.requested
    assert asked is not None
    assert (asked.number, asked.reason) == (1, R.SUSPENDED)
    assert w.asked == {"pt-master-0": 1, "pt-worker-0": 1, "pt-worker-1": 1}, "every pod is asked"
    assert live(w) == {"pt-master-0", "pt-worker-0", "pt-worker-1"}, "the pods stay while it saves"
    assert w.state is S.RUNNING
    w.tick(10)
    w.reconcile()
    assert len(live(w)) == 3, "no answer yet, the grace not over: still waiting"
    answer(w, 1200)
    w.reconcile()
    assert live(w) == set()
    assert w.state is S.SUSPENDED
    assert w.status.checkpoint.requested is None
    assert w.status.checkpoint.checkpoints[-1].step == 1200
    assert w.status.checkpoint.checkpoints[-1].answered is R.SUSPENDED


def test_a_stop_never_waits_past_its_grace() -> None:
    w = running()
    suspend(w)
    w.reconcile()
    w.tick(GRACE)
    w.reconcile()
    assert live(w) == set()
    assert w.state is S.SUSPENDED
    assert w.status.checkpoint.timed_out == 1
    assert "CheckpointTimedOut" in {reason for reason, _ in w.events}


def test_a_job_that_did_not_opt_in_is_never_asked_and_never_waits() -> None:
    w = running(grace=None)
    suspend(w)
    w.reconcile()
    assert live(w) == set()
    assert w.asked == {}
    assert w.status.checkpoint is None


def test_the_next_attempt_resumes_from_the_last_checkpoint_seen() -> None:
    w = running()
    w.report(300, checkpoint=250)  # the training's own, periodic
    w.reconcile()
    suspend(w)
    w.reconcile()
    answer(w, 420)
    w.settle()
    run = attrs.evolve(w.job.spec.run_policy, suspend=False)
    w.job = attrs.evolve(w.job, spec=attrs.evolve(w.job.spec, run_policy=run))
    w.settle()
    assert w.state is S.RUNNING
    assert [c.step for c in w.status.checkpoint.checkpoints] == [250, 420]
    assert checkpoint.resume_step(w.status) == 420
    job = attrs.evolve(w.job, status=w.status)
    pods = [o for o in render.render(job, pytorch.FRAMEWORK) if o["kind"] == "Pod"]
    env = {e["name"]: e.get("value") for e in pods[0]["spec"]["containers"][0]["env"]}
    assert env[render.RESUME_STEP_ENV] == "420"
    assert env["KUBETRAIN_CHECKPOINT_FILE"] == "/etc/kubetrain/checkpoint/request"


def test_a_request_whose_stop_is_not_coming_any_more_is_dropped() -> None:
    w = running()
    suspend(w)
    w.reconcile()
    run = attrs.evolve(w.job.spec.run_policy, suspend=False)
    w.job = attrs.evolve(w.job, spec=attrs.evolve(w.job.spec, run_policy=run))
    w.reconcile()
    assert w.status.checkpoint.requested is None
    assert len(live(w)) == 3


def test_kueue_evicting_the_job_waits_for_the_checkpoint_before_its_pods_go() -> None:
    job = (
        a_ddp_job(2)
        .with_spec(
            progress=v1beta1.ProgressSpec(),
            checkpoint=v1beta1.CheckpointSpec(grace_seconds=GRACE),
            run_policy=v1beta1.RunPolicy(scheduling_policy=v1beta1.SchedulingPolicy(queue="q")),
        )
        .build()
    )
    w = World(job, pytorch.FRAMEWORK, kueue="workload")
    w.settle()
    w.admit()
    w.settle()
    assert w.state is S.RUNNING
    w.kueue_evicts()
    w.reconcile()
    assert w.status.checkpoint.requested.reason is R.EVICTED
    assert len(live(w)) == 3
    answer(w, 77)
    w.reconcile()
    assert live(w) == set()
    assert w.state is S.SUSPENDED


def test_the_deadline_asks_one_grace_before_it_expires_and_does_not_wait() -> None:
    w = running(active_deadline_seconds=600)
    w.tick(600 - GRACE - 5)
    w.reconcile()
    assert w.status.checkpoint is None or w.status.checkpoint.requested is None
    w.tick(10)
    w.reconcile()
    assert w.status.checkpoint.requested.reason is R.DEADLINE
    answer(w, 900)
    w.reconcile()
    assert w.state is S.RUNNING, "it runs on until the deadline"
    w.tick(GRACE)
    w.reconcile()
    assert w.state is S.FAILED
    assert w.status.checkpoint.checkpoints[-1].step == 900


def test_a_node_notice_checkpoints_then_moves_the_job_off_the_node_uncharged() -> None:
    w = running()
    node = w.pods["pt-worker-1"].node
    assert node is not None
    w.noticed.add(node)
    w.reconcile()
    assert w.status.checkpoint.requested.reason is R.NODE_NOTICE
    assert len(live(w)) == 3
    answer(w, 50)
    w.settle()
    assert w.state is S.RUNNING
    assert all(p.node != node for p in w.pods.values() if p.deleted is None)
    assert w.status.restarts.uncharged == 1
    assert w.status.restarts.user_code == 0
