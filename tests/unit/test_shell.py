"""The operator's shell on the simulated cluster: observe, step, execute, and memory by UID.

The ``World`` runs the operator's real observe and executor against a fake apiserver, so these
scenarios test what the operator itself does with gang groups, names a predecessor still holds,
refusals told once, a job another controller manages, and what it remembers across a restart.
"""

from __future__ import annotations

import attrs
import pytest
from testkit.builders import a_ddp_job
from testkit.world import World

from kubetrain.api import naming, v1beta1
from kubetrain.operator import lifecycle
from kubetrain.operator.frameworks import pytorch
from kubetrain.operator.policies import refusal
from kubetrain.operator.runtime import client, reconcile
from kubetrain.operator.scheduling import native
from kubetrain.operator.scheduling import workload as workload_

S = v1beta1.JobState
C = v1beta1.ConditionType


def ganged(workers: int = 2, **policy: object) -> World:
    failure = v1beta1.FailurePolicy(restart_scope=v1beta1.RestartScope.JOB, **policy)  # type: ignore[arg-type]
    job = a_ddp_job(workers).with_spec(failure_policy=failure).build()
    return World(job, pytorch.FRAMEWORK, scheduler=native.BACKEND)


def restart(w: World) -> None:
    """A worker fails and the job restarts as a new attempt; the old pods go."""
    w.exit("pt-worker-0", 137)  # retryable under the ExitCode policy
    w.settle()


def test_the_pods_join_a_group_the_job_made_first_and_owns() -> None:
    w = ganged()
    w.settle()
    assert w.state is S.RUNNING
    assert w.groups == {"pt-gang-0": w.uid}
    assert {p.gang for p in w.pods.values()} == {"pt-gang-0"}


def test_a_restart_makes_the_next_attempts_group_and_deletes_the_last_once_its_pods_are_gone() -> None:
    w = ganged()
    w.settle()
    restart(w)
    assert w.state is S.RUNNING
    assert {r.attempt for r in w.status.replica_statuses.values()} == {1}
    assert w.groups == {"pt-gang-1": w.uid}
    assert w.groups_deleted == ["pt-gang-0"]


def test_a_group_is_kept_while_pods_made_to_join_it_are_not_in_the_caches_yet() -> None:
    """The lifecycle machine's counterexample: made while the cache lags, the pods are not seen
    when the job is suspended, and their group went before them."""
    w = ganged()
    w.lagging = True
    w.reconcile()
    assert w.groups == {"pt-gang-0": w.uid}
    assert w.unseen, "made, not shown yet"
    rp = attrs.evolve(w.job.spec.run_policy, suspend=True)
    w.job = attrs.evolve(w.job, spec=attrs.evolve(w.job.spec, run_policy=rp))
    for _ in range(3):
        assert w.reconcile().delete_groups == ()
    assert w.groups == {"pt-gang-0": w.uid}
    w.kubelets()  # the caches show them: they go, and then their group
    w.settle()
    assert w.state is S.SUSPENDED
    assert not w.pods
    assert w.groups == {}


def test_a_restarted_operator_lists_the_groups_and_deletes_those_of_earlier_attempts() -> None:
    w = ganged()
    w.settle()
    restart(w)
    # A group the operator before made and did not live to delete.
    w.groups["pt-gang-0"] = w.uid
    w.restart_operator()
    first = w.reconcile()
    assert first.look_up_groups, "it does not know the job's groups"
    assert w.mine.groups == frozenset({"pt-gang-0", "pt-gang-1"})
    second = w.reconcile()
    assert second.delete_groups == ("pt-gang-0",)
    assert w.groups == {"pt-gang-1": w.uid}
    assert not w.reconcile().look_up_groups, "listed once"


def test_a_job_made_again_under_its_name_gets_its_own_group_and_waits_for_the_names_its_predecessor_holds() -> (
    None
):
    w = ganged()
    w.settle()
    old = w.uid
    w.recreate()  # the operator goes on with its memory of the old UID
    assert w.uid != old
    d = w.reconcile()
    assert d.groups == ("pt-gang-0",), "the new job's own group, not the old one taken as made"
    assert w.groups == {"pt-gang-0": w.uid}
    # The predecessor's pods still stop: their names are held, a refusal that waits.
    (held, *_) = w.refused or ()
    assert held.reason == refusal.NAME_HELD_REASON
    assert refusal.classify(held.code, held.message, held.reason).kind is refusal.Kind.WAITING
    told = w.reconcile()
    assert [e.reason for e in told.events].count("FailedCreate") == len(w.refused or ()), "told once"
    assert w.status.last_refusal is not None
    assert w.status.last_refusal.reason == refusal.NAME_HELD_REASON, "kept as a value in the status"
    w.kubelets()  # the old pods stop
    w.tick(60)
    w.settle()
    assert w.state is S.RUNNING
    assert {w.groups.get(p.gang or "") for p in w.pods.values()} == {w.uid}


def test_refusals_of_one_try_are_told_once() -> None:
    w = ganged()
    w.refusing = {naming.replica_name("pt", "Worker", 1): (403, 'pods "x" is forbidden: exceeded quota: q')}
    w.reconcile()
    told = [e for d in (w.reconcile(), w.reconcile()) for e in d.events if e.reason == "FailedCreate"]
    assert len(told) == 1
    assert told[0].message.startswith("Pod pt-worker-1: ")


def test_a_job_another_controller_manages_is_left_alone() -> None:
    w = ganged()
    w.job = attrs.evolve(w.job, spec=attrs.evolve(w.job.spec, managed_by="someone.else/controller"))
    d = w.reconcile()
    assert d == lifecycle.Decision(status=w.job.status)
    assert not w.pods
    assert not w.groups


def test_a_job_multikueue_dispatches_gets_its_workload_with_its_priority_and_nothing_else() -> None:
    policy = v1beta1.SchedulingPolicy(queue="q", priority_class="high")
    job = a_ddp_job(1).with_spec(run_policy=v1beta1.RunPolicy(scheduling_policy=policy)).build()
    job = attrs.evolve(job, spec=attrs.evolve(job.spec, managed_by=workload_.MULTIKUEUE))
    w = World(job, pytorch.FRAMEWORK, kueue="workload")
    w.priorities["high"] = 1000
    d = w.reconcile()
    assert (d.workload, d.priority) == (workload_.Act.CREATE, 1000)
    assert w.workload is not None
    assert not w.pods
    assert w.reconcile().workload is None, "made once"


def test_a_refused_workload_of_a_job_multikueue_dispatches_is_told_once() -> None:
    policy = v1beta1.SchedulingPolicy(queue="q")
    job = a_ddp_job(1).with_spec(run_policy=v1beta1.RunPolicy(scheduling_policy=policy)).build()
    job = attrs.evolve(job, spec=attrs.evolve(job.spec, managed_by=workload_.MULTIKUEUE))
    w = World(job, pytorch.FRAMEWORK, kueue="workload")
    w.refusing = {workload_.name_of("pt", w.uid): (404, "the server could not find the requested resource")}
    w.reconcile()
    assert w.workload is None
    told = [e for _ in range(3) for e in w.reconcile().events if e.reason == "FailedCreate"]
    assert len(told) == 3, "each try's refusal told once"
    assert all("Workload" in e.message for e in told)


def test_a_finished_workload_carries_the_jobs_outcome() -> None:
    policy = v1beta1.SchedulingPolicy(queue="q")
    job = a_ddp_job(1).with_spec(run_policy=v1beta1.RunPolicy(scheduling_policy=policy)).build()
    w = World(job, pytorch.FRAMEWORK, kueue="workload")
    w.reconcile()
    w.admit()
    w.settle()
    w.exit("pt-master-0", 0)
    decisions = [w.reconcile() for _ in range(2)]
    finish = next(d for d in decisions if d.workload is workload_.Act.FINISH)
    ended = next(c for c in w.status.conditions if c.type == C.SUCCEEDED)
    assert finish.finished == lifecycle.Finished(succeeded=True, message=ended.message)
    assert w.workload is not None
    assert w.workload.finished


def test_a_status_the_schema_refuses_ends_the_pass_without_a_retry() -> None:
    w = ganged()

    def refuse(patch: dict[str, object]) -> dict[str, object]:
        raise client.ApiError(422, "Invalid", "status.conditions: Too many")

    w.stored = refuse  # type: ignore[method-assign]
    with pytest.raises(reconcile.TerminalError, match="Too many"):
        w.reconcile()
    assert not w.pods, "nothing acted on a decision that was not stored"
