"""What the step decides around a job's course, which the reconciler once decided itself.

Pacing, Kueue releases, surplus Services, pods already made and invalid specs — each as a
scenario on the simulated cluster, so that what the controller carries out is what the step
said.
"""

from __future__ import annotations

import datetime

import attrs
from testkit.builders import a_ddp_job
from testkit.world import World

from kubetrain.api import indexes, v1beta1, validation
from kubetrain.operator import lifecycle, memory
from kubetrain.operator.frameworks import pytorch
from kubetrain.operator.policies import pacing

S = v1beta1.JobState
C = v1beta1.ConditionType


def torch(workers: int = 2, queue: str | None = None, **run: object) -> World:
    policy = v1beta1.SchedulingPolicy(queue=queue) if queue else None
    job = (
        a_ddp_job(workers)
        .with_spec(run_policy=v1beta1.RunPolicy(scheduling_policy=policy, **run))  # type: ignore[arg-type]
        .build()
    )
    return World(job, pytorch.FRAMEWORK)


def test_a_count_change_alone_is_held_by_the_step_and_carried_by_the_next_write() -> None:
    w = torch()
    w.settle()
    assert w.state is S.RUNNING
    written = w.status
    w.tick(1)
    w.pods["pt-worker-1"] = attrs.evolve(w.pods["pt-worker-1"], ready=False)  # a probe fails
    held = w.reconcile()
    assert held.status == written, "the count waits"
    assert held.requeue_after == pacing.PERIOD.total_seconds() - 1
    w.tick(held.requeue_after or 0)
    assert w.reconcile().status.replica_statuses["Worker"].ready == 1
    w.exit("pt-worker-0", 137)  # what happened is written at once, the held count with it
    d = w.reconcile()
    assert d.status.failures, "written at once"


def test_a_hold_is_never_taken_without_a_write_of_this_process() -> None:
    w = torch()
    w.reconcile()
    w.last_write = None  # a restarted operator: nothing written by it yet
    w.kubelets()
    assert w.reconcile().status.replica_statuses["Worker"].active == 2


def test_queued_pods_of_an_old_attempt_and_of_a_finished_job_are_released_once() -> None:
    w = torch(queue="team-a")
    w.settle()
    assert all(p.in_queue for p in w.pods.values())
    w.exit("pt-worker-0", 137)  # in a queue every restart is the whole gang's: a new attempt
    d = w.reconcile()
    assert sorted(d.release) == ["pt-master-0", "pt-worker-0", "pt-worker-1"]
    assert w.reconcile().release == (), "marked once"
    w.tick(60)
    w.settle()
    w.exit("pt-master-0", 0)
    done = w.reconcile()
    assert w.state is S.SUCCEEDED
    assert sorted(done.release) == ["pt-worker-0", "pt-worker-1"], "the master succeeded: not released"


def test_an_unqueued_job_releases_nothing() -> None:
    w = torch()
    w.settle()
    w.exit("pt-master-0", 0)
    assert w.reconcile().release == ()


def test_the_services_of_replicas_scaled_away_are_deleted_and_only_those() -> None:
    w = torch(workers=3, suspend=True)
    w.job = attrs.evolve(w.job, spec=attrs.evolve(w.job.spec, run_policy=v1beta1.RunPolicy()))
    w.settle()
    assert sorted(w.services) == ["pt-master-0", "pt-worker-0", "pt-worker-1", "pt-worker-2"]
    specs = dict(w.job.spec.replica_specs)
    specs["Worker"] = attrs.evolve(specs["Worker"], replicas=1)
    w.job = attrs.evolve(w.job, spec=attrs.evolve(w.job.spec, replica_specs=specs))
    assert w.reconcile().delete_services == ("pt-worker-1", "pt-worker-2")
    assert sorted(w.services) == ["pt-master-0", "pt-worker-0"]


def test_pods_made_but_not_yet_shown_by_the_cache_are_not_made_again() -> None:
    w = torch()
    w.lagging = True
    first = w.reconcile()
    assert len(first.create) == 3
    again = w.reconcile()  # the cache shows none of them yet
    assert again.create == ()
    w.kubelets()
    w.settle()
    assert w.state is S.RUNNING


def test_an_invalid_job_fails_once_with_every_reason_and_keeps_its_history() -> None:
    w = torch()
    w.settle()
    w.exit("pt-worker-0", 137)
    w.settle()
    restarts = w.status.restarts
    w.invalid = (
        validation.FieldError(path=("spec", "replicaSpecs", "Launcher"), message="no such type"),
        validation.FieldError(path=("spec", "framework", "name"), message="unknown"),
    )
    d = w.reconcile()
    assert w.state is S.FAILED
    failed = next(c for c in w.status.conditions if c.type == C.FAILED)
    assert failed.reason == "InvalidSpec"
    assert "spec.replicaSpecs.Launcher: no such type" in failed.message
    assert "spec.framework.name: unknown" in failed.message
    assert [e.reason for e in d.events] == ["InvalidSpec"]
    assert not any(c.type == C.RUNNING and c.is_true() for c in w.status.conditions)
    assert w.status.restarts == restarts, "the history stays"
    assert w.reconcile() == lifecycle.Decision(status=w.status), "once"


def test_a_suspended_job_whose_spec_stops_reading_fails() -> None:
    w = torch(suspend=True)
    w.reconcile()
    assert w.state is S.SUSPENDED
    w.invalid = (validation.FieldError(path=("spec",), message="broken"),)
    w.reconcile()
    assert w.state is S.FAILED
    assert (S.SUSPENDED, S.FAILED) in lifecycle.TRANSITIONS


def test_the_memory_of_a_job_goes_with_it() -> None:
    remembered = memory.Memory()
    job = remembered.of("ns/a", "uid-a")
    job.last_write = datetime.datetime(2026, 11, 26, tzinfo=datetime.UTC)
    job.groups = frozenset({"a-gang-0"})
    remembered.expected["Pod"].created("ns/a-worker-0", "uid-a")
    remembered.expected["Service"].deleted("ns/a-worker-3", "uid-a")
    remembered.of("ns/b", "uid-b")
    remembered.expected["Pod"].created("ns/b-worker-0", "uid-b")
    assert remembered.expected["Pod"].pending("uid-a") == ["ns/a-worker-0"]
    remembered.forget("ns/a")
    assert remembered.get("ns/a", "uid-a") is None
    assert len(remembered) == 1
    assert remembered.expected["Pod"].expected("ns/a-worker-0") is None
    assert remembered.expected["Service"].expected("ns/a-worker-3") is None
    assert remembered.expected["Pod"].pending("uid-b") == ["ns/b-worker-0"], "another job's stays"
    remembered.forget("ns/b")
    assert remembered.sizes() == {"jobs": 0, "names": 0, "expected_pods": 0, "expected_services": 0}


def test_a_job_made_again_under_its_name_inherits_nothing_of_its_predecessor() -> None:
    remembered = memory.Memory()
    old = remembered.of("ns/a", "uid-1")
    old.groups = frozenset({"a-gang-0"})
    old.refused = ()
    remembered.expected["Pod"].created("ns/a-worker-0", "uid-1")
    new = remembered.of("ns/a", "uid-2")
    assert new.groups is None, "nothing of the old UID's"
    assert new.refused is None
    assert remembered.get("ns/a", "uid-1") is None, "the predecessor is forgotten at once"
    assert remembered.expected["Pod"].pending("uid-1") == []
    assert len(remembered) == 1


def test_a_pod_gone_while_nobody_watched_is_counted_once_from_the_status_record() -> None:
    w = torch(workers=3)
    w.settle()
    assert w.status.replica_statuses["Worker"].active_indexes == "0-2"
    w.restart_operator()
    w.vanish_unseen("pt-worker-1")  # no tombstone: the operator was down
    d = w.reconcile()
    (record,) = w.status.failures
    assert (record.reason, record.failure_class) == ("PodVanished", v1beta1.FailureClass.INFRASTRUCTURE)
    assert (record.replica_type, record.index) == ("Worker", 1)
    assert w.status.restarts.infrastructure == 1
    assert w.state is S.RESTARTING
    assert {x.pod for x in d.delete} == {"pt-master-0", "pt-worker-0", "pt-worker-2"}, "a new world"
    assert w.status.replica_statuses["Worker"].active_indexes == "", "the record moves on"
    w.reconcile()
    assert w.status.restarts.infrastructure == 1, "once"


def test_a_pod_the_step_deletes_or_that_ended_is_not_recorded_active() -> None:
    w = torch(workers=2)
    w.settle()
    w.exit("pt-worker-1", 0)
    w.reconcile()
    assert w.status.replica_statuses["Worker"].active_indexes == "0", "ended: not active"


def test_indexes_are_written_as_ranges_and_read_back() -> None:
    assert indexes.format_indexes([9, 0, 1, 2, 3, 7, 10]) == "0-3,7,9-10"
    assert indexes.format_indexes([]) == ""
    assert indexes.parse_indexes("0-3,7,9-10") == {0, 1, 2, 3, 7, 9, 10}
    assert indexes.parse_indexes("x,2-,4") == {4}, "a malformed part is ignored"


def test_a_replacement_in_a_placed_attempt_joins_it_and_a_first_creation_does_not() -> None:
    w = torch(workers=2)
    first = w.reconcile()
    assert first.joining == (), "the attempt's own gang"
    w.settle()
    w.job = attrs.evolve(
        w.job,
        spec=attrs.evolve(
            w.job.spec, failure_policy=v1beta1.FailurePolicy(restart_scope=v1beta1.RestartScope.POD)
        ),
    )
    w.exit("pt-worker-1", 137)
    w.reconcile()  # counted, the pod deleted
    w.kubelets()
    w.tick(60)
    replaced = w.reconcile()
    assert replaced.create == (("Worker", 1),)
    assert replaced.joining == ("Worker",), "placed alone, not in the gang of attempt 0"


def _suspended(w: World, suspend: bool, workers: int | None = None) -> None:
    specs = dict(w.job.spec.replica_specs)
    if workers is not None:
        specs["Worker"] = attrs.evolve(specs["Worker"], replicas=workers)
    rp = attrs.evolve(w.job.spec.run_policy, suspend=suspend)
    w.job = attrs.evolve(w.job, spec=attrs.evolve(w.job.spec, run_policy=rp, replica_specs=specs))


def test_nothing_is_made_beside_a_pod_made_before_a_suspension_that_the_cache_does_not_show_yet() -> None:
    """Found by the lifecycle machine: pods made, unseen, then a suspension (which cannot delete
    what it does not see), a scale-up and a resume. The new attempt's worker must not start while
    the old attempt's pods, once the cache shows them, still run."""
    w = torch(workers=1)
    w.lagging = True
    assert len(w.reconcile().create) == 2  # attempt 0's master and worker, not in the cache yet
    _suspended(w, True)
    assert w.reconcile().delete == ()  # nothing it can see to delete
    _suspended(w, False, workers=2)
    assert w.reconcile().create == (), "the made pods may be the old attempt's: wait for the cache"
    w.kubelets()  # the cache shows them now: attempt 0, stale
    d = w.reconcile()
    assert {x.pod for x in d.delete} == {"pt-master-0", "pt-worker-0"}
    assert d.create == ()
    w.settle()
    assert w.running_attempts() == {"master": {1}, "worker": {1}}
    assert w.state is S.RUNNING
