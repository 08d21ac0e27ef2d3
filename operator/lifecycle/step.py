"""The step itself: one look at a job in, one :class:`~.values.Decision` out.

:func:`step` reads an :class:`~.values.Input` (or an :class:`~.values.Invalid` job) and never
talks to a cluster. The order of its parts, and why, is told in :mod:`kubetrain.operator.lifecycle`.
"""

from __future__ import annotations

import datetime
import functools
from collections.abc import Mapping
from typing import Any

import attrs

from kubetrain.api import naming, observed, v1beta1
from kubetrain.operator import conditions, tensorboard
from kubetrain.operator.lifecycle import around, invalid, refusals, stops, tally
from kubetrain.operator.lifecycle.refusals import DEFAULT_REFUSAL_GRACE_SECONDS
from kubetrain.operator.lifecycle.values import Decision, Delete, Event, Input, Invalid, Move
from kubetrain.operator.policies import (
    admission,
    avoid,
    backoff,
    budget,
    checkpoint,
    classify,
    cleanup,
    creation,
    deadline,
    failure,
    goodput,
    inplace,
    placement,
    progress,
    success,
    ttl,
    vanished,
)
from kubetrain.operator.scheduling import gang, kueue_pods
from kubetrain.operator.scheduling import workload as workload_

__all__ = ["DEFAULT_REFUSAL_GRACE_SECONDS", "step"]

S = v1beta1.JobState
C = v1beta1.ConditionType
Action = v1beta1.FailureAction


def step(inp: Input | Invalid) -> Decision:
    """The new status, and what to do, for one look at a job."""
    if isinstance(inp, Invalid):
        return invalid.reject(inp)
    if inp.spec.manager not in (None, naming.MANAGER_NAME):
        return around.elsewhere(inp)
    return around.paced(inp, _Step(inp).run())


_WARNING_CONDITIONS = {C.FAILED, C.RESTARTING, C.REPLICA_FAILURE}
# The normal course is told by the status alone (``kubectl get`` shows the state, ``describe``
# the conditions): an Event for each of these would be two writes per job that say nothing new.
# Events are kept for what a user acts on or looks back at: failures, restarts, refusals,
# scheduling trouble, suspension, and the outcome.
_QUIET_CONDITIONS = {C.CREATED, C.RUNNING}


class _Step(refusals.Refusals, stops.Stops):
    def __init__(self, inp: Input) -> None:
        self.inp, self.now, self.spec = inp, inp.now, inp.spec
        prev = inp.status
        self.keys = {k.lower(): k for k in self.spec.replica_specs}
        self.replicas = {k: s.replicas for k, s in self.spec.replica_specs.items()}
        if inp.admission:
            self.replicas = admission.admitted(self.replicas, inp.workload)
        replicas = {k: prev.replica_statuses.get(k, v1beta1.ReplicaStatus()) for k in self.spec.replica_specs}
        self.attempts = {k: r.attempt for k, r in replicas.items()}
        self.in_place = {k: r.in_place for k, r in replicas.items()}
        self.conditions = prev.conditions
        self.counts = prev.restarts
        self.history = list(prev.failures)
        self.recorded = len(self.history)  # where this step's failure records begin
        self.counted = {c.uid: c for c in prev.counted_failures}
        self.avoided = prev.avoided_nodes
        self.start_time, self.completion_time = prev.start_time, prev.completion_time
        gone = vanished.pods(inp.name, prev, self.replicas, inp.pods, self.counted, inp.made)
        self.pods = sorted([*inp.pods, *gone], key=lambda p: (p.replica_type, p.index, p.name, p.uid))
        self.deletes: dict[str, Delete] = {}
        self.moves: dict[str, Move] = {}
        self.opens: list[Move] = []
        self.closed = False  # pods made now are made closed: moving pods are not opened yet
        self.creates: list[tuple[str, int]] = []
        self.events: list[Event] = []
        self.dues: list[datetime.datetime] = []
        self.delete_job = False
        self.refused_since: datetime.datetime | None = None  # creates are being refused since
        self.last_refusal = prev.last_refusal
        self.progress = prev.progress
        self.checkpoint = prev.checkpoint
        self.ask: tuple[int, tuple[str, ...]] | None = None
        self.foreseen = False  # a stop is seen coming (a checkpoint request may wait for it)
        self.workload: workload_.Act | None = None

    # --- the step ------------------------------------------------------------------------

    def run(self) -> Decision:
        self._report()
        self._tell_refusals()
        if self._finished():
            self._finish_up()
            return self._decision()
        self._created()
        if self.spec.run_policy.suspend:
            if not self._is(C.SUSPENDED) and self._checkpoint_first(
                v1beta1.StopReason.SUSPENDED, self._live()
            ):
                return self._decision()
            self._suspend("Suspended", "the job is suspended; its pods are deleted")
            if self.inp.admission:
                self.workload = admission.on_suspend(
                    self.inp.workload, pods_left=self._pods_left(), prebuilt=self.inp.prebuilt is not None
                )
            return self._decision()
        if self._not_admitted():
            return self._decision()
        self._resume()
        if self._succeeded() or self._out_of_time() or self._not_placed_in_time():
            return self._decision()
        restarts = self._account()
        if self._finished():
            return self._decision()
        self._restart(restarts)
        if self._refused_for_good():
            return self._decision()
        self._leave_noticed_nodes()
        self._unblock()
        self._delete_stale_and_surplus()
        self._open_moved()
        self._force_overdue()
        self._create_missing()
        self._running(restarted=bool(restarts))
        self._show_placement()
        return self._decision()

    # --- pods ------------------------------------------------------------------------------

    def _key(self, pod: observed.Pod) -> str | None:
        key = self.keys.get(pod.replica_type)
        return key if key is not None and pod.index < self.replicas[key] else None

    def _current(self, pod: observed.Pod) -> bool:
        key = self._key(pod)
        return key is not None and pod.attempt >= self.attempts[key]

    def _live(self) -> list[observed.Pod]:
        return [p for p in self.pods if not p.gone]

    def _mark(self, pod: observed.Pod, **charged: Any) -> None:
        """Remember what of ``pod``'s failures is charged (``count`` crashes, ``hung_time``,
        ``held_signal``: v1beta1.CountedFailures)."""
        old = self.counted.get(pod.uid) or v1beta1.CountedFailures(pod=pod.name, uid=pod.uid)
        self.counted[pod.uid] = attrs.evolve(old, **charged)

    def _delete(self, pod: observed.Pod, *, force: bool = False) -> None:
        if pod.gone or (pod.deleted is not None and not force):
            return
        self.deletes[pod.name] = Delete(pod=pod.name, uid=pod.uid, force=force)

    # --- conditions ------------------------------------------------------------------------

    def _is(self, ctype: v1beta1.ConditionType) -> bool:
        return conditions.is_true(self.conditions, ctype)

    def _set(self, ctype: v1beta1.ConditionType, status: bool, why: str, message: str) -> None:
        flips = status and not self._is(ctype)
        self.conditions = conditions.set_status(
            self.conditions, ctype, status, why, message, self.now, self.inp.generation
        )
        if flips and ctype not in _QUIET_CONDITIONS:
            kind = "Warning" if ctype in _WARNING_CONDITIONS else "Normal"
            self.events.append(Event(type=kind, reason=conditions.reason(why), message=message))

    def _clear(self, *ctypes: v1beta1.ConditionType, why: str, message: str) -> None:
        for ctype in ctypes:
            if self._is(ctype):
                self._set(ctype, False, why, message)

    # --- steps -----------------------------------------------------------------------------

    def _finished(self) -> bool:
        return self._is(C.SUCCEEDED) or self._is(C.FAILED)

    def _finish(self, ctype: v1beta1.ConditionType, why: str, message: str) -> None:
        self._clear(C.RUNNING, C.RESTARTING, why=why, message=message)
        self._set(ctype, True, why, message)
        self.completion_time = self.now
        self._finish_up()

    def _finish_up(self) -> None:
        if self.inp.admission:
            self.workload = admission.on_finish(self.inp.workload)
        for pod in cleanup.to_delete(self.spec.run_policy.clean_pod_policy, self._live()):
            self._delete(pod)
        self._force_overdue()
        expiry = ttl.expires_at(self.completion_time, self.spec.run_policy.ttl_seconds_after_finished)
        if expiry is not None:
            if self.now >= expiry:
                self.delete_job = True
            else:
                self.dues.append(expiry)

    def _created(self) -> None:
        if not self.inp.status.conditions:
            self._set(C.CREATED, True, "TrainingJobCreated", f"TrainingJob {self.inp.name} was created")

    def _suspend(self, why: str, message: str) -> None:
        """Keep no pods, spend nothing: suspended by the user, or held by Kueue (``why``)."""
        if not self._is(C.SUSPENDED):
            # A new attempt: the pods deleted now are stale, so their end is not a failure.
            self._new_attempt(self.attempts)
            # Nothing is created while suspended: a refusal's clock starts again on resume.
            self._clear(C.RUNNING, C.RESTARTING, C.REPLICA_FAILURE, why=why, message=message)
            self.start_time = None
        old = next((c for c in self.conditions if c.type == C.SUSPENDED), None)
        if old is None or not old.is_true() or (old.reason, old.message) != (why, message):
            self._set(C.SUSPENDED, True, why, message)
        for pod in self._live():
            self._delete(pod)
        self._force_overdue()

    def _not_admitted(self) -> bool:
        """Whether Kueue holds the job (the Workload route): suspended, uncharged, until admitted."""
        if not self.inp.admission:
            return False
        policy = self.spec.run_policy.scheduling_policy
        queue = policy.queue or "" if policy is not None else ""
        seen = self.inp.workload
        adopting = admission.adopt(seen)  # MultiKueue's Workload, taken first: the rest waits a pass
        held = admission.hold(seen, queue=queue, pods_left=self._pods_left(), prebuilt=self.inp.prebuilt)
        if held is None:
            self.workload = adopting
            return False
        if not self._is(C.SUSPENDED) and self._checkpoint_first(v1beta1.StopReason.EVICTED, self._live()):
            return True  # its pods stay until it has checkpointed, or its grace is over
        self._suspend(held.reason, held.message)
        if adopting is not None or held.act is not workload_.Act.CREATE:
            self.workload = adopting or held.act
        elif not self._refused_for_good(held=True) and not self._refusal_waits():
            self.workload = held.act
            if self.last_refusal is not None:
                self.last_refusal = attrs.evolve(self.last_refusal, time=self.now)
        return True

    def _resume(self) -> None:
        if self._is(C.SUSPENDED):
            seen = self.inp.workload
            why, message = admission.resumed(seen) if seen is not None else ("Resumed", "the job is resumed")
            self._set(C.SUSPENDED, False, why, message)
        if self.start_time is None:
            self.start_time = self.now

    def _succeeded(self) -> bool:
        done = {
            (key, p.index)
            for p in self._live()
            if p.phase == "Succeeded"
            and self._current(p)
            and not p.moving
            and (key := self._key(p)) is not None
        }
        why = success.met(self.spec.success_policy or self.inp.defaults.success, done, self.replicas)
        if why is None:
            return False
        self._finish(C.SUCCEEDED, "SuccessPolicyMet", why)
        return True

    def _out_of_time(self) -> bool:
        until = deadline.active_until(self.start_time, self.spec.run_policy.active_deadline_seconds)
        if until is None:
            return False
        if self.now < until:
            self._before_deadline(until)
            self.dues.append(until)
            return False
        seconds = self.spec.run_policy.active_deadline_seconds
        self._finish(C.FAILED, "DeadlineExceeded", f"the job was active longer than {seconds}s")
        return True

    def _placement(self) -> placement.Placement | None:
        pods = [
            p for p in self._live() if self._current(p) and p.deleted is None and p.name not in self.deletes
        ]
        policy = self.spec.run_policy.scheduling_policy
        return placement.assess(pods, policy.queue if policy else None)

    def _not_placed_in_time(self) -> bool:
        policy = self.spec.run_policy.scheduling_policy
        seen = self._placement()
        at = placement.give_up_at(seen, policy.schedule_timeout_seconds if policy else None)
        if at is None:
            return False
        if self.now < at:
            self.dues.append(at)
            return False
        assert seen is not None
        assert policy is not None
        message = (
            f"not placed within scheduleTimeoutSeconds ({policy.schedule_timeout_seconds}s): {seen.message}"
        )
        self._set(C.SCHEDULED, False, seen.reason, seen.message)
        self._finish(C.FAILED, "ScheduleTimeout", message)
        return True

    def _show_placement(self) -> None:
        """The Scheduled condition: shown once the scheduler could not place a pod."""
        seen = self._placement()
        if seen is None or (seen.placed and not any(c.type == C.SCHEDULED for c in self.conditions)):
            return
        old = next((c for c in self.conditions if c.type == C.SCHEDULED), None)
        if not seen.placed and (old is None or old.reason != seen.reason):
            kind = "Warning" if seen.reason == placement.UNSCHEDULABLE else "Normal"
            self.events.append(Event(type=kind, reason=seen.reason, message=seen.message))
        self._set(C.SCHEDULED, seen.placed, seen.reason, seen.message)

    def _account(self) -> list[tuple[observed.Pod, classify.Failure, failure.Verdict]]:
        """Charge and record every failure not counted yet; the restarts they ask for.

        Once a failure restarts a replica type (or the job), the other failures of its pods seen
        in the same step are the old attempt's, as a stale pod's end is: when a rank dies its
        peers crash too, and one restart is charged once. A failure that fails the job still does.
        """
        restarts = []
        restarting: set[str] = set()  # replica types a failure seen in this step restarts already
        fp = self.spec.failure_policy
        for pod in self.pods:
            key = self._key(pod)
            if key is None or not self._current(pod) or pod.moving:
                continue  # a moving pod's end is the old attempt's, as a stale pod's is
            container = self.inp.defaults.containers.get(key, "")
            counted = self.counted.get(pod.uid)
            seen = counted.count if counted is not None else 0
            if (pod.restarted_in_place or inplace.says_its_ends(pod)) and pod.crashes > seen:
                # The kubelet counts a restart in place as one more restart of each container,
                # when it kills them and again as it starts them: none is a failure. A pod whose
                # ends its agent says counts them so (classify.held).
                seen = pod.crashes
                self._mark(pod, count=seen)
            due = classify.image_pull_due(pod, fp.image_pull_grace_seconds)
            if due is not None and due > self.now:
                self.dues.append(due)
            found = classify.new_failures(
                pod, seen, container=container, now=self.now, image_pull_grace=fp.image_pull_grace_seconds
            )
            found += classify.held(pod, counted.held_signal if counted else None, container=container)
            if self.spec.progress is not None and self.spec.progress.deadline_seconds is not None:
                hung = counted.hung_time if counted else None
                found += classify.hang(pod, hung, grace=self.spec.progress.startup_grace)
            for f in found:
                v = failure.verdict(
                    f,
                    replica_type=key,
                    rules=fp.rules,
                    restart_policy=self.spec.replica_specs[key].restart_policy
                    or self.inp.defaults.restart_policy,
                    scope=fp.restart_scope or self.inp.defaults.restart_scope,
                    container=container,
                )
                if key in restarting and v.action in (Action.RESTART, Action.RESTART_UNCHARGED):
                    continue
                self.counts, over = budget.charge(
                    self.counts,
                    action=v.action,
                    failure_class=f.failure_class,
                    budget=budget.budget_of(self.spec, f.failure_class),
                    history=self.history,
                    replica=(key, pod.index),
                    now=self.now,
                )
                action = Action.FAIL_JOB if over else v.action
                if f.hung:
                    self._mark(pod, hung_time=pod.hung_at)
                elif f.held:
                    self._mark(pod, held_signal=pod.held_signal)
                else:
                    seen += 1
                    self._mark(pod, count=seen)
                self.history.append(failure.record(pod, key, f, v, action, self.now))
                if avoid.tied_to_node(f, rule_says=v.avoid_node):
                    self.avoided = avoid.remember(self.avoided, f, self.now)
                what = failure.describe(pod, key, f, v, action)
                self.events.append(Event(type="Warning", reason="PodFailed", message=what))
                if action is Action.FAIL_JOB:
                    self._finish(C.FAILED, over or v.reason, what)
                    return []
                if action in (Action.RESTART, Action.RESTART_UNCHARGED):
                    restarts.append((pod, f, v))
                    restarting |= self._restarted_with(key, f, v)
        return restarts

    def _restarted_with(self, key: str, f: classify.Failure, v: failure.Verdict) -> set[str]:
        """The replica types a restart for this failure of a ``key`` pod moves to a new attempt."""
        alone = (
            key == self.inp.defaults.rank_launcher and self._made_in_place() and inplace.restartable(f.pod)
        )
        return failure.restarted_types(key, f, v.scope, self.replicas, queued=self.inp.queued, alone=alone)

    def _restart(self, restarts: list[tuple[observed.Pod, classify.Failure, failure.Verdict]]) -> None:
        gang: set[str] = set()
        for pod, f, v in restarts:
            key = self._key(pod)
            assert key is not None
            together = self._restarted_with(key, f, v)
            gang |= together
            if not together and (not f.in_place or pod.held):
                self._delete(pod)  # a Pod restart (a pod held at its barrier is made again)
        in_place = self.spec.failure_policy.restart_method is v1beta1.RestartMethod.IN_PLACE and any(
            inplace.restartable(p) for p in self._live() if self._key(p) in gang
        )
        if gang:
            self._new_attempt({k: self.attempts[k] for k in gang}, in_place=in_place)
        # Say how each restart asked for in this step is carried out: a Pod restart by the kubelet
        # (in place) or by making the pod again.
        kubelet = {p.name for p, f, _ in restarts if f.in_place}
        for i in range(self.recorded, len(self.history)):
            r = self.history[i]
            if r.action in (Action.RESTART, Action.RESTART_UNCHARGED):
                how = in_place if r.replica_type in gang else r.pod in kubelet
                self.history[i] = attrs.evolve(r, restart=_METHOD[how])
        if restarts:
            pod, f, v = restarts[-1]
            where = " in place" if in_place else ""
            self._clear(C.RUNNING, why=v.reason, message=f"restarting after {pod.name} failed")
            self._set(
                C.RESTARTING,
                True,
                v.reason,
                f"{failure.scope_text(v.scope, pod)}{where} after {pod.name} failed",
            )

    def _new_attempt(self, keys: Mapping[str, int], *, in_place: bool = False) -> None:
        attempt = max(self.attempts.values(), default=0) + 1
        for key in keys:
            self.attempts[key] = attempt
            self.in_place[key] = in_place

    def _keep_off(self) -> frozenset[str]:
        return avoid.wanted(self.avoided, self.inp.unhealthy | self.inp.noticed)

    def _unblock(self) -> None:
        """Let the avoided nodes go if keeping off them leaves a pod unplaceable, and make again
        each such pod that keeps off a node no longer kept off (its end is not a failure)."""
        stuck = avoid.blocked(p for p in self._live() if self._current(p))
        if not stuck:
            return
        why = avoid.release(self.avoided, stuck)
        if why is not None:
            self.avoided = ()
            self.events.append(Event(type="Normal", reason="AvoidedNodesReleased", message=why))
        wanted = self._keep_off()
        for pod in stuck:
            key = self._key(pod)
            assert key is not None
            own = observed.avoided_nodes(self.spec.replica_specs[key].template.get("spec") or {})
            if pod.avoiding - wanted - own:
                self._mark(pod, count=pod.crashes + 1)
                self._delete(pod)

    def _delete_stale_and_surplus(self) -> None:
        """Delete the pods of older attempts and of indexes scaled away — or move them to their
        type's attempt where they are, if it began as a restart in place and they can."""
        surplus = [p for p in self._live() if p.replica_type in self.keys and self._key(p) is None]
        waits = self._scaled_down_waits(surplus)
        for pod in self._live():
            if self._current(pod) or (waits and pod in surplus):
                continue
            key = self._key(pod)
            if key is not None and self.in_place[key] and inplace.restartable(pod):
                self.moves[pod.name] = Move(pod=pod.name, uid=pod.uid, attempt=self.attempts[key])
                self._old_ends(pod)
            else:
                self._delete(pod)

    def _open_moved(self) -> None:
        """Let the pods moved in place start their attempt once none of the old one runs; make
        again those that cannot restart in place, or have not stopped in time."""
        moving = [p for p in self._live() if self._current(p) and p.moving]
        if not moving:
            return
        due = inplace.stop_due(self._last_restart())
        late = [p for p in moving if p.name not in self.deletes and inplace.fall_back(p, due, self.now)]
        for pod in late:
            self._delete(pod)
            self.events.append(
                Event(
                    type="Warning",
                    reason="InPlaceRestartFellBack",
                    message=f"{pod.name} did not restart in place in time, or cannot: it is made again",
                )
            )
        waiting = [p for p in moving if p not in late and not p.deleting and p.name not in self.deletes]
        # Pods going (made again) may still run a container of the old attempt too, and pods made
        # meanwhile wait at their barrier; a restart in place waits out the restart backoff, as
        # making pods again does.
        held = not inplace.may_open(moving, stale=self._old_may_run()) or self._backing_off
        if held:
            self.closed = True
            if due is not None and any(p.running for p in waiting):
                self.dues.append(due)
        if held or not waiting:
            return
        for pod in waiting:
            self.opens.append(Move(pod=pod.name, uid=pod.uid, attempt=pod.attempt))
            self._old_ends(pod)

    def _old_ends(self, pod: observed.Pod) -> None:
        """What a pod moving to a new attempt shows of the old one is none of the new one's failures:
        the kubelet's counts of its restart in place, its agent's word that the old attempt ended."""
        if pod.crashes:
            self._mark(pod, count=pod.crashes)
        if pod.held_signal is not None:
            self._mark(pod, held_signal=pod.held_signal)

    def _made_in_place(self) -> bool:
        """Whether pods made now carry the agent and barrier that restart them in place."""
        return self.spec.failure_policy.restart_method is v1beta1.RestartMethod.IN_PLACE and self.inp.in_place

    @functools.cached_property
    def _backing_off(self) -> bool:
        """Whether the restart backoff still holds the next attempt back (and when to look again).
        Read once the step's failures are charged, by moved pods and by new ones alike."""
        due = backoff.due(self.spec.failure_policy.restart_backoff, self.counts.total, self._last_restart())
        if due is not None and self.now < due:
            self.dues.append(due)
            return True
        return False

    def _last_restart(self) -> datetime.datetime | None:
        return max(
            (r.time for r in self.history if r.action in (Action.RESTART, Action.RESTART_UNCHARGED)),
            default=None,
        )

    def _force_overdue(self) -> None:
        for pod in self._live():
            at = deadline.force_delete_at(pod, self.spec.failure_policy.termination_deadline_seconds)
            if at is None:
                continue
            if self.now >= at:
                self._delete(pod, force=True)
            else:
                self.dues.append(at)

    def _old_may_run(self) -> bool:
        """Whether a pod of an older attempt may still run: one seen, or one this process made
        that its caches do not show yet, whose attempt it cannot tell (a suspension or restart
        since may have left it behind)."""
        return bool(self.inp.made) or any(not self._current(p) for p in self._live())

    def _pods_left(self) -> bool:
        """Whether a pod of the job is left, or may be: made by this process, not seen yet."""
        return bool(self.inp.made or self._live())

    def _create_missing(self) -> None:
        live = self._live()
        if self._old_may_run():
            return  # a new attempt starts only when the old one is gone entirely
        if self.closed and not self._made_in_place():
            return  # or, while moved pods still run it, when a new pod can wait at a barrier
        if self._refusal_waits():
            return
        if self._backing_off:
            return
        names = {p.name for p in live} | self.inp.made
        ready = {(self._key(p), p.index) for p in live if p.ready and p.deleted is None}
        for key, count in self.replicas.items():
            if not all(
                (t, i) in ready
                for t in self.inp.defaults.start_after.get(key, ())
                for i in range(self.replicas[t])
            ):
                continue  # its peers are not ready yet
            for i in range(count):
                if naming.replica_name(self.inp.name, key, i) not in names:
                    self.creates.append((key, i))
        if self.creates and self.last_refusal is not None:
            # Tried again now: the backoff counts from this try, after a restart of the operator
            # too (a try that gets through clears the refusal at the next step).
            self.last_refusal = attrs.evolve(self.last_refusal, time=self.now)

    def _running(self, *, restarted: bool) -> None:
        if restarted or self.creates:
            return
        up = {
            (key, p.index)
            for p in self._live()
            if (key := self._key(p)) is not None
            and self._current(p)
            and p.deleted is None
            and not p.moving
            and (p.phase == "Succeeded" or (p.phase == "Running" and "CrashLoopBackOff" not in p.waiting))
        }
        if len(up) < sum(self.replicas.values()):
            return
        if self._is(C.RESTARTING):
            self._set(C.RESTARTING, False, "Restarted", "every replica is running again")
        if not self._is(C.RUNNING):
            self._set(C.RUNNING, True, "Running", "every replica is running")

    def _report(self) -> None:
        """Take in the first rank's progress read since the last look."""
        if self.inp.progress is not None:
            self.progress = progress.update(self.progress, self.inp.progress, self.now)
            self.checkpoint = checkpoint.seen(self.checkpoint, self.progress, self.now)

    # --- the result ------------------------------------------------------------------------

    def _decision(self) -> Decision:
        self._drop_unforeseen()
        observed_uids = {p.uid for p in self.pods}
        joining = gang.joining(
            self.creates, self.attempts, [p for p in self.pods if self._key(p) is not None]
        )
        status = v1beta1.TrainingJobStatus(
            state=v1beta1.state_of(self.conditions),
            conditions=self.conditions,
            replica_statuses=self._replica_statuses(),
            start_time=self.start_time,
            completion_time=self.completion_time,
            restarts=self.counts,
            failures=tuple(self.history[-v1beta1.status_types.MAX_FAILURE_HISTORY :]),
            counted_failures=tuple(c for uid, c in self.counted.items() if uid in observed_uids),
            observed_generation=self.inp.generation,
            tensorboard=tensorboard.status(self.inp.name, self.inp.namespace, self.spec),
            avoided_nodes=self.avoided,
            last_refusal=self.last_refusal,
            progress=self.progress,
            runtime=self.spec.runtime_ref,
            checkpoint=self.checkpoint,
        )
        # The wall time since the last accounting, charged to what the job did meanwhile
        # (checkpointing: a request was outstanding in the status the step began with).
        accounted = goodput.account(
            self.inp.status,
            status,
            progress=self.spec.progress,
            created=self.inp.created,
            now=self.now,
            checkpointing=self.inp.status.checkpoint is not None
            and self.inp.status.checkpoint.requested is not None,
        )
        status = attrs.evolve(status, goodput=accounted.status)
        self.dues.extend(accounted.dues)
        later = [d for d in self.dues if d > self.now]
        return Decision(
            status=status,
            create=tuple(self.creates),
            delete=tuple(self.deletes.values()),
            delete_job=self.delete_job,
            events=tuple(self.events),
            requeue_after=min((d - self.now).total_seconds() for d in later) if later else None,
            tensorboard=tensorboard.missing(self.spec, present=self.inp.tensorboard, ended=self._finished()),
            delete_services=tuple(cleanup.surplus_services(self.spec, self.inp.services)),
            release=self._released(),
            joining=joining,
            keep_off=tuple(sorted(self._keep_off())) if self.creates else (),
            move=tuple(self.moves.values()),
            open=tuple(self.opens),
            in_place=bool(self.creates) and self._made_in_place(),
            closed=self.closed and bool(self.creates),
            workload=self.workload,
            assigned=workload_.assigned(self.inp.workload, self.creates) if self.inp.admission else {},
            priority=self.inp.priority if self.workload is workload_.Act.CREATE else None,
            finished=around.outcome(self.conditions) if self.workload is workload_.Act.FINISH else None,
            ask=self.ask,
            batches=creation.batches(len(self.creates)),
            **around.groups(
                self.inp,
                creates=self.creates,
                attempts=self.attempts,
                joining=joining,
                live=self._live(),
                finished=self._finished(),
            ),
        )

    def _released(self) -> tuple[str, ...]:
        if not self.inp.queued:
            return ()
        return kueue_pods.released(self._live(), finished=self._finished(), current=self._current)

    def _replica_statuses(self) -> dict[str, v1beta1.ReplicaStatus]:
        current: dict[str, list[observed.Pod]] = {key: [] for key in self.spec.replica_specs}
        for p in self._live():
            if (key := self._key(p)) is not None and self._current(p):
                current[key].append(p)
        return tally.replica_statuses(self.inp.name, current, self.attempts, self.in_place, set(self.deletes))


_METHOD = {True: v1beta1.RestartMethod.IN_PLACE, False: v1beta1.RestartMethod.RECREATE}
