"""Goodput: a job's wall time, productive and lost by cause (operator/policies/goodput.py)."""

from __future__ import annotations

import datetime
import json
import math

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st
from testkit.builders import a_job
from testkit.statuses import NOW
from testkit.world import World

from kubetrain.api import meta, scheme, v1alpha1, v1beta1
from kubetrain.api.v1beta1 import progress_types
from kubetrain.operator.frameworks import pytorch
from kubetrain.operator.policies import goodput
from kubetrain.operator.runtime import metrics

S = v1beta1.JobState
C = v1beta1.ConditionType
G = goodput.Cause
DEADLINE = v1beta1.ProgressSpec(deadline_seconds=600, startup_grace_seconds=60)


def at(seconds: float) -> datetime.datetime:
    return NOW + datetime.timedelta(seconds=seconds)


def _cond(ctype: str, reason: str, since: float, true: bool = True) -> meta.Condition:
    return meta.Condition(
        type=ctype,
        status=meta.ConditionStatus.TRUE if true else meta.ConditionStatus.FALSE,
        reason=reason,
        last_transition_time=at(since),
    )


def status(
    state: S | None,
    *,
    since: float = 0,
    queued: bool = False,
    progress: v1beta1.ProgressStatus | None = None,
    failures: tuple[v1beta1.FailureRecord, ...] = (),
    active: int = 0,
    g: v1beta1.GoodputStatus | None = None,
) -> v1beta1.TrainingJobStatus:
    """A status in ``state`` since ``since`` seconds after NOW."""
    conds: list[meta.Condition] = []
    if state is not None:
        conds.append(_cond(C.CREATED, "TrainingJobCreated", 0))
    if state in (S.RUNNING, S.SUCCEEDED, S.FAILED):
        conds.append(_cond(C.RUNNING, "Running", since, state is S.RUNNING))
    if state is S.RESTARTING:
        conds.append(_cond(C.RESTARTING, "ReplicaFailed", since))
    if state is S.SUSPENDED:
        conds.append(_cond(C.SUSPENDED, "Suspended", since))
    if state is S.SUCCEEDED:
        conds.append(_cond(C.SUCCEEDED, "SuccessPolicyMet", since))
    if state is S.FAILED:
        conds.append(_cond(C.FAILED, "ReplicaFailed", since))
    if queued:
        conds.append(_cond(C.SCHEDULED, "Queued", since, False))
    return v1beta1.TrainingJobStatus(
        state=v1beta1.state_of(tuple(conds)),
        conditions=tuple(conds),
        progress=progress,
        failures=failures,
        replica_statuses={"Worker": v1beta1.ReplicaStatus(active=active)},
        goodput=g,
    )


def reading(
    step: int, moved: float, rate: str | None = "2", checkpoint: int | None = None
) -> v1beta1.ProgressStatus:
    return v1beta1.ProgressStatus(
        step=step,
        pod="j-worker-0",
        observed_time=at(moved),
        last_moved_time=at(moved),
        steps_per_second=rate,
        checkpoint=checkpoint,
    )


def hang(when: float) -> v1beta1.FailureRecord:
    return v1beta1.FailureRecord(
        time=at(when),
        replica_type="Worker",
        index=1,
        pod="j-worker-1",
        reason=progress_types.HUNG,
        failure_class=v1beta1.FailureClass.USER_CODE,
        action=v1beta1.FailureAction.RESTART,
    )


def account(
    prev: v1beta1.TrainingJobStatus,
    new: v1beta1.TrainingJobStatus,
    now: float,
    *,
    spec: v1beta1.ProgressSpec | None = None,
    checkpointing: bool = False,
) -> v1beta1.GoodputStatus:
    out = goodput.account(prev, new, progress=spec, created=NOW, now=at(now), checkpointing=checkpointing)
    assert out.status is not None
    return out.status


def seconds(g: v1beta1.GoodputStatus) -> dict[str, int]:
    """The parts that are not zero, by cause."""
    return {c.value: s for c, s in goodput.parts(g).items() if s}


# --- what each second is ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("prev", "cause"),
    [
        (status(None), G.STARTING),
        (status(S.CREATED), G.STARTING),
        (status(S.CREATED, queued=True), G.QUEUED),
        (status(S.SUSPENDED), G.QUEUED),
        (status(S.RESTARTING), G.RESTARTING),
        (status(S.RUNNING), G.PRODUCTIVE),
        (status(S.SUCCEEDED), None),
        (status(S.FAILED), None),
    ],
)
def test_what_the_job_does_is_told_by_the_status_the_interval_began_with(
    prev: v1beta1.TrainingJobStatus, cause: goodput.Cause | None
) -> None:
    assert goodput.cause(prev) is cause
    if cause is not None:
        assert goodput.cause(prev, checkpointing=True) is G.CHECKPOINTING


def test_a_life_split_by_cause_adds_up_to_its_wall_time() -> None:
    g = account(status(None), status(S.CREATED), 5)  # the first look: created 5 s ago
    assert (g.accounted_time, seconds(g)) == (at(5), {"starting": 5})
    prev = status(S.CREATED, g=g)
    g = account(prev, status(S.RUNNING, since=65), 65)
    assert seconds(g) == {"starting": 65}
    assert g.share == "0%"
    prev = status(S.RUNNING, since=65, g=g)
    assert account(prev, status(S.RUNNING, since=65), 365) == g, "nothing else written: held"
    g = account(prev, status(S.RUNNING, since=65), 665)  # the refresh, ten minutes on
    assert seconds(g) == {"productive": 600, "starting": 65}
    prev = status(S.RUNNING, since=65, g=g)
    g = account(prev, status(S.RESTARTING, since=700), 700)
    g = account(status(S.RESTARTING, since=700, g=g), status(S.RUNNING, since=730), 730)
    g = account(status(S.RUNNING, since=730, g=g), status(S.SUCCEEDED, since=800), 800)
    assert seconds(g) == {"productive": 705, "starting": 65, "restarting": 30}
    assert (g.accounted_time, g.wall_seconds, g.share) == (at(800), 800, "88%")
    after = account(status(S.SUCCEEDED, since=800, g=g), status(S.SUCCEEDED, since=800), 5000)
    assert after == g, "the clock stopped as the job finished"


def test_suspended_and_gated_in_a_queue_are_queued() -> None:
    g = account(status(None), status(S.SUSPENDED), 0)
    g = account(status(S.SUSPENDED, g=g), status(S.CREATED, since=120, queued=True), 120)
    g = account(status(S.CREATED, queued=True, g=g), status(S.CREATED, since=150), 150)
    g = account(status(S.CREATED, since=150, g=g), status(S.RUNNING, since=170), 170)
    assert seconds(g) == {"queued": 150, "starting": 20}


def test_a_checkpoint_awaited_is_charged_to_checkpointing() -> None:
    g = account(status(None), status(S.RUNNING), 0)
    g = account(status(S.RUNNING, g=g), status(S.SUSPENDED, since=40), 40, checkpointing=True)
    assert seconds(g) == {"checkpointing": 40}


def test_only_the_starting_pods_counts_changing_leaves_the_accounting_for_later() -> None:
    g = account(status(None), status(S.CREATED), 0)
    prev = status(S.CREATED, g=g)
    assert account(prev, status(S.CREATED, active=2), 30) == g, "pacing may hold the counts"
    assert account(prev, status(S.CREATED, queued=True), 30).accounted_time == at(30)
    out = goodput.account(prev, status(S.CREATED, active=2), progress=None, created=NOW, now=at(30))
    assert out.dues == (at(600),), "looked at again when the refresh is due"


def test_the_refresh_grows_with_the_wall_time_within_its_bounds() -> None:
    def after(wall: int) -> float:
        g = v1beta1.GoodputStatus(accounted_time=NOW, productive_seconds=wall)
        return goodput.refresh(g).total_seconds()

    assert [after(0), after(6000), after(20_000), after(10**6)] == [600, 600, 2000, 3600]


def test_a_job_seen_before_goodput_existed_counts_from_its_next_pass() -> None:
    g = account(status(S.RUNNING), status(S.RUNNING), 900)
    assert (g.accounted_time, g.wall_seconds) == (at(900), 0)
    finished = goodput.account(
        status(S.SUCCEEDED), status(S.SUCCEEDED), progress=None, created=NOW, now=at(900)
    )
    assert finished.status is None, "a job that finished before has none"


# --- hung ------------------------------------------------------------------------------------


def _stalled() -> tuple[v1beta1.TrainingJobStatus, v1beta1.GoodputStatus]:
    """Running since 100 s, its step last moved at 200 s, and accounted up to then."""
    g = v1beta1.GoodputStatus(
        accounted_time=at(200), productive_seconds=100, lost_seconds=_lost(starting=100), share="50%"
    )
    return status(S.RUNNING, since=100, progress=reading(50, 200), g=g), g


def _lost(**seconds: int) -> v1beta1.LostSeconds:
    return v1beta1.LostSeconds(**seconds)


def test_a_stall_is_held_back_then_charged_hung_whole_when_a_hang_is_recorded() -> None:
    prev, g = _stalled()
    still = status(S.RUNNING, since=100, progress=reading(50, 200), active=3)
    held = goodput.account(prev, still, progress=DEADLINE, created=NOW, now=at(900))
    assert held.status == g, "the stall is not accounted while it may be a hang"
    limit = at(200 + 600 + 60) + goodput.HANG_SLACK
    assert limit in held.dues
    restarted = status(S.RESTARTING, since=900, progress=reading(50, 200), failures=(hang(900),))
    out = account(prev, restarted, 900, spec=DEADLINE)
    assert seconds(out) == {"productive": 100, "starting": 100, "hung": 700}
    assert out.accounted_time == at(900)


def test_a_stall_that_ends_otherwise_was_productive() -> None:
    prev, _ = _stalled()
    moved = account(prev, status(S.RUNNING, since=100, progress=reading(60, 500)), 500, spec=DEADLINE)
    assert seconds(moved)["productive"] == 400
    crashed = account(prev, status(S.RESTARTING, since=500, progress=reading(50, 200)), 500, spec=DEADLINE)
    assert seconds(crashed)["productive"] == 400
    assert "hung" not in seconds(crashed)


def test_a_stall_past_the_deadline_and_more_is_hung_without_waiting_for_the_record() -> None:
    prev, _ = _stalled()
    late = 200 + 600 + 60 + goodput.HANG_SLACK.total_seconds()
    out = account(prev, status(S.RUNNING, since=100, progress=reading(50, 200)), late, spec=DEADLINE)
    assert seconds(out)["hung"] == late - 200


def test_without_a_deadline_running_time_is_productive() -> None:
    prev, _ = _stalled()
    same = status(S.RUNNING, since=100, progress=reading(50, 200))
    assert seconds(account(prev, same, 900))["productive"] == 800


def test_before_the_attempt_s_step_first_moves_running_time_is_start_up_for_the_grace_at_most() -> None:
    prev, _ = _stalled()  # 100 s productive and 100 s starting so far, up to 200 s
    # The reading is the attempt before's: this attempt, running since 300 s, has not reported.
    prev = attrs.evolve(prev, conditions=status(S.RUNNING, since=300).conditions)
    out = account(prev, status(S.RUNNING, since=300, progress=reading(50, 200)), 900, spec=DEADLINE)
    assert seconds(out) == {"productive": 100 + 540, "starting": 100 + 160}, "60 s of grace from 300 s"
    # Its step first moves at 330 s: start-up until then, productive after.
    moved = account(prev, status(S.RUNNING, since=300, progress=reading(60, 330)), 400, spec=DEADLINE)
    assert seconds(moved) == {"productive": 100 + 70, "starting": 100 + 130}
    # A restart that ended at 350 s (a move off a noticed node leaves Running as it was): the
    # attempt began then, and its step has not moved since.
    restarted = attrs.evolve(
        prev, conditions=(*prev.conditions, _cond(C.RESTARTING, "Restarted", 350, true=False))
    )
    after = account(restarted, status(S.RUNNING, since=300, progress=reading(60, 330)), 400, spec=DEADLINE)
    assert seconds(after) == {"productive": 100, "starting": 100 + 200}
    # Without progress reports the operator cannot tell: productive.
    assert seconds(account(prev, status(S.RUNNING, since=300), 400))["productive"] == 100 + 200


# --- redone ----------------------------------------------------------------------------------


def test_steps_thrown_away_by_a_restart_are_charged_as_they_are_run_again() -> None:
    g = v1beta1.GoodputStatus(accounted_time=at(1000), productive_seconds=1000)
    # A new attempt running since 1000 s resumed from its checkpoint: 1200 -> 900 at 2 steps/s.
    prev = status(S.RUNNING, since=1000, progress=reading(1200, 900), g=g)
    back = account(prev, status(S.RUNNING, since=1000, progress=reading(900, 1060, rate=None)), 1060)
    assert seconds(back) == {"productive": 1000, "redone": 60}
    assert back.redo_owed_seconds == 150, "300 steps at 2 steps/s are still to run again"
    prev = status(S.RUNNING, since=1000, progress=reading(900, 1060, rate=None), g=back)
    on = account(prev, status(S.RUNNING, since=1000, progress=reading(1020, 1160)), 1160)
    assert seconds(on) == {"productive": 1000, "redone": 160}
    assert on.redo_owed_seconds == 50
    prev = status(S.RUNNING, since=1000, progress=reading(1020, 1160), g=on)
    done = account(prev, status(S.RUNNING, since=1000, progress=reading(1220, 1260)), 1260)
    assert seconds(done) == {"productive": 1050, "redone": 210}
    assert done.redo_owed_seconds == 0


@pytest.mark.parametrize("stop", [S.SUSPENDED, S.RESTARTING, S.PENDING])
def test_with_checkpoints_reported_an_attempt_s_steps_since_its_last_are_owed_as_it_ends(stop: S) -> None:
    g = v1beta1.GoodputStatus(accounted_time=at(1100), productive_seconds=1100)
    # Running since 1000 s at 2 steps/s; read at 1190 s: step 1200, its last checkpoint at 1100.
    prev = status(S.RUNNING, since=1000, progress=reading(1200, 1190, checkpoint=1100), g=g)
    ended = account(prev, status(stop, since=1200, progress=prev.progress), 1200)
    assert seconds(ended) == {"productive": 1200}
    assert ended.redo_owed_seconds == 50 + 10, "100 steps at 2 steps/s, and the 10 s since the reading"
    # The next attempt, running from 1500 s, reads 1150 (it resumed from 1100): nothing owed twice.
    prev = status(S.RUNNING, since=1500, progress=reading(1200, 1190, checkpoint=1100), g=ended)
    prev = attrs.evolve(prev, goodput=attrs.evolve(ended, accounted_time=at(1500)))
    back = account(prev, status(S.RUNNING, since=1500, progress=reading(1150, 1530, None, 1100)), 1530)
    assert back.redo_owed_seconds == 60
    assert seconds(back)["redone"] == 30, "the way back"
    # A checkpoint taken as the stop came (a checkpoint before a stop, answered): only the time
    # since the reading is thrown away.
    answered = status(S.RUNNING, since=1000, progress=reading(1200, 1196, checkpoint=1200), g=g)
    assert account(answered, status(stop, since=1200), 1200).redo_owed_seconds == 4


def test_with_checkpoints_reported_a_restart_inside_the_containers_owes_the_steps_since_the_last() -> None:
    g = v1beta1.GoodputStatus(accounted_time=at(1100), productive_seconds=1100)
    prev = status(S.RUNNING, since=1000, progress=reading(1200, 1190, checkpoint=1100), g=g)
    back = account(prev, status(S.RUNNING, since=1000, progress=reading(1120, 1200, None, 1100)), 1200)
    assert back.redo_owed_seconds == 50
    assert seconds(back) == {"productive": 1100, "redone": 100}
    # Resumed from before its last checkpoint (from the start): every step since is owed.
    scratch = account(prev, status(S.RUNNING, since=1000, progress=reading(20, 1200, None)), 1200)
    assert scratch.redo_owed_seconds == math.ceil((1200 - 20) / 2)


def test_what_is_owed_is_never_more_than_the_productive_time_so_far() -> None:
    g = v1beta1.GoodputStatus(accounted_time=at(100), productive_seconds=100)
    prev = status(S.RUNNING, progress=reading(10**6, 50, rate="0.001"), g=g)
    out = account(prev, status(S.RUNNING, progress=reading(0, 110)), 110)
    assert out.redo_owed_seconds == 100


# --- properties ------------------------------------------------------------------------------

STATES = st.sampled_from([S.CREATED, S.RUNNING, S.RUNNING, S.RESTARTING, S.SUSPENDED, S.SUCCEEDED, S.FAILED])


@st.composite
def histories(draw: st.DrawFn) -> list[tuple[int, S, bool, int | None, bool, bool]]:
    """Passes: seconds since the last, the state decided, gated in a queue, a new reading of the
    step (or none), a hang recorded, a checkpoint awaited."""
    return draw(
        st.lists(
            st.tuples(
                st.integers(0, 4000),
                STATES,
                st.booleans(),
                st.none() | st.integers(0, 5000),
                st.integers(0, 9).map(lambda n: n == 0),
                st.integers(0, 9).map(lambda n: n == 0),
            ),
            max_size=40,
        )
    )


@given(history=histories(), spec=st.sampled_from([None, DEADLINE, v1beta1.ProgressSpec()]))
def test_the_parts_add_up_to_the_wall_time_never_negative_never_going_down(
    history: list[tuple[int, S, bool, int | None, bool, bool]], spec: v1beta1.ProgressSpec | None
) -> None:
    t = 0
    prev = v1beta1.TrainingJobStatus()
    for dt, state, queued, step, hung, checkpointing in history:
        t += dt
        old_state = v1beta1.state_of(prev.conditions)
        if old_state in (S.SUCCEEDED, S.FAILED):
            state = old_state  # a finished job stays finished
        since = t if state != old_state else _since(prev, t)
        progress = prev.progress
        if step is not None:
            rate = None if progress is None or step < progress.step else "1.5"
            progress = reading(step, t, rate) if progress is None or step != progress.step else progress
        failures = (*prev.failures, hang(t))[-64:] if hung else prev.failures
        new = status(state, since=since, queued=queued, progress=progress, failures=failures)
        out = goodput.account(prev, new, progress=spec, created=NOW, now=at(t), checkpointing=checkpointing)
        g = out.status
        assert g is not None
        assert g.wall_seconds == (g.accounted_time - NOW).total_seconds(), "the parts add up"
        assert all(s >= 0 for s in goodput.parts(g).values())
        assert g.accounted_time <= at(t)
        assert all(d > g.accounted_time for d in out.dues)
        before = prev.goodput
        if before is not None:
            assert g.accounted_time >= before.accounted_time
            for c, s in goodput.parts(g).items():
                assert s >= goodput.parts(before)[c], f"{c} went down"
        if state in (S.SUCCEEDED, S.FAILED) and old_state not in (S.SUCCEEDED, S.FAILED):
            assert g.accounted_time == at(t), "every second is charged by the end"
        prev = attrs.evolve(new, goodput=g)


def _since(prev: v1beta1.TrainingJobStatus, t: int) -> float:
    running = next((c for c in prev.conditions if c.type == C.RUNNING), None)
    if running is None or running.last_transition_time is None:
        return t
    return (running.last_transition_time - NOW).total_seconds()


# --- the API ---------------------------------------------------------------------------------


def test_goodput_survives_etcd_and_a_trip_through_v1alpha1() -> None:
    g = v1beta1.GoodputStatus(
        accounted_time=at(800),
        productive_seconds=705,
        lost_seconds=_lost(starting=65, restarting=20, redone=10),
        share="88%",
        redo_owed_seconds=5,
    )
    job = attrs.evolve(
        a_job("pt").framework("pytorch").replicas("Worker", 2).build(),
        status=status(S.RUNNING, g=g),
    )
    stored = json.loads(json.dumps(scheme.encode(job)))
    assert stored["status"]["goodput"] == {
        "accountedTime": "2026-11-24T12:13:20Z",
        "productiveSeconds": 705,
        "lostSeconds": {"starting": 65, "restarting": 20, "redone": 10},
        "share": "88%",
        "redoOwedSeconds": 5,
    }
    assert scheme.decode(stored) == job
    spoke = scheme.convert(job, v1alpha1.API_VERSION)
    spoke = scheme.decode(json.loads(json.dumps(scheme.encode(spoke))))
    assert scheme.convert(spoke, v1beta1.API_VERSION) == job, "kept in v1alpha1's conversion data"


def test_the_share_is_a_whole_per_cent() -> None:
    for bad in ("101%", "88", "8.5%", "-1%"):
        with pytest.raises(ValueError, match="share"):
            v1beta1.GoodputStatus(accounted_time=NOW, share=bad)


# --- through the operator --------------------------------------------------------------------


def test_the_operator_keeps_goodput_in_the_status_as_the_job_goes() -> None:
    job = a_job("pt").framework("pytorch").replicas("Master", 1).replicas("Worker", 1).build()
    job = attrs.evolve(job, metadata=attrs.evolve(job.metadata, creation_timestamp=NOW))
    w = World(job, pytorch.FRAMEWORK)
    counted = {c: _counted(c) for c in G}
    w.now = at(3)
    w.reconcile()
    w.tick(10)
    w.settle()
    assert w.state is S.RUNNING
    g = w.status.goodput
    assert g is not None
    assert seconds(g) == {"starting": 13}
    w.tick(1200)
    decision = w.reconcile()
    g = w.status.goodput
    assert g is not None
    assert seconds(g) == {"starting": 13, "productive": 1200}, "brought up to date by the refresh"
    assert decision.requeue_after == goodput.REFRESH_MIN.total_seconds()
    w.exit(w.pod("Master", 0).name, 0)
    w.tick(60)
    w.settle()
    assert w.state is S.SUCCEEDED
    g = w.status.goodput
    assert g is not None
    assert (g.accounted_time, g.share) == (at(1273), "98%")
    # Prometheus counts what each write accounted, by cause.
    assert {c: _counted(c) - counted[c] for c in G} == goodput.parts(g)


def _counted(cause: goodput.Cause) -> float:
    labels = {"framework": "pytorch", "namespace": "default", "cause": cause.value}
    return metrics.REGISTRY.get_sample_value("kubetrain_goodput_seconds_total", labels) or 0.0
