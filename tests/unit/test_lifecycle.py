"""The lifecycle step, scenario by scenario, on a simulated cluster (no apiserver)."""

from __future__ import annotations

import itertools

import attrs
import pytest
from testkit.builders import a_job
from testkit.world import GRACE, World

from kubetrain.api import schema, v1beta1
from kubetrain.operator import lifecycle
from kubetrain.operator.frameworks import pytorch, tensorflow
from kubetrain.operator.policies import deadline

S = v1beta1.JobState
EXIT_CODE = v1beta1.RestartPolicy.EXIT_CODE


def running(w: World) -> World:
    w.settle()
    assert w.state is S.RUNNING
    return w


def tf_world(restart_policy: v1beta1.RestartPolicy = EXIT_CODE, **spec: object) -> World:
    job = (
        a_job("tj")
        .framework("tensorflow")
        .replicas("Chief", 1, restart_policy=restart_policy)
        .replicas("Worker", 2, restart_policy=restart_policy)
        .replicas("PS", 1, restart_policy=restart_policy)
        .with_spec(**spec)
        .build()
    )
    return running(World(job, tensorflow.FRAMEWORK))


def torch_world(**spec: object) -> World:
    job = (
        a_job("pt")
        .framework("pytorch")
        .replicas("Master", 1, restart_policy=EXIT_CODE)
        .replicas("Worker", 3, restart_policy=EXIT_CODE)
        .with_spec(**spec)
        .build()
    )
    return running(World(job, pytorch.FRAMEWORK))


def condition(w: World, ctype: v1beta1.ConditionType) -> v1beta1.Condition:
    return next(c for c in w.status.conditions if c.type == ctype)


def test_a_new_job_is_created_then_runs_when_every_replica_runs() -> None:
    job = a_job("tj").framework("tensorflow").replicas("Chief", 1).replicas("Worker", 2).build()
    w = World(job, tensorflow.FRAMEWORK)
    first = w.reconcile()
    assert w.state is S.CREATED
    assert sorted(first.create) == [("Chief", 0), ("Worker", 0), ("Worker", 1)]
    assert first.events == ()  # the status tells it: no Event on the normal course
    assert w.status.start_time == w.now
    w.kubelets()
    second = w.reconcile()
    assert w.state is S.RUNNING
    assert second.create == ()
    assert second.events == ()
    assert w.status.replica_statuses["Worker"].ready == w.status.replica_statuses["Worker"].active == 2
    assert w.status.replica_statuses["Worker"].selector == (
        "training.kubetrain.dev/job-name=tj,training.kubetrain.dev/replica-type=worker"
    )


def test_the_chief_succeeding_finishes_the_job_and_stops_the_others() -> None:
    w = tf_world()
    w.exit("tj-chief-0", 0)
    d = w.reconcile()
    assert w.state is S.SUCCEEDED
    assert condition(w, v1beta1.ConditionType.SUCCEEDED).message == "Chief 0 succeeded"
    assert not any(c.is_true() for c in w.status.conditions if c.type == "Running")
    assert w.status.completion_time == w.now
    # cleanPodPolicy Running (the default): the running pods go, the finished chief stays.
    assert sorted(x.pod for x in d.delete) == ["tj-ps-0", "tj-worker-0", "tj-worker-1"]


def test_failures_after_success_are_ignored() -> None:
    w = tf_world(run_policy=v1beta1.RunPolicy(clean_pod_policy=v1beta1.CleanPodPolicy.NONE))
    w.exit("tj-chief-0", 0)
    w.reconcile()
    w.exit("tj-worker-0", 1)
    d = w.reconcile()
    assert w.state is S.SUCCEEDED
    assert w.status.failures == ()
    assert d.delete == ()
    assert d.create == ()


def test_a_retryable_exit_code_recreates_the_pod_and_spends_the_user_budget() -> None:
    w = tf_world()
    old = w.pod("Worker", 1)
    w.exit("tj-worker-1", 137, "OOMKilled")
    d = w.reconcile()
    assert w.state is S.RESTARTING
    assert d.delete == (lifecycle.Delete(pod="tj-worker-1", uid=old.uid),)
    assert w.status.restarts == v1beta1.RestartCounts(user_code=1)
    (record,) = w.status.failures
    assert (record.replica_type, record.index, record.exit_code, record.reason) == (
        "Worker",
        1,
        137,
        "OOMKilled",
    )
    assert record.failure_class is v1beta1.FailureClass.USER_CODE
    assert record.action is v1beta1.FailureAction.RESTART
    w.settle()
    assert w.state is S.RUNNING
    assert w.pod("Worker", 1).uid != old.uid
    assert w.status.restarts.user_code == 1, "the replaced pod is not counted again"


def test_a_failure_seen_twice_is_charged_once() -> None:
    w = tf_world()
    w.exit("tj-worker-0", 143)
    w.reconcile()
    w.reconcile()  # the delete has not happened yet: the same failed pod is seen again
    assert w.status.restarts.user_code == 1
    assert len(w.status.failures) == 1
    assert w.status.counted_failures == (
        v1beta1.CountedFailures(pod="tj-worker-0", uid=w.pod("Worker", 0).uid, count=1),
    )


def test_a_permanent_exit_code_fails_the_job_in_the_same_step() -> None:
    w = tf_world()
    w.exit("tj-worker-0", 1)
    w.reconcile()
    assert w.state is S.FAILED
    failed = condition(w, v1beta1.ConditionType.FAILED)
    assert failed.reason == "PermanentExitCode"
    assert "Worker 0 (tj-worker-0) failed: UserCode Error, exit code 1; FailJob" in failed.message
    assert w.status.restarts.total == 0


def test_never_makes_a_replicas_failure_final() -> None:
    w = tf_world(v1beta1.RestartPolicy.NEVER)
    w.exit("tj-worker-0", 137)
    w.reconcile()
    assert w.state is S.FAILED
    assert condition(w, v1beta1.ConditionType.FAILED).reason == "ReplicaFailed"


def test_an_eviction_spends_the_infrastructure_budget_and_the_job_runs_on() -> None:
    w = tf_world(v1beta1.RestartPolicy.NEVER)
    w.evict("tj-ps-0")
    w.reconcile()
    assert w.state is S.RESTARTING
    assert w.status.restarts == v1beta1.RestartCounts(infrastructure=1)
    assert w.status.failures[-1].reason == "EvictionByEvictionAPI"
    w.settle()
    assert w.state is S.RUNNING
    assert w.pod("PS", 0).phase == "Running"


def test_pods_on_a_lost_node_are_force_deleted_after_the_termination_deadline() -> None:
    w = tf_world(failure_policy=v1beta1.FailurePolicy(termination_deadline_seconds=20))
    node = w.pod("Worker", 0).node
    assert node is not None
    stuck = sorted(p.name for p in w.pods.values() if p.node == node)
    w.lose_node(node)
    d = w.reconcile()
    assert w.status.restarts.infrastructure == len(stuck)
    assert d.requeue_after == pytest.approx(20)
    w.kubelets()
    w.tick(10)
    assert not any(x.force for x in w.reconcile().delete)
    w.tick(10)
    forced = w.reconcile().delete
    assert sorted(x.pod for x in forced if x.force) == stuck
    w.settle()
    assert w.state is S.RUNNING
    assert all(p.node != node for p in w.pods.values())


def test_a_job_scope_restart_replaces_the_whole_world_at_once() -> None:
    w = torch_world()
    old = {p.name: p.uid for p in w.pods.values()}
    w.exit("pt-worker-1", 137)
    d = w.reconcile()
    assert sorted(x.pod for x in d.delete) == sorted(old)
    assert {t: r.attempt for t, r in w.status.replica_statuses.items()} == {"Master": 1, "Worker": 1}
    assert w.state is S.RESTARTING
    w.kubelets()
    d = w.reconcile()
    assert sorted(d.create) == [("Master", 0), ("Worker", 0), ("Worker", 1), ("Worker", 2)]
    assert all(p.attempt == 1 for p in w.pods.values())
    w.settle()
    assert w.state is S.RUNNING
    assert w.status.restarts.user_code == 1


def test_no_new_pod_starts_while_an_old_attempt_is_still_terminating() -> None:
    w = torch_world()
    node = w.pod("Worker", 0).node
    w.lose_node(node or "")  # its pods will stay Terminating until force-deleted
    w.reconcile()
    w.kubelets()
    assert w.reconcile().create == ()
    w.tick(deadline.DEFAULT_TERMINATION_DEADLINE)
    w.reconcile()
    assert w.reconcile().create != ()


def test_the_budget_is_spent_exactly_and_the_next_failure_fails_the_job() -> None:
    w = tf_world(run_policy=v1beta1.RunPolicy(backoff_limit=1))
    w.exit("tj-worker-0", 137)
    w.settle()
    assert w.state is S.RUNNING
    w.exit("tj-worker-0", 137)
    w.reconcile()
    assert w.state is S.FAILED
    assert condition(w, v1beta1.ConditionType.FAILED).reason == "BackoffLimitExceeded"
    assert w.status.restarts.user_code == 2


def test_kubelet_restarts_under_on_failure_count_against_the_budget() -> None:
    w = tf_world(v1beta1.RestartPolicy.ON_FAILURE, run_policy=v1beta1.RunPolicy(backoff_limit=2))
    for _ in range(2):
        w.exit("tj-worker-0", 1)
        w.settle()
        assert w.state is S.RUNNING
    assert w.status.restarts.user_code == 2
    assert all(r.exit_code == 1 for r in w.status.failures)
    w.exit("tj-worker-0", 1)
    w.reconcile()
    assert w.state is S.FAILED


def test_the_first_matching_rule_decides_and_is_named() -> None:
    rules = (
        v1beta1.FailureRule(
            name="oomIsInfra",
            action=v1beta1.FailureAction.RESTART_UNCHARGED,
            on_reasons=("OOMKilled",),
        ),
        v1beta1.FailureRule(
            name="neverReached",
            action=v1beta1.FailureAction.FAIL_JOB,
            on_exit_codes=v1beta1.ExitCodeMatch(values=(137,)),
        ),
        v1beta1.FailureRule(
            name="psMayDie",
            action=v1beta1.FailureAction.TOLERATE,
            replica_types=("PS",),
        ),
    )
    w = tf_world(failure_policy=v1beta1.FailurePolicy(rules=rules))
    w.exit("tj-worker-0", 137, "OOMKilled")
    w.reconcile()
    assert condition(w, v1beta1.ConditionType.RESTARTING).reason == "Rule:oomIsInfra"
    assert w.status.restarts == v1beta1.RestartCounts(uncharged=1)
    w.settle()
    w.exit("tj-ps-0", 1)
    d = w.reconcile()
    assert w.state is S.RUNNING
    assert d.delete == ()
    assert w.status.failures[-1].rule == "psMayDie"


def test_the_active_deadline_fails_the_job() -> None:
    w = tf_world(run_policy=v1beta1.RunPolicy(active_deadline_seconds=60))
    w.tick(30)
    assert w.reconcile().requeue_after == pytest.approx(30)
    w.tick(30)
    w.reconcile()
    assert w.state is S.FAILED
    assert condition(w, v1beta1.ConditionType.FAILED).reason == "DeadlineExceeded"


def test_a_finished_job_is_deleted_after_its_ttl() -> None:
    w = tf_world(run_policy=v1beta1.RunPolicy(ttl_seconds_after_finished=100))
    w.exit("tj-chief-0", 0)
    assert w.reconcile().requeue_after == pytest.approx(100)
    w.tick(99)
    assert not w.reconcile().delete_job
    w.tick(1)
    assert w.reconcile().delete_job


def test_suspend_deletes_the_pods_and_resume_spends_nothing() -> None:
    w = tf_world()
    w.job = attrs.evolve(w.job, spec=attrs.evolve(w.job.spec, run_policy=v1beta1.RunPolicy(suspend=True)))
    d = w.reconcile()
    assert w.state is S.SUSPENDED
    assert len(d.delete) == 4
    assert w.status.start_time is None
    w.settle()
    assert w.pods == {}
    w.tick(600)
    w.job = attrs.evolve(w.job, spec=attrs.evolve(w.job.spec, run_policy=v1beta1.RunPolicy(suspend=False)))
    w.reconcile()
    assert w.state is S.CREATED
    assert w.status.start_time == w.now
    w.settle()
    assert w.state is S.RUNNING
    assert w.status.restarts.total == 0
    assert w.status.failures == ()


def test_a_pod_that_vanishes_unasked_is_an_infrastructure_failure() -> None:
    w = tf_world()
    gone = w.pod("Worker", 0)
    w._remove(gone)  # deleted by someone else, between two reconciles
    w.reconcile()
    assert w.status.failures[-1].reason == "PodDeleted"
    assert w.status.restarts == v1beta1.RestartCounts(infrastructure=1)
    w.settle()
    assert w.state is S.RUNNING


def test_images_that_never_pull_fail_the_pod_after_the_grace_period() -> None:
    job = (
        a_job("tj")
        .framework("tensorflow")
        .replicas("Chief", 1)
        .with_spec(failure_policy=v1beta1.FailurePolicy(image_pull_grace_seconds=120))
        .build()
    )
    w = World(job, tensorflow.FRAMEWORK)
    w.reconcile()
    w.pods["tj-chief-0"] = attrs.evolve(w.pod("Chief", 0), waiting=frozenset({"ImagePullBackOff"}))
    assert w.reconcile().requeue_after == pytest.approx(120)
    w.tick(120)
    d = w.reconcile()
    assert w.status.failures[-1].reason == "ImagePullBackOff"
    assert w.status.failures[-1].failure_class is v1beta1.FailureClass.INFRASTRUCTURE
    assert [x.pod for x in d.delete] == ["tj-chief-0"]


def test_restart_backoff_delays_the_new_pods() -> None:
    policy = v1beta1.FailurePolicy(restart_backoff=v1beta1.RestartBackoff(initial_seconds=10, max_seconds=60))
    w = tf_world(failure_policy=policy)
    w.exit("tj-worker-0", 137)
    w.reconcile()
    w.kubelets()
    d = w.reconcile()
    assert d.create == ()
    assert d.requeue_after == pytest.approx(10)
    w.tick(10)
    assert w.reconcile().create == (("Worker", 0),)


def test_a_deleted_pods_grace_period_counts_before_the_termination_deadline() -> None:
    w = tf_world(failure_policy=v1beta1.FailurePolicy(termination_deadline_seconds=5))
    w.evict("tj-worker-0")
    d = w.reconcile()
    assert d.requeue_after == pytest.approx(GRACE.total_seconds() + 5)


def test_the_same_input_gives_the_same_decision() -> None:
    w = tf_world()
    w.exit("tj-worker-0", 137)
    inp = w.input()
    assert lifecycle.step(inp) == lifecycle.step(inp)


def test_the_state_diagram_lists_every_transition() -> None:
    text = lifecycle.diagram()
    assert text.startswith("stateDiagram-v2\n")
    for a, b in lifecycle.TRANSITIONS:
        assert f"    {a.value} --> {b.value}\n" in text


def test_a_gated_replica_type_starts_only_once_its_peers_are_ready() -> None:
    launcher_last = attrs.evolve(pytorch.FRAMEWORK, start_after={"master": ("Worker",)})
    job = a_job("pt").framework("pytorch").replicas("Master", 1).replicas("Worker", 2).build()
    w = World(job, launcher_last)
    assert sorted(w.reconcile().create) == [("Worker", 0), ("Worker", 1)]
    assert w.reconcile().create == (), "the workers exist but are not ready yet"
    w.kubelets()
    assert w.reconcile().create == (("Master", 0),)
    w.settle()
    assert w.state is S.RUNNING


# --- refused creates ----------------------------------------------------------------------

QUOTA = (
    403,
    'pods "pt-worker-0" is forbidden: exceeded quota: q, requested: pods=1, used: pods=4, limited: pods=4',
)
INVALID = (422, 'Pod "pt-worker-0" is invalid: spec.containers[0].image: Required value')
RF = v1beta1.ConditionType.REPLICA_FAILURE


PODS = ("pt-master-0", "pt-worker-0", "pt-worker-1")


def refused_world(refusing: tuple[int, str], *, only: tuple[str, ...] = PODS, **spec: object) -> World:
    job = (
        a_job("pt").framework("pytorch").replicas("Master", 1).replicas("Worker", 2).with_spec(**spec).build()
    )
    w = World(job, pytorch.FRAMEWORK)
    w.refusing = dict.fromkeys(only, refusing)
    w.reconcile()  # the first pass: those creates refused
    return w


def test_a_refused_create_shows_as_a_condition_with_the_apiservers_message() -> None:
    w = refused_world(QUOTA)
    assert len(w.refused) == 3
    d = w.reconcile()
    c = condition(w, RF)
    assert c.is_true()
    assert c.reason == "QuotaExceeded"
    assert c.message == f"Pod pt-master-0: {QUOTA[1]}"
    assert w.state is S.CREATED  # waiting, not failed
    # Each refused create is told once, as FailedCreate, with the condition that shows them.
    assert [(e.type, e.reason) for e in d.events] == [("Warning", "FailedCreate")] * 3 + [
        ("Warning", "QuotaExceeded")
    ]
    assert d.create == ()  # held back until the backoff has passed


def test_refused_creates_are_retried_with_a_doubling_backoff_not_in_a_hot_loop() -> None:
    w = refused_world(QUOTA)
    tries = [w.now]
    for _ in range(400):  # ten minutes in steps of 1.5 s
        w.tick(1.5)
        if w.reconcile().create:
            tries.append(w.now)
    gaps = [(b - a).total_seconds() for a, b in itertools.pairwise(tries)]
    assert gaps[0] <= 1.5
    assert all(later >= earlier for earlier, later in itertools.pairwise(gaps)), gaps
    assert max(gaps) <= 60 + 1.5
    assert len(tries) < 25  # not one per reconcile
    assert w.state is S.CREATED  # a quota is waited for, however long


def test_a_quota_that_frees_lets_the_job_go_on_and_clears_the_condition() -> None:
    w = refused_world(QUOTA)
    w.reconcile()
    w.refusing = {}
    w.tick(2)
    assert len(w.reconcile().create) == 3
    w.kubelets()
    w.reconcile()
    assert w.state is S.RUNNING
    c = condition(w, RF)
    assert not c.is_true()
    assert c.reason == "Created"


def test_a_permanent_refusal_fails_the_job_after_the_grace_period() -> None:
    w = refused_world(INVALID)
    w.reconcile()
    w.tick(lifecycle.DEFAULT_REFUSAL_GRACE_SECONDS - 1)
    w.reconcile()
    assert w.state is S.CREATED
    w.tick(1)
    d = w.reconcile()
    assert w.state is S.FAILED
    failed = condition(w, v1beta1.ConditionType.FAILED)
    assert failed.reason == "CreateRefused"
    assert failed.message == f"refused for longer than 300s: Pod pt-master-0: {INVALID[1]}"
    assert d.create == ()


def test_an_apiservers_message_too_long_for_the_status_is_cut_not_a_stuck_job() -> None:
    # A webhook may deny with any text; the status keeps 32,768 characters of a message.
    huge = (422, "denied: " + "x" * 100_000)
    w = refused_world(huge)
    w.reconcile()
    c = condition(w, RF)
    assert len(c.message) == 32768
    assert c.message.endswith(schema.CUT)
    assert w.status.last_refusal is not None
    assert len(w.status.last_refusal.message) == 32768
    w.tick(lifecycle.DEFAULT_REFUSAL_GRACE_SECONDS)
    w.reconcile()
    assert w.state is S.FAILED
    assert condition(w, v1beta1.ConditionType.FAILED).message.startswith("refused for longer than 300s: Pod")


def test_the_refusal_grace_period_is_the_jobs_to_choose() -> None:
    policy = v1beta1.FailurePolicy(refusal_grace_seconds=5)
    w = refused_world(INVALID, failure_policy=policy)
    d = w.reconcile()
    assert d.requeue_after is not None
    assert d.requeue_after <= 5
    w.tick(5)
    w.reconcile()
    assert condition(w, v1beta1.ConditionType.FAILED).reason == "CreateRefused"


def test_a_permanent_refusal_fails_the_job_after_its_grace_however_often_the_operator_restarts() -> None:
    w = refused_world(INVALID)
    w.reconcile()
    kept = w.status.last_refusal
    assert kept is not None
    assert (kept.kind, kept.name, kept.code, kept.message) == ("Pod", "pt-master-0", *INVALID)
    assert kept.observed_generation == w.job.metadata.generation
    tries = 1
    for _ in range(lifecycle.DEFAULT_REFUSAL_GRACE_SECONDS // 20 + 1):  # an operator that restarts every 20 s
        w.restart_operator()
        w.tick(20)
        tries += bool(w.reconcile().create)
        if w.state is S.FAILED:
            break
    assert w.state is S.FAILED, "the grace began when the refusals did, not at the last restart"
    assert condition(w, v1beta1.ConditionType.FAILED).reason == "CreateRefused"
    assert tries < 15, "each restart did not start the backoff again"


def test_an_operator_that_restarts_waits_out_the_backoff_the_last_one_began() -> None:
    w = refused_world(QUOTA)
    for _ in range(8):  # refused for a while: the backoff has grown past a few seconds
        w.tick(15)
        w.reconcile()
    tried = w.status.last_refusal
    assert tried is not None
    w.restart_operator()
    w.tick(1)
    assert w.reconcile().create == (), "tried again at once"
    assert condition(w, RF).is_true(), "the condition stays, with its time"
    assert w.status.last_refusal == tried
    w.refusing = {}
    w.tick(60)
    assert len(w.reconcile().create) == 3
    w.kubelets()
    w.reconcile()
    assert w.state is S.RUNNING
    assert w.status.last_refusal is None


def test_a_spec_mended_while_pods_are_refused_starts_a_new_attempt_at_once() -> None:
    w = refused_world(INVALID, only=PODS[1:])  # the Master got through, the Workers did not
    assert list(w.pods) == ["pt-master-0"]
    w.reconcile()
    assert condition(w, RF).reason == "Invalid"
    # The user mends the Worker template (allowed while ReplicaFailure); the generation moves.
    w.job = attrs.evolve(w.job, metadata=attrs.evolve(w.job.metadata, generation=2))
    w.refusing = {}
    w.tick(0.1)
    d = w.reconcile()
    assert {r.attempt for r in w.status.replica_statuses.values()} == {1}
    assert [dl.pod for dl in d.delete] == ["pt-master-0"]  # no pod of the old spec stays
    assert not condition(w, RF).is_true()
    assert w.status.restarts.total == 0  # uncharged
    w.kubelets()
    d = w.reconcile()
    assert sorted(d.create) == [("Master", 0), ("Worker", 0), ("Worker", 1)]  # at once, no backoff
