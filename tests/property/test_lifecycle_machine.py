"""The failure semantics under random histories: hypothesis drives a simulated cluster.

Each example is a random job (framework, restart policies, budgets, rules, scope,
cleanup, deadline) and a random sequence of what happens to its pods — exits with any
code, kubelet restarts, hangs their agents report (at any time), the first rank's progress,
evictions, lost nodes, pods vanishing, time passing, suspend and
resume (and a rescale while suspended), an apiserver that refuses creates for a while, nodes
that turn unhealthy and well again, a cache that lags behind the pods just created, a stored
spec that stops being valid, an operator that restarts (dropping everything it remembered) and
pods that go while it is not watching, and Kueue admitting (whole or with fewer Workers) and
evicting a job's Workload — interleaved with reconciles. After every reconcile the
invariants below must hold, including those of what the step decides around the job's own
course: pacing holds only counts, queued pods are released exactly when the job is done with
them, only Services past the counts are deleted, an invalid job fails once, a pod that went
unseen while recorded active is charged once before its index is made again, and a node that
failed a pod is kept off (boundedly) without ever stranding one. :class:`~testkit.world.World`
also fails if a pod name is ever created twice.
"""

from __future__ import annotations

import datetime
from typing import Any

import attrs
from hypothesis import event
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule
from testkit.builders import a_job
from testkit.world import T0, World

from kubetrain.api import meta, naming, observed, v1beta1, validation
from kubetrain.operator import conditions, lifecycle
from kubetrain.operator.frameworks import mpi, pytorch, tensorflow
from kubetrain.operator.policies import avoid, budget, goodput, inplace, pacing, refusal
from kubetrain.operator.scheduling import backend, gang, native
from kubetrain.operator.scheduling import workload as workload_

S = v1beta1.JobState
C = v1beta1.ConditionType
FINAL = {S.SUCCEEDED, S.FAILED}
M = v1beta1.RestartMethod
EXIT_CODES = st.sampled_from([0, 0, 0, 1, 2, 42, 74, 127, 128, 130, 137, 137, 143, 255])
# How long before the World's clock starts the job was created (its goodput counts from then).
CREATED = datetime.timedelta(seconds=45)
# Disruptions and suspensions act one time in RARELY, so that jobs also get to finish.
RARELY = 4
POLICIES = st.sampled_from(v1beta1.RestartPolicy)
RULES = (
    v1beta1.FailureRule(
        name="oom", action=v1beta1.FailureAction.RESTART_UNCHARGED, on_reasons=("OOMKilled",)
    ),
    v1beta1.FailureRule(
        name="sigterm",
        action=v1beta1.FailureAction.RESTART,
        on_exit_codes=v1beta1.ExitCodeMatch(ranges=(v1beta1.ExitCodeRange(min=143),)),
        restart_scope=v1beta1.RestartScope.POD,
    ),
    v1beta1.FailureRule(
        name="config", action=v1beta1.FailureAction.FAIL_JOB, on_exit_codes=v1beta1.ExitCodeMatch(values=(2,))
    ),
    v1beta1.FailureRule(
        name="device",
        action=v1beta1.FailureAction.RESTART,
        on_exit_codes=v1beta1.ExitCodeMatch(values=(74,)),
        avoid_node=True,
    ),
    v1beta1.FailureRule(
        name="infra",
        action=v1beta1.FailureAction.TOLERATE,
        on_failure_class=v1beta1.FailureClass.INFRASTRUCTURE,
        on_pod_conditions=("DisruptionTarget",),
    ),
)
limits = st.none() | st.integers(0, 4)
REFUSALS = st.sampled_from(
    [
        (403, 'pods "p" is forbidden: exceeded quota: q'),
        (403, 'pods "p" is forbidden: error looking up service account ns/sa: serviceaccount "sa" not found'),
        (403, 'pods "p" is forbidden: violates PodSecurity "restricted:latest"'),
        (422, 'Pod "p" is invalid: spec.containers[0].image: Required value'),
    ]
)


@st.composite
def jobs(draw: st.DrawFn) -> tuple[v1beta1.TrainingJob, Any]:
    fw = draw(st.sampled_from([pytorch.FRAMEWORK, tensorflow.FRAMEWORK, mpi.FRAMEWORK]))
    b = a_job("j").framework(fw.name)
    types = {
        # MPI: the launcher starts every rank; restarted in place, it restarts alone.
        "mpi": [("Launcher", 1), ("Worker", draw(st.integers(1, 2)))],
        "pytorch": [("Master", 1), ("Worker", draw(st.integers(1, 3)))],
        "tensorflow": [("Chief", 1), ("Worker", draw(st.integers(0, 2))), ("PS", draw(st.integers(0, 1)))],
    }[fw.name]
    for t, n in types:
        b.replicas(t, n, restart_policy=draw(st.none() | POLICIES))
    failure_policy = v1beta1.FailurePolicy(
        rules=tuple(draw(st.lists(st.sampled_from(RULES), unique_by=lambda r: r.name, max_size=3))),
        restart_scope=draw(st.none() | st.sampled_from(v1beta1.RestartScope)),
        # In place half the time: its moves and openings need a restart of a running gang.
        restart_method=draw(st.sampled_from([None, M.RECREATE, M.IN_PLACE, M.IN_PLACE])),
        budgets=v1beta1.Budgets(infrastructure=v1beta1.Budget(limit=draw(limits))),
        termination_deadline_seconds=draw(st.none() | st.integers(0, 90)),
        refusal_grace_seconds=draw(st.none() | st.integers(0, 600)),
    )
    scheduling = v1beta1.SchedulingPolicy(
        queue=draw(st.none() | st.just("q")),
        schedule_timeout_seconds=draw(st.none() | st.integers(1, 600)),
    )
    run_policy = v1beta1.RunPolicy(
        scheduling_policy=draw(st.none() | st.just(scheduling)),
        backoff_limit=draw(limits),
        clean_pod_policy=draw(st.none() | st.sampled_from(v1beta1.CleanPodPolicy)),
        active_deadline_seconds=draw(st.none() | st.integers(60, 3600)),
        ttl_seconds_after_finished=draw(st.none() | st.integers(0, 600)),
    )
    progress = draw(
        st.none()
        | st.builds(
            v1beta1.ProgressSpec,
            deadline_seconds=st.none() | st.integers(10, 600),
            startup_grace_seconds=st.none() | st.integers(0, 300),
        )
    )
    # Half the jobs with progress ask for a checkpoint before every stop the operator sees coming.
    checkpoint = (
        draw(st.none() | st.builds(v1beta1.CheckpointSpec, grace_seconds=st.integers(1, 300)))
        if progress is not None
        else None
    )
    spec = {"failure_policy": failure_policy, "run_policy": run_policy, "progress": progress}
    return b.with_spec(**spec, checkpoint=checkpoint).build(), fw


class LifecycleMachine(RuleBasedStateMachine):
    world: World

    @rule(data=st.data())
    @precondition(lambda self: not hasattr(self, "world"))
    def start(self, data: st.DataObject) -> None:
        job, fw = data.draw(jobs())
        job = attrs.evolve(job, metadata=attrs.evolve(job.metadata, creation_timestamp=T0 - CREATED))
        # Half the time with Kubernetes' own gang groups (the operator's default where served).
        gangs = data.draw(st.sampled_from([backend.NONE, native.BACKENDS[0]]))
        self.world = World(
            job, fw, nodes=3, kueue=data.draw(st.sampled_from(backend.KUEUE_ROUTES)), scheduler=gangs
        )
        # Now and then the job is a worker cluster's copy of one MultiKueue dispatched.
        self.world.prebuilt = data.draw(st.sampled_from([None, None, "mk"]))

    def _ready(self) -> bool:
        return hasattr(self, "world")

    def _running_pods(self) -> list[observed.Pod]:
        return sorted(
            (p for p in self.world.pods.values() if p.phase == "Running" and p.deleted is None),
            key=lambda p: p.name,
        )

    # --- what happens in the cluster -------------------------------------------------------

    @precondition(_ready)
    @rule()
    def kubelets(self) -> None:
        self.world.kubelets()

    @precondition(_ready)
    @rule(data=st.data(), code=EXIT_CODES, oom=st.booleans())
    def exit(self, data: st.DataObject, code: int, oom: bool) -> None:
        pods = self._running_pods()
        if pods:
            pod = data.draw(st.sampled_from(pods))
            self.world.exit(pod.name, code, "OOMKilled" if oom and code == 137 else None)

    @precondition(_ready)
    @rule(data=st.data())
    def rank_hangs(self, data: st.DataObject) -> None:
        """Some time on, a running rank's agent says its step stopped moving — as soon as at once,
        as an agent of another version, or one whose clock is off, might: the step decides whether
        it is a hang."""
        pods = self._running_pods()
        if pods and self.world.job.spec.progress is not None:
            self.world.tick(data.draw(st.sampled_from([0, 30, 150, 400])))
            self.world.hang(data.draw(st.sampled_from(pods)).name)

    @precondition(_ready)
    @rule(step=st.integers(0, 10**6), total=st.none() | st.integers(1, 10**6))
    def first_rank_reports(self, step: int, total: int | None) -> None:
        """The first rank's agent prints a line, read at the next reconcile."""
        if self.world.job.spec.progress is not None:
            self.world.report(step, total)

    @precondition(_ready)
    @rule(data=st.data(), step=st.integers(0, 10**6))
    def first_rank_checkpoints(self, data: st.DataObject, step: int) -> None:
        """The first rank saves a checkpoint of ``step``: its own, or the one asked of it now."""
        if self.world.job.spec.progress is None:
            return
        asked = self.world.status.checkpoint.requested if self.world.status.checkpoint else None
        answers = asked is not None and data.draw(st.booleans())
        self.world.report(step, checkpoint=step, answered=asked.number if answers and asked else None)

    @precondition(_ready)
    @rule(data=st.data(), node=st.sampled_from(["node-0", "node-1", "node-2"]))
    def node_notice(self, data: st.DataObject, node: str) -> None:
        """A notice says a node will go (a spot interruption), or the notice is withdrawn."""
        if _now_and_then(data):
            self.world.noticed ^= {node}

    @precondition(_ready)
    @rule(data=st.data())
    def evict(self, data: st.DataObject) -> None:
        pods = self._running_pods()
        if pods and _now_and_then(data):
            self.world.evict(data.draw(st.sampled_from(pods)).name)

    @precondition(_ready)
    @rule(data=st.data())
    def vanish(self, data: st.DataObject) -> None:
        pods = sorted(self.world.pods.values(), key=lambda p: p.name)
        if pods and _now_and_then(data):
            self.world._remove(data.draw(st.sampled_from(pods)))

    @precondition(lambda self: self._ready() and len(self.world.lost) < 2)
    @rule(data=st.data(), node=st.sampled_from(["node-0", "node-1", "node-2"]))
    def lose_node(self, data: st.DataObject, node: str) -> None:
        if _now_and_then(data):
            self.world.lose_node(node)

    @precondition(_ready)
    @rule(data=st.data(), node=st.sampled_from(["node-0", "node-1", "node-2"]))
    def node_health_changes(self, data: st.DataObject, node: str) -> None:
        if _now_and_then(data):
            self.world.unhealthy ^= {node}

    @precondition(_ready)
    @rule(data=st.data())
    def kubelets_restart_in_place(self, data: st.DataObject) -> None:
        """The kubelets stop restarting pods in place (the nodes still declare that they can), or
        start again: a moved pod then keeps running until it is made again; or the nodes that
        declare it go, or come back."""
        if _now_and_then(data):
            w = self.world
            if data.draw(st.booleans()):
                w.restarting = not w.restarting
            else:
                w.in_place = not w.in_place

    @precondition(_ready)
    @rule(seconds=st.integers(1, 120))
    def tick(self, seconds: int) -> None:
        self.world.tick(seconds)

    @precondition(_ready)
    @rule(data=st.data())
    def toggle_suspend(self, data: st.DataObject) -> None:
        if not _now_and_then(data):
            return
        job = self.world.job
        rp = attrs.evolve(job.spec.run_policy, suspend=not job.spec.run_policy.suspend)
        self.world.job = attrs.evolve(job, spec=attrs.evolve(job.spec, run_policy=rp))

    @precondition(_ready)
    @rule(data=st.data(), answer=REFUSALS)
    def apiserver_refuses(self, data: st.DataObject, answer: tuple[int, str]) -> None:
        """From now on the apiserver refuses some replicas' creates (or stops refusing)."""
        if not _now_and_then(data):
            return
        w = self.world
        names = [
            naming.replica_name(w.name, k, i)
            for k, s in w.job.spec.replica_specs.items()
            for i in range(s.replicas)
        ]
        refused = data.draw(st.lists(st.sampled_from(names), unique=True, max_size=len(names)))
        w.refusing = dict.fromkeys(refused, answer)

    @precondition(_ready)
    @rule(data=st.data(), reason=st.sampled_from(["Unschedulable", "SchedulingGated"]))
    def scheduler_holds(self, data: st.DataObject, reason: str) -> None:
        """The scheduler cannot place some Pending pods, or a queue gates them — or lets them go."""
        w = self.world
        if data.draw(st.booleans()):
            w.held.clear()
            return
        pending = sorted(n for n, p in w.pods.items() if p.node is None and p.deleted is None)
        w.hold(data.draw(st.lists(st.sampled_from(pending), unique=True)) if pending else [], reason)

    @precondition(_ready)
    @rule(data=st.data())
    def vanish_unseen(self, data: st.DataObject) -> None:
        """A pod goes while the operator is down or its watch broken: no tombstone of it."""
        pods = sorted(self.world.pods.values(), key=lambda p: p.name)
        if pods and _now_and_then(data):
            self.world.vanish_unseen(data.draw(st.sampled_from(pods)).name)

    @precondition(_ready)
    @rule(data=st.data())
    def operator_restarts(self, data: st.DataObject) -> None:
        """The operator restarts: its tombstones, pacing clock, refusals and expectations are gone."""
        if _now_and_then(data):
            self.world.restart_operator()

    @precondition(_ready)
    @rule(data=st.data())
    def job_made_again(self, data: st.DataObject) -> None:
        """The job is deleted and made again under its name while the operator is not looking; the
        operator goes on with what it remembers (of the old UID)."""
        if _now_and_then(data) and _now_and_then(data):
            self.world.recreate()

    @precondition(_ready)
    @rule(data=st.data())
    def cache_lags(self, data: st.DataObject) -> None:
        """From now on the cache shows the pods just created only after the next kubelets()."""
        if _now_and_then(data):
            self.world.lagging = not self.world.lagging

    @precondition(_ready)
    @rule(data=st.data())
    def spec_stops_reading(self, data: st.DataObject) -> None:
        """The stored spec no longer reads (stored before a rule, with no webhook) — or reads again."""
        if _now_and_then(data) and _now_and_then(data):
            w = self.world
            w.invalid = () if w.invalid else (validation.FieldError(path=("spec",), message="broken"),)

    @precondition(_ready)
    @rule(data=st.data())
    def rescale(self, data: st.DataObject) -> None:
        """While suspended, the job's workers are scaled (admission allows it then)."""
        job = self.world.job
        specs = dict(job.spec.replica_specs)
        if "Worker" not in specs or not job.spec.run_policy.suspend:
            return
        low = 1 if "Master" in specs else 0
        specs["Worker"] = attrs.evolve(specs["Worker"], replicas=data.draw(st.integers(low, 3)))
        self.world.job = attrs.evolve(job, spec=attrs.evolve(job.spec, replica_specs=specs))

    @precondition(_ready)
    @rule(data=st.data())
    def kueue_decides(self, data: st.DataObject) -> None:
        """Kueue admits the job's Workload (whole, with fewer Workers, or reserving quota while an
        admission check is not ready yet), or evicts it."""
        w = self.world
        seen = w.workload
        if seen is None and w.prebuilt is not None and w.admission:
            w.workload = workload_.Seen(name=w.prebuilt, owned=False)  # MultiKueue makes it
            return
        if seen is None or seen.finished:
            return
        if seen.runs and _now_and_then(data):
            w.kueue_evicts(data.draw(st.sampled_from(["Preempted", "PodsReadyTimeout", "AdmissionCheck"])))
        elif seen.evicted is None or not seen.reserved:  # an evicted one, once its quota is back
            workers = w.job.spec.replica_specs.get("Worker")
            fewer = workers is not None and workers.replicas > 1 and data.draw(st.booleans())
            counts = (
                {"Worker": data.draw(st.integers(1, workers.replicas - 1))} if fewer and workers else None
            )
            w.admit(counts, checked=data.draw(st.booleans()))

    # --- the operator ----------------------------------------------------------------------

    @precondition(_ready)
    @rule()
    def reconcile(self) -> None:
        w = self.world
        inp = w.input()
        before = w.status
        decision = w.reconcile()
        after = decision.status
        assert lifecycle.step(inp) == decision, "the step is deterministic"
        old, new = v1beta1.state_of(before.conditions), v1beta1.state_of(after.conditions)
        assert old == new or (old, new) in lifecycle.TRANSITIONS, f"{old} -> {new} is not in the table"
        if old in FINAL:
            assert after.conditions == before.conditions, "a finished job stays as it finished"
        if isinstance(inp, lifecycle.Invalid):
            _check_invalid(inp, decision, old, new)
            return
        _check_around(inp, decision)
        _check_workload(inp, decision, old)
        _check_vanished(w, decision)
        _check_avoided(inp, decision)
        _check_in_place(inp, decision)
        _check_hangs(inp, decision, before)
        _check_progress(inp, decision, before)
        _check_checkpoints(inp, decision, before)
        _check_goodput(inp, decision, before)
        permanent = _permanent_exit_pending(inp)
        assert not (
            conditions.is_true(after.conditions, C.SUCCEEDED)
            and conditions.is_true(after.conditions, C.FAILED)
        )
        for field in ("user_code", "infrastructure", "uncharged"):
            assert getattr(after.restarts, field) >= getattr(before.restarts, field), f"{field} went down"
        user = budget.budget_of(w.job.spec, v1beta1.FailureClass.USER_CODE).limit
        infra = w.job.spec.failure_policy.budgets.infrastructure.limit
        assert user is not None
        assert after.restarts.user_code <= user + 1
        assert infra is None or after.restarts.infrastructure <= infra + 1
        new_records = after.failures[len(after.failures) - _failed_events(decision) :]
        if _failed_events(decision) and all(
            r.failure_class is v1beta1.FailureClass.INFRASTRUCTURE for r in new_records
        ):
            assert after.restarts.user_code == before.restarts.user_code, (
                "infrastructure spent the user budget"
            )
        if permanent:
            assert new in FINAL, f"a permanent exit code left the job {new}"
        refused = [r for r in inp.refusals if r.observed_generation == inp.generation]
        failed = next((c for c in after.conditions if c.type == C.FAILED and c.is_true()), None)
        if failed is not None and failed.reason == "CreateRefused" and old not in FINAL:
            kind = refusal.classify(refused[0].code, refused[0].message, refused[0].reason)
            assert kind.permanent, "a job failed on a refusal that would have cleared by itself"
            since = next(c for c in after.conditions if c.type == C.REPLICA_FAILURE).last_transition_time
            grace = w.job.spec.failure_policy.refusal_grace_seconds
            assert (inp.now - since).total_seconds() >= (300 if grace is None else grace), (
                "failed before its grace"
            )
        if failed is not None and failed.reason == "ScheduleTimeout" and old not in FINAL:
            policy = w.job.spec.run_policy.scheduling_policy
            assert policy is not None, "no timeout was set"
            assert policy.schedule_timeout_seconds is not None, "no timeout was set"
            held = [
                p.unscheduled_since
                for p in inp.pods
                if p.unscheduled
                and p.unscheduled[0] == "Unschedulable"
                and not p.node
                and p.unscheduled_since
            ]
            assert held, "gave up on a job nothing held"
            assert (inp.now - min(held)).total_seconds() >= policy.schedule_timeout_seconds, (
                "gave up before the schedule timeout"
            )
            assert after.restarts == before.restarts, "a job never placed spent a budget"
        if refused and decision.create and conditions.is_true(before.conditions, C.REPLICA_FAILURE):
            last = max(r.time for r in refused)
            assert (inp.now - last).total_seconds() >= refusal.MIN_BACKOFF, (
                "refused creates tried in a hot loop"
            )

    @invariant()
    def every_pod_has_its_own_gang(self) -> None:
        """A pod made to join a gang group finds that group there, the job's own (this very UID's):
        a job made again under its name gets its own gangs, never its predecessor's."""
        if not self._ready() or self.world.scheduler.resource is None:
            return
        w = self.world
        for pod in w.pods.values():
            if pod.gang is not None and pod.deleted is None:
                assert w.groups.get(pod.gang) == w.uid, f"{pod.name} joins {pod.gang}, which is not its job's"

    @precondition(lambda self: self._ready() and self.world.scheduler.resource is not None)
    @rule()
    def no_gang_outlives_its_attempt(self) -> None:
        """A gang group of an attempt no pod joins any more is gone once the operator has looked
        three times in a row (after a restart: listed them, deleted them), nothing happening between."""
        w = self.world
        if w.unreadable:
            return
        for _ in range(3):
            w.reconcile()
        if w.memory.expected["Pod"].pending(w.uid):
            return  # pods it made may join any group until the caches show them (or they expire)
        attempts = {r.attempt for r in w.status.replica_statuses.values()}
        joined = {p.gang for p in w.pods.values() if p.gang is not None}
        stale = gang.stale(w.name, w.groups, attempts, joined)
        assert not stale or v1beta1.state_of(w.status.conditions) in FINAL, f"groups left behind: {stale}"

    @invariant()
    def one_world_at_a_time(self) -> None:
        """The running pods of a replica type all started in one attempt: a new world never
        meets an old one, whether its pods were made again or restarted in place."""
        if self._ready():
            for key, attempts in self.world.running_attempts().items():
                assert len(attempts) <= 1, f"{key} runs attempts {sorted(attempts)} at once"

    @invariant()
    def attempts_never_go_back(self) -> None:
        if not self._ready() or len(self.world.decisions) < 2:
            return
        a, b = self.world.decisions[-2].status, self.world.decisions[-1].status
        for t, r in b.replica_statuses.items():
            assert r.attempt >= a.replica_statuses.get(t, v1beta1.ReplicaStatus()).attempt


def _check_invalid(inp: lifecycle.Invalid, decision: lifecycle.Decision, old: S, new: S) -> None:
    """An invalid job fails once, says why once, and nothing is created or deleted for it."""
    event("an invalid job")
    assert not decision.create
    assert not decision.delete
    assert not decision.release
    assert not decision.delete_services
    reasons = [e.reason for e in decision.events]
    if old in FINAL:
        assert new == old, "a finished job is left as it finished"
        assert not reasons, "a finished job says nothing more"
    else:
        assert new is S.FAILED, f"an invalid job is {new}"
        assert reasons == ["InvalidSpec"], reasons
        failed = next(c for c in decision.status.conditions if c.type == C.FAILED)
        assert failed.reason == "InvalidSpec"
        assert all(e.message in failed.message for e in inp.errors), "says every reason"
    assert decision.status.restarts == inp.status.restarts, "an invalid spec spends no budget"


def _check_around(inp: lifecycle.Input, decision: lifecycle.Decision) -> None:
    """What the step decides around the job's course: pacing, releases, Services, pods made."""
    # Pacing holds a write of the starting pods' counts alone, and never past what the step awaits.
    unpaced = lifecycle.step(attrs.evolve(inp, last_write=None))
    for seen, what in (
        (decision != unpaced, "a count change held"),
        (decision.release, "queued pods released"),
        (decision.delete_services, "surplus Services deleted"),
        (inp.made, "pods made, not yet seen"),
    ):
        if seen:
            event(what)
    if decision != unpaced:
        assert not decision.acts, "a held pass did something"
        assert decision.status == inp.status, "a held pass wrote a status"
        assert pacing.counts_only(inp.status, unpaced.status), "a hold kept back more than counts"
        assert decision.requeue_after is not None
        assert decision.requeue_after > 0
        due = unpaced.requeue_after
        assert due is None or decision.requeue_after <= due, "held past what the step awaits"
    # Pods already made are not made again.
    made = {naming.replica_name(inp.name, k, i) for k, i in decision.create} & inp.made
    assert not made, f"{sorted(made)} made again while the cache lagged"
    # Queued pods are released exactly when the job is done with them.
    after = decision.status
    finished = v1beta1.state_of(after.conditions) in FINAL
    keys = {k.lower(): k for k in inp.spec.replica_specs}
    released = set(decision.release)

    def done_with(p: observed.Pod) -> bool:
        if finished:
            return p.phase != "Succeeded"
        key = keys.get(p.replica_type)
        return (
            key is None
            or p.index >= inp.spec.replica_specs[key].replicas
            or p.attempt < after.replica_statuses[key].attempt
        )

    for p in inp.pods:
        if p.gone:
            continue  # a replacement may carry its name
        if not p.in_queue or p.released:
            assert p.name not in released, f"{p.name} released twice, or in no queue"
            continue
        assert (p.name in released) == (inp.queued and done_with(p)), (
            f"{p.name}: released {p.name in released}, done with {done_with(p)}"
        )
    # Only the Services of replicas past the counts are deleted, and all of them.
    counts = {k.lower(): s.replicas for k, s in inp.spec.replica_specs.items()}
    surplus = {
        s.name
        for s in inp.services
        if s.replica_type in counts and s.index is not None and s.index >= counts[s.replica_type]
    }
    assert set(decision.delete_services) == surplus


def _check_workload(inp: lifecycle.Input, decision: lifecycle.Decision, old: S) -> None:
    """Kueue's Workload route: the job's Workload is made while none is seen, pods are made only
    while it is admitted and within its counts, an eviction is charged nothing and its quota goes
    back only once no pod is left, a suspended job lets its Workload go once no pod is left, and a
    finished job finishes its Workload."""
    seen, act = inp.workload, decision.workload
    if not inp.admission:
        assert act is None, "a Workload off the Workload route"
        assert not decision.assigned
        return
    if act is not None:
        event(f"Workload: {act.value}")
    new = v1beta1.state_of(decision.status.conditions)
    if decision.create:
        assert seen is not None, "pods made while Kueue holds the job"
        assert seen.runs, "pods made while Kueue holds the job"
        for key, index in decision.create:
            count = seen.assignments[workload_.pod_set_name(key)].count
            assert count is None or index < count, f"{key} {index} made past its admitted count"
            assert (
                decision.assigned[workload_.pod_set_name(key)]
                == seen.assignments[workload_.pod_set_name(key)]
            )
    if act is workload_.Act.CREATE:
        assert seen is None, "a Workload made again while one is seen"
        assert inp.prebuilt is None, "a Workload made beside the one MultiKueue makes"
    if act is workload_.Act.ADOPT:
        assert seen is not None, "a Workload adopted, but none is seen"
        assert not seen.owned, "a Workload adopted twice"
    if act is workload_.Act.REQUEUE:
        assert seen is not None, "quota given back, but no Workload is seen"
        assert seen.evicted is not None, "quota given back, but not evicted"
        assert seen.reserved, "quota given back twice"
        assert not [p for p in inp.pods if not p.gone], "quota given back while pods are left"
        assert not inp.made, "quota given back while pods made may be left"
    if act is workload_.Act.DELETE:
        assert inp.spec.run_policy.suspend, "a Workload deleted under a job that is not suspended"
        assert inp.prebuilt is None, "MultiKueue's Workload deleted"
        assert seen is not None, "a Workload deleted, but none is seen"
        assert not [p for p in inp.pods if not p.gone], "a Workload deleted while pods are left"
        assert not inp.made, "a Workload deleted while pods made may be left"
    if act is workload_.Act.FINISH:
        assert new in FINAL, "a Workload finished before its job"
        assert seen is not None, "a Workload finished, but none is seen"
        assert not seen.finished, "a Workload finished twice"
    elif new in FINAL and seen is not None and not seen.finished:
        raise AssertionError("a finished job left its Workload unfinished")
    if old not in FINAL and (seen is None or not seen.runs):
        assert decision.status.restarts == inp.status.restarts, "a job Kueue holds spent a budget"


def _check_vanished(w: World, decision: lifecycle.Decision) -> None:
    """A pod gone unseen, recorded active, is charged once before its index is made again."""
    after = decision.status
    charged = [
        r
        for r in after.failures[len(after.failures) - _failed_events(decision) :]
        if r.reason == "PodVanished"
    ]
    if charged:
        event("a pod gone unseen charged")
    for r in charged:
        key = r.replica_type.lower()
        owed = {v for v in w.vanished_unseen if v[:2] == (key, r.index)}
        assert owed, f"{r.pod} charged as vanished, but nothing of it went unseen"
        w.vanished_unseen -= owed
    finished = v1beta1.state_of(after.conditions) in FINAL
    keys = {k.lower(): k for k in w.job.spec.replica_specs}
    for v in list(w.vanished_unseen):
        key = keys.get(v[0])
        rs = after.replica_statuses.get(key) if key is not None else None
        if finished or rs is None or rs.attempt > v[2] or v[1] >= w.job.spec.replica_specs[key].replicas:
            w.vanished_unseen.discard(v)  # moot: a new attempt, a scale-down, or the end
    for key, index in decision.create:
        attempt = after.replica_statuses[key].attempt
        assert (key.lower(), index, attempt) not in w.vanished_unseen, (
            f"{key} {index} made again, uncharged, after its pod went unseen"
        )


def _check_avoided(inp: lifecycle.Input, decision: lifecycle.Decision) -> None:
    """Nodes that failed a pod are kept off, boundedly, and never leave a pod stranded."""
    before, after = inp.status.avoided_nodes, decision.status.avoided_nodes
    names = [a.node for a in after]
    assert len(names) == len(set(names)) <= v1beta1.status_types.MAX_AVOIDED_NODES
    released = any(e.reason == "AvoidedNodesReleased" for e in decision.events)
    if released:
        event("avoided nodes let go")
        assert before, "let go of nothing"
    new_records = decision.status.failures[len(decision.status.failures) - _failed_events(decision) :]
    for r in new_records:
        tied = r.rule == "device" or (
            r.failure_class is v1beta1.FailureClass.INFRASTRUCTURE and r.reason in avoid.NODE_REASONS
        )
        if tied and r.node is not None and r.reason != "PodVanished" and not released:
            event("a node kept off after a failure")
            assert r.node in names, f"{r.node} failed {r.pod} ({r.reason}) but is not kept off"
    if decision.create:
        assert set(decision.keep_off) == {a.node for a in after} | inp.unhealthy | inp.noticed, (
            "new pods keep off them, and off the nodes that will go"
        )
    # A pod stranded by the nodes it keeps off is made again once one of them is no longer kept off.
    wanted = set(names) | inp.unhealthy
    deleted = {d.pod for d in decision.delete}
    for p in avoid.blocked(inp.pods):
        if p.attempt >= inp.status.replica_statuses.get(_key(inp, p), v1beta1.ReplicaStatus()).attempt:
            assert (
                p.avoiding <= wanted
                or p.name in deleted
                or v1beta1.state_of(decision.status.conditions) in FINAL
            ), f"{p.name} left stranded keeping off {sorted(p.avoiding - wanted)}"


def _check_in_place(inp: lifecycle.Input, decision: lifecycle.Decision) -> None:
    """Pods move in place only for an InPlace job and only if they can; moving pods are opened
    only once nothing of the old attempt runs; a move charges nothing."""
    method = inp.spec.failure_policy.restart_method
    after = decision.status
    pods = {p.name: p for p in inp.pods if not p.gone}
    if decision.move:
        event("pods moved in place")
        assert method is v1beta1.RestartMethod.IN_PLACE, "moved pods of a job that recreates"
    for m in decision.move:
        p = pods[m.pod]
        assert inplace.restartable(p), f"{p.name} moved, but it cannot restart in place"
        assert p.attempt < m.attempt == after.replica_statuses[_key(inp, p)].attempt
    if decision.open:
        event("moved pods opened")
        current = [
            p for p in pods.values() if (k := _key(inp, p)) and p.index < inp.spec.replica_specs[k].replicas
        ]
        assert all(p.attempt >= after.replica_statuses[_key(inp, p)].attempt for p in current), (
            "opened while a pod of an older attempt is left"
        )
        assert not any(p.running and p.opened != inplace.CLOSED for p in current if p.moving), (
            "opened while a moved pod still runs"
        )
    for m in decision.open:
        assert pods[m.pod].moving
        assert m.attempt == pods[m.pod].attempt
    if decision.create and decision.in_place:
        assert method is v1beta1.RestartMethod.IN_PLACE
        assert inp.in_place
    # A moving pod's end is the old attempt's: it is never charged.
    new_records = after.failures[len(after.failures) - _failed_events(decision) :]
    for r in new_records:
        assert not (r.pod in pods and pods[r.pod].moving), f"{r.pod} charged while it moved"
        restarted = r.action in (v1beta1.FailureAction.RESTART, v1beta1.FailureAction.RESTART_UNCHARGED)
        if restarted and v1beta1.state_of(after.conditions) not in FINAL:
            assert r.restart is not None, "a restart that does not say how"
            if r.restart is v1beta1.RestartMethod.IN_PLACE:
                event("a restart in place")


def _check_hangs(
    inp: lifecycle.Input, decision: lifecycle.Decision, before: v1beta1.TrainingJobStatus
) -> None:
    """A hang is charged once, only as the job's progress policy allows: a rank of the current
    attempt that runs, its hang seen past the startup grace after its containers started, never
    while the job is suspended; and none that is due is left uncharged unless the job ended or
    the rank's type restarted for another failure in the same step."""
    after = decision.status
    policy = inp.spec.progress
    new = after.failures[len(after.failures) - _failed_events(decision) :]
    hangs = [r for r in new if r.reason == v1beta1.progress_types.HUNG]
    counted = {c.uid: c.hung_time for c in before.counted_failures}
    # The pod a hang was charged to, by uid: a record names its pod, and a pod that vanished or is
    # still terminating may share its name with its replacement in the same look.
    charged = {
        c.pod: c.uid
        for c in after.counted_failures
        if c.hung_time is not None and counted.get(c.uid) != c.hung_time
    }
    pods = {p.uid: p for p in inp.pods}
    if hangs:
        event("a hang charged")
        assert policy is not None, "a hang without spec.progress"
        assert policy.deadline_seconds is not None, "a hang without a deadline"
        assert not inp.spec.run_policy.suspend, "a hang charged while suspended"
    for r in hangs:
        assert r.pod in charged, f"a hang charged without its pod's hang remembered: {r}"
        pod = pods[charged[r.pod]]
        attempt = before.replica_statuses.get(r.replica_type, v1beta1.ReplicaStatus()).attempt
        assert pod.running, r
        assert not pod.deleting, r
        assert not pod.moving, r
        assert pod.attempt >= attempt, r
        assert pod.hung_at is not None
        assert pod.started_at is not None
        assert (pod.hung_at - pod.started_at).total_seconds() >= policy.startup_grace, "hung within grace"
        old = counted.get(pod.uid)
        assert old is None or pod.hung_at > old, "a hang charged twice"
        assert r.failure_class is v1beta1.FailureClass.USER_CODE
    if policy is None or policy.deadline_seconds is None or conditions.is_true(after.conditions, C.FAILED):
        return
    if inp.spec.run_policy.suspend or _finished(before) or _finished(after):
        return
    now_counted = {c.uid: c.hung_time for c in after.counted_failures}
    for pod in inp.pods:
        key = _key(inp, pod)
        if not key or pod.index >= inp.spec.replica_specs[key].replicas:
            continue
        rs_before = before.replica_statuses.get(key, v1beta1.ReplicaStatus())
        rs_after = after.replica_statuses.get(key, v1beta1.ReplicaStatus())
        due = (
            pod.hung_at is not None
            and pod.started_at is not None
            and pod.running
            and not pod.deleting
            and not pod.moving
            and pod.attempt >= rs_before.attempt
            and (pod.hung_at - pod.started_at).total_seconds() >= policy.startup_grace
            and not _at_or_after(counted.get(pod.uid), pod.hung_at)
        )
        if due and rs_after.attempt == rs_before.attempt:
            assert now_counted.get(pod.uid) == pod.hung_at or pod.name in {d.pod for d in decision.delete}, (
                f"the hang of {pod.name} was left uncharged"
            )


def _check_progress(
    inp: lifecycle.Input, decision: lifecycle.Decision, before: v1beta1.TrainingJobStatus
) -> None:
    """Progress shows the last reading, and a reading that says nothing new writes nothing."""
    after = decision.status.progress
    if inp.progress is None:
        assert after == before.progress, "progress changed without a reading"
        return
    assert after is not None
    assert after.step == inp.progress.step
    assert after.pod == inp.progress.pod
    same = before.progress is not None and (before.progress.step, before.progress.total_steps) == (
        inp.progress.step,
        inp.progress.total,
    )
    if same and before.progress is not None and before.progress.pod == inp.progress.pod:
        assert after == before.progress, "a reading that said nothing new changed the status"
    if after.estimated_completion_time is not None:
        assert after.estimated_completion_time >= inp.now
        assert after.total_steps is not None


def _check_goodput(
    inp: lifecycle.Input, decision: lifecycle.Decision, before: v1beta1.TrainingJobStatus
) -> None:
    """Goodput's parts add up to the wall time from the job's creation to where its accounting
    has got, none goes down, a change of state is accounted up to the moment it is seen, and the
    clock stops as the job finishes."""
    g0, g = before.goodput, decision.status.goodput
    now = meta.utc(inp.now)
    if g is None:
        assert g0 is None, "goodput dropped"
        return
    assert inp.created is not None
    assert g.wall_seconds == (g.accounted_time - inp.created).total_seconds(), (
        "the parts add up to the wall time"
    )
    assert g.accounted_time <= now
    assert g.redo_owed_seconds <= g.productive_seconds
    if g0 is not None:
        assert g.accounted_time >= g0.accounted_time
        old = goodput.parts(g0)
        assert all(s >= old[c] for c, s in goodput.parts(g).items()), "a part of the goodput went down"
    if _finished(before):
        assert g == g0, "accounted after the job finished"
    elif v1beta1.state_of(decision.status.conditions) != v1beta1.state_of(before.conditions):
        event("goodput: a change of state accounted")
        assert g.accounted_time == now, "a change of state not accounted up to when it was seen"


def _check_checkpoints(
    inp: lifecycle.Input, decision: lifecycle.Decision, before: v1beta1.TrainingJobStatus
) -> None:
    """No request of a job that has not opted in; a stop never waits past its grace; a request is
    written into the pods in the pass that records it, once; the checkpoint the next attempt
    resumes from is the last one seen."""
    spec, after = inp.spec.checkpoint, decision.status.checkpoint
    if spec is None:
        assert decision.ask is None, "a checkpoint asked of a job that did not opt in"
        assert after is None or after.requested is None
        return
    asked = after.requested if after is not None else None
    if asked is not None:
        event("checkpoint: a stop waits for one")
        assert meta.utc(inp.now) < asked.time + datetime.timedelta(seconds=spec.grace_seconds), (
            "a stop waited past its grace"
        )
    old = before.checkpoint.requested if before.checkpoint is not None else None
    if decision.ask is not None:
        event("checkpoint: asked")
        assert asked is not None, "asked, but not recorded"
        assert decision.ask[0] == asked.number, "asked another number than the one recorded"
        assert old is None, "asked again while a request waited"
    last = after.last if after is not None else None
    if last is not None and inp.progress is not None and inp.progress.checkpoint is not None:
        assert last.step == inp.progress.checkpoint, "the last checkpoint seen is not the one resumed from"
        if old is not None and inp.progress.answered is not None and inp.progress.answered >= old.number:
            event("checkpoint: answered")
            assert asked is None, "an answered request still waited for"


def _at_or_after(a: datetime.datetime | None, b: datetime.datetime | None) -> bool:
    return a is not None and b is not None and a >= b


def _finished(status: v1beta1.TrainingJobStatus) -> bool:
    return conditions.is_true(status.conditions, C.SUCCEEDED) or conditions.is_true(
        status.conditions, C.FAILED
    )


def _key(inp: lifecycle.Input, pod: observed.Pod) -> str:
    return next((k for k in inp.spec.replica_specs if k.lower() == pod.replica_type), "")


def _now_and_then(data: st.DataObject) -> bool:
    return data.draw(st.integers(0, RARELY - 1)) == 0


def _failed_events(decision: lifecycle.Decision) -> int:
    return sum(e.reason == "PodFailed" for e in decision.events)


def _permanent_exit_pending(inp: lifecycle.Input) -> bool:
    """A pod of the current attempt has just failed with 1-127 under ExitCode, and no rule applies."""
    if inp.spec.failure_policy.rules or inp.spec.run_policy.suspend:
        return False
    if v1beta1.state_of(inp.status.conditions) in FINAL | {S.SUSPENDED, S.PENDING}:
        return False
    counted = {c.uid for c in inp.status.counted_failures}
    keys = {k.lower(): k for k in inp.spec.replica_specs}
    for p in inp.pods:
        key = keys.get(p.replica_type)
        if key is None or p.index >= inp.spec.replica_specs[key].replicas or p.gone or p.uid in counted:
            continue
        rs = inp.status.replica_statuses.get(key, v1beta1.ReplicaStatus())
        policy = inp.spec.replica_specs[key].restart_policy or inp.defaults.restart_policy
        code = p.exit_codes.get(inp.defaults.containers[key])
        if (
            p.attempt >= rs.attempt
            and not p.moving  # its end is the old attempt's
            and policy is v1beta1.RestartPolicy.EXIT_CODE
            and p.phase == "Failed"
            and p.disruption is None
            and p.node_exists
            and p.restarts == 0
            and code is not None
            and 1 <= code <= 127
        ):
            return True
    return False


TestLifecycle = LifecycleMachine.TestCase
