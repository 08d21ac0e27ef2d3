"""Which work goes first: a running job's change before the first pass of new jobs."""

from __future__ import annotations

import asyncio
from typing import Any

from kubetrain.operator.runtime import client, controller, informer, reconcile, workqueue


class Nothing:
    async def reconcile(self, request: reconcile.Request) -> reconcile.Result:
        return reconcile.Result()


def _job(name: str, generation: int = 1) -> dict[str, Any]:
    return {"metadata": {"namespace": "ns", "name": name, "generation": generation, "resourceVersion": "1"}}


def _pod(job: str) -> dict[str, Any]:
    ref = {"kind": "TrainingJob", "name": job, "controller": True}
    return {"metadata": {"namespace": "ns", "name": f"{job}-worker-0", "ownerReferences": [ref]}}


def _controller() -> tuple[controller.Controller, informer.Informer, informer.Informer]:
    jobs = informer.Informer(None, client.TRAININGJOBS)  # type: ignore[arg-type]  # never started
    pods = informer.Informer(None, client.PODS)  # type: ignore[arg-type]
    ctl = controller.Controller("t", Nothing(), jobs, [controller.OwnedKind(pods, "TrainingJob")])
    return ctl, jobs, pods


def _drain(queue: workqueue.WorkQueue[reconcile.Request]) -> list[str]:
    out = []
    while (r := queue.get_nowait()) is not None:
        out.append(r.name)
        queue.done(r)
    return out


def test_a_running_jobs_pod_change_goes_before_new_jobs_first_passes() -> None:
    ctl, jobs, pods = _controller()
    jobs.synced.set()
    pods.synced.set()
    for i in range(3):
        jobs._notify("ADDED", _job(f"new-{i}"), None)
    pods._notify("MODIFIED", _pod("running"), _pod("running"))
    assert _drain(ctl.queue) == ["running", "new-0", "new-1", "new-2"]


def test_a_spec_change_goes_before_first_passes_and_a_status_change_is_not_queued() -> None:
    ctl, jobs, pods = _controller()
    jobs.synced.set()
    pods.synced.set()
    jobs._notify("ADDED", _job("new"), None)
    jobs._notify("MODIFIED", _job("edited", 2), _job("edited", 1))
    jobs._notify("MODIFIED", _job("status-only", 1), _job("status-only", 1))
    assert _drain(ctl.queue) == ["edited", "new"]


def test_what_the_initial_lists_bring_waits_behind_changes_seen_after_them() -> None:
    ctl, jobs, pods = _controller()
    jobs._notify("ADDED", _job("listed"), None)
    pods._notify("ADDED", _pod("listed-too"), None)  # the pod informer's initial list
    pods.synced.set()
    jobs.synced.set()
    pods._notify("MODIFIED", _pod("changed"), _pod("changed"))
    assert _drain(ctl.queue) == ["changed", "listed", "listed-too"]


def test_a_key_added_higher_while_processing_is_queued_again_at_that_priority() -> None:
    queue: workqueue.WorkQueue[str] = workqueue.WorkQueue()
    queue.add("a", workqueue.LOW)
    assert queue.get_nowait() == "a"
    queue.add("b", workqueue.LOW)
    queue.add("a", workqueue.NORMAL)  # while a worker holds it
    queue.done("a")
    assert [queue.get_nowait(), queue.get_nowait()] == ["a", "b"]


def test_an_owned_kind_limited_to_some_events_wakes_its_owner_on_those_and_the_initial_list() -> None:
    jobs = informer.Informer(None, client.TRAININGJOBS)  # type: ignore[arg-type]
    services = informer.Informer(None, client.SERVICES)  # type: ignore[arg-type]
    owned = controller.OwnedKind(services, "TrainingJob", events={"DELETED"})
    ctl = controller.Controller("t", Nothing(), jobs, [owned])
    services._notify("ADDED", _pod("listed"), None)  # the initial list: every owner gets a pass
    services.synced.set()
    services._notify("ADDED", _pod("made"), None)
    services._notify("MODIFIED", _pod("made"), _pod("made"))
    services._notify("DELETED", _pod("deleted"), _pod("deleted"))
    assert _drain(ctl.queue) == ["deleted", "listed"]


class Answers:
    """Answers each pass with the next of ``results``."""

    def __init__(self, *results: reconcile.Result) -> None:
        self.results = list(results)

    async def reconcile(self, request: reconcile.Request) -> reconcile.Result:
        return self.results.pop(0)


def test_a_pass_sets_the_one_time_its_key_is_looked_at_again() -> None:
    # A job held for minutes and then written for another reason must not be passed over
    # again minutes later for nothing: ten thousand such timers kept an idle operator busy.
    jobs = informer.Informer(None, client.TRAININGJOBS)  # type: ignore[arg-type]
    answers = Answers(
        reconcile.Result(requeue_after=300), reconcile.Result(), reconcile.Result(requeue_after=3)
    )
    ctl = controller.Controller("t", answers, jobs, [])
    key = reconcile.Request("ns", "job")
    for pending in ({key}, set(), {key}):
        asyncio.run(ctl._process(key))
        assert ctl.queue.pending() == pending
