"""``kubetrain describe JOB``: everything a person needs to know about a job to act on it.

The text reads top-down as the questions come: what the job is (its framework, and the runtime
it was made from, with the runtime's generation then); what state it is in and why (the
condition that decided it, in the operator's words); how far it got and where its time went
(productive, or lost by cause: goodput); which conditions hold; how many replicas of each type
are where, and their pods; how many restarts were spent against which budget; which failures
happened, and which rule decided what to do; whether its pods wait for a queue or a place (the
``Scheduled`` condition and the scheduling policy); where its TensorBoard is; what the
operator, the scheduler and the kubelets said (Events). It ends with one ``next:`` line when the
state calls for an action — the logs of the replica that failed, the queue it waits in, the
apiserver's refusal.

:func:`text` is pure (the job, its pods and Events, and the time in; the text out) so that
what a person reads is tested without a cluster; :func:`hint` and :func:`deciding` serve
``wait`` too.
"""

from __future__ import annotations

import argparse
import datetime
import sys
from collections.abc import Sequence

from kubetrain import client
from kubetrain.api import meta, naming, v1beta1
from kubetrain.cli import cluster, output
from kubetrain.operator.policies import budget, goodput

__all__ = [
    "HISTORY",
    "RECENT_EVENTS",
    "arguments",
    "deciding",
    "goodput_section",
    "hint",
    "progress_section",
    "runtime_cell",
    "tensorboard_section",
    "text",
]

# Enough to see a pattern; the rest is in `-o yaml` (status.failures) and kubectl get events.
HISTORY = 10
RECENT_EVENTS = 15

C = v1beta1.ConditionType
_STATE_CONDITION = {
    v1beta1.JobState.CREATED: C.CREATED,
    v1beta1.JobState.RUNNING: C.RUNNING,
    v1beta1.JobState.RESTARTING: C.RESTARTING,
    v1beta1.JobState.SUSPENDED: C.SUSPENDED,
    v1beta1.JobState.SUCCEEDED: C.SUCCEEDED,
    v1beta1.JobState.FAILED: C.FAILED,
}


def arguments(_verb: str, p: argparse.ArgumentParser) -> None:
    cluster.add_flags(p)
    p.add_argument("job", help="the TrainingJob's name")
    p.set_defaults(run=_describe)


def _describe(args: argparse.Namespace) -> int:
    with cluster.connect(args) as c:
        job = c.get(args.job, namespace=args.namespace)
        pods = c.pods(args.job, namespace=args.namespace)
        events = c.events(args.job, namespace=args.namespace)
    now = datetime.datetime.now(datetime.UTC)
    sys.stdout.write(text(job, pods, events, now, namespace_flag=args.namespace))
    return 0


def _condition(job: v1beta1.TrainingJob, ctype: str) -> meta.Condition | None:
    return next((c for c in job.status.conditions if c.type == ctype), None)


def deciding(job: v1beta1.TrainingJob) -> meta.Condition | None:
    """The condition that makes the job's state what it is (None while Pending)."""
    state = job.status.state or v1beta1.state_of(job.status.conditions)
    ctype = _STATE_CONDITION.get(state)
    return None if ctype is None else _condition(job, ctype)


def text(
    job: v1beta1.TrainingJob,
    pods: Sequence[client.PodInfo],
    events: Sequence[client.Event],
    now: datetime.datetime,
    *,
    namespace_flag: str | None = None,
) -> str:
    """The whole description; ``namespace_flag``: the ``-n`` the user gave, repeated in ``next:``."""
    sections = [
        _summary(job, now),
        progress_section(job, now),
        goodput_section(job, now),
        _conditions(job, now),
        _replicas(job),
        _pods(pods),
        _restarts(job),
        _failures(job, now),
        _avoided(job, now),
        _scheduling(job, now),
        tensorboard_section(job),
        _events(events, now),
    ]
    out = "\n".join(s for s in sections if s)
    next_step = hint(job, namespace_flag)
    return out + (f"\nnext: {next_step}\n" if next_step else "")


# The labels of the top-level fields line up: "Namespace:", "TensorBoard:" and their values.
LABEL_WIDTH = 14


def _fields(pairs: Sequence[tuple[str, object]], width: int | None = None) -> str:
    width = width or max(len(k) for k, _ in pairs) + 3
    return "".join(f"{(k + ':').ljust(width)}{v}\n" for k, v in pairs if v is not None)


def _when(value: datetime.datetime | None, now: datetime.datetime) -> str | None:
    return None if value is None else f"{output.timestamp(value)} ({output.age(value, now)} ago)"


def _summary(job: v1beta1.TrainingJob, now: datetime.datetime) -> str:
    s = job.status
    state = s.state.value if s.state else v1beta1.JobState.PENDING.value
    why = deciding(job)
    pairs: list[tuple[str, object]] = [
        ("Name", job.metadata.name),
        ("Namespace", job.metadata.namespace),
        ("Framework", job.spec.framework.name),
        ("Runtime", runtime_cell(job)),
        ("State", state if s.state else f"{state} (the operator has not reconciled it yet)"),
    ]
    if why is not None:
        pairs += [("Reason", why.reason), ("Message", why.message or None)]
    pairs += [
        ("Created", _when(job.metadata.creation_timestamp, now)),
        ("Started", _when(s.start_time, now)),
        ("Completed", _when(s.completion_time, now)),
        ("Deleting", _when(job.metadata.deletion_timestamp, now)),
    ]
    return _fields(pairs, LABEL_WIDTH)


def runtime_cell(job: v1beta1.TrainingJob) -> str | None:
    """The runtime the job was made from, and its generation then: ``ClusterTrainingRuntime
    torch-distributed (generation 3)``; None for a job written whole. The status says what the
    operator saw; until it has, the spec (admission wrote the generation into it)."""
    ref = job.status.runtime or job.spec.runtime_ref
    if ref is None:
        return None
    return f"{ref} (generation {ref.generation})" if ref.generation is not None else str(ref)


def _conditions(job: v1beta1.TrainingJob, now: datetime.datetime) -> str:
    if not job.status.conditions:
        return ""
    rows = [
        (c.type, c.status.value, c.reason, output.age(c.last_transition_time, now), c.message)
        for c in job.status.conditions
    ]
    return "Conditions:\n" + output.table(("type", "status", "reason", "age", "message"), rows, "  ")


def _replicas(job: v1beta1.TrainingJob) -> str:
    rows = []
    for rtype, spec in job.spec.replica_specs.items():
        r = job.status.replica_statuses.get(rtype, v1beta1.ReplicaStatus())
        rows.append((rtype, spec.replicas, r.active, r.ready, r.succeeded, r.failed, r.attempt))
    headers = ("type", "wanted", "active", "ready", "succeeded", "failed", "attempt")
    return "Replicas:\n" + output.table(headers, rows, "  ")


def _pods(pods: Sequence[client.PodInfo]) -> str:
    if not pods:
        return "Pods:  none\n"
    rows = [
        (
            p.name,
            f"{p.replica_type}/{p.index}",
            p.attempt,
            p.phase,
            p.node or "-",
            p.restarts,
            "-" if p.exit_code is None else p.exit_code,
            p.reason or "",
        )
        for p in pods
    ]
    headers = ("name", "replica", "attempt", "phase", "node", "restarts", "exit", "reason")
    return "Pods:\n" + output.table(headers, rows, "  ")


def _restarts(job: v1beta1.TrainingJob) -> str:
    spent = job.status.restarts
    policy = job.spec.failure_policy.budgets
    user = budget.budget_of(job.spec, v1beta1.FailureClass.USER_CODE)
    if job.spec.run_policy.backoff_limit is not None:
        source = "runPolicy.backoffLimit"
    elif policy.user_code.limit is not None:
        source = "failurePolicy.budgets.userCode.limit"
    else:
        source = "the default limit"
    infra = budget.budget_of(job.spec, v1beta1.FailureClass.INFRASTRUCTURE)
    infra_limit = "no limit" if infra.limit is None else "failurePolicy.budgets.infrastructure.limit"
    rows = [
        ("user code", _spent(spent.user_code, user), (user.limit is not None and source) or "no limit"),
        ("infrastructure", _spent(spent.infrastructure, infra), infra_limit),
        ("uncharged", str(spent.uncharged), "rules with action RestartUncharged"),
    ]
    method = job.spec.failure_policy.restart_method or v1beta1.RestartMethod.RECREATE
    how = "in place where the nodes can" if method is v1beta1.RestartMethod.IN_PLACE else "pods made again"
    title = f"Restarts (restartMethod {method.value}: {how}):\n"
    return title + output.table(("charged to", "spent", "budget"), rows, "  ")


def _spent(count: int, b: v1beta1.Budget) -> str:
    text = str(count) if b.limit is None else f"{count} of {b.limit}"
    extra = [
        f"within {b.window_seconds}s" if b.window_seconds else "",
        f"{b.per_index_limit} per replica" if (b.per_index_limit is not None) else "",
    ]
    more = ", ".join(x for x in extra if x)
    return f"{text} ({more})" if more else text


def _failures(job: v1beta1.TrainingJob, now: datetime.datetime) -> str:
    history = job.status.failures
    if not history:
        return ""
    shown = history[-HISTORY:]
    rows = [
        (
            output.age(f.time, now),
            f"{f.replica_type}/{f.index}",
            f.pod,
            f.node or "-",
            "-" if f.exit_code is None else f.exit_code,
            f.failure_class.value,
            f.reason or "-",
            f.rule or "-",
            f.action.value + (f" ({_HOW[f.restart]})" if f.restart is not None else ""),
        )
        for f in shown
    ]
    headers = ("age", "replica", "pod", "node", "exit", "class", "reason", "rule", "action")
    title = "Failures (oldest first" + (
        f", last {len(shown)} of {len(history)}" if len(shown) < len(history) else ""
    )
    return f"{title}):\n" + output.table(headers, rows, "  ")


# How a restart was carried out (status.failures[].restart).
_HOW = {v1beta1.RestartMethod.IN_PLACE: "in place", v1beta1.RestartMethod.RECREATE: "recreated"}


def _avoided(job: v1beta1.TrainingJob, now: datetime.datetime) -> str:
    avoided = job.status.avoided_nodes
    if not avoided:
        return ""
    rows = [(a.node, a.reason, a.pod or "-", output.age(a.time, now)) for a in avoided]
    return "Nodes kept off (new pods avoid them):\n" + output.table(
        ("node", "reason", "pod", "age"), rows, "  "
    )


def _scheduling(job: v1beta1.TrainingJob, now: datetime.datetime) -> str:
    policy = job.spec.run_policy.scheduling_policy
    scheduled = _condition(job, C.SCHEDULED)
    if policy is None and scheduled is None:
        return ""
    pairs: list[tuple[str, object]] = []
    if scheduled is not None:
        since = output.age(scheduled.last_transition_time, now)
        pairs.append(
            ("Scheduled", f"{scheduled.status.value}, {scheduled.reason} for {since}: {scheduled.message}")
        )
    if policy is not None:
        pairs += [
            ("Queue", policy.queue),
            ("Min available", policy.min_available if policy.min_available is not None else "every replica"),
            ("Priority class", policy.priority_class),
            (
                "Schedule timeout",
                f"{policy.schedule_timeout_seconds}s"
                if policy.schedule_timeout_seconds is not None
                else None,
            ),
        ]
    return "Scheduling:\n" + "".join(f"  {line}" for line in _fields(pairs).splitlines(keepends=True))


def progress_section(job: v1beta1.TrainingJob, now: datetime.datetime) -> str:
    """How far the job got (spec.progress): the step, its metrics, its rate and the time left."""
    p = job.status.progress
    if p is None:
        if job.spec.progress is None:
            return ""
        return _fields([("Progress", "none reported yet")], LABEL_WIDTH)
    step = f"step {p.step:,}" + (
        f" of {p.total_steps:,} ({100 * p.step // p.total_steps}%)" if p.total_steps else ""
    )
    metrics = " ".join(f"{k}={v}" for k, v in sorted(p.metrics.items()))
    rate = f"{p.steps_per_second} steps/s" if p.steps_per_second else None
    left = None
    eta = p.estimated_completion_time
    if eta is not None and not job.status.completion_time:
        left = f"{output.age(now, eta) if eta > now else 'due now'} (at {output.timestamp(eta)})"
    deadline = job.spec.progress.deadline_seconds if job.spec.progress else None
    pairs: list[tuple[str, object]] = [
        ("Progress", f"{step}{'  ' + metrics if metrics else ''}  (from {p.pod})"),
        ("Moved", _when(p.last_moved_time, now)),
        ("Rate", rate),
        ("Time left", left),
        ("Hang after", f"{deadline}s without a step on any rank" if deadline else None),
    ]
    return _fields(pairs, LABEL_WIDTH)


def goodput_section(job: v1beta1.TrainingJob, now: datetime.datetime) -> str:
    """Where the job's wall time went (status.goodput): productive, and lost by cause; the time
    since the last accounting, which the next status write charges; the redone steps still owed."""
    g = job.status.goodput
    if g is None:
        return ""
    wall = g.wall_seconds
    ago = output.age(g.accounted_time, now)
    to = output.timestamp(g.accounted_time)
    head = f"{g.share or '-'} productive of {_duration(wall)} (accounted to {to}, {ago} ago)"
    rows = [
        (cause.value, _duration(seconds), f"{100 * seconds / wall:.1f}%")
        for cause, seconds in goodput.parts(g).items()
        if wall and (seconds or cause is goodput.Cause.PRODUCTIVE)
    ]
    out = _fields([("Goodput", head)], LABEL_WIDTH)
    if rows:
        out += output.table(("cause", "time", "share"), rows, "  ")
    doing = goodput.cause(job.status)
    behind = int((now - g.accounted_time).total_seconds())
    if doing is not None and behind > 0:
        what = "running" if doing is goodput.Cause.PRODUCTIVE else doing.value
        out += f"  not accounted yet: {_duration(behind)}, {what} (charged at the next status write)\n"
    if g.redo_owed_seconds:
        out += (
            f"  redo owed: {_duration(g.redo_owed_seconds)} of steps a restart threw away, charged to "
            "redone as they run again\n"
        )
    return out


def _duration(seconds: int) -> str:
    epoch = datetime.datetime(2000, 1, 1, tzinfo=datetime.UTC)
    return output.age(epoch, epoch + datetime.timedelta(seconds=seconds))


def tensorboard_section(job: v1beta1.TrainingJob) -> str:
    # status.tensorboard is being added alongside; read whatever shape it has, if any.
    board = getattr(job.status, "tensorboard", None)
    if not board:
        return ""
    where = next((getattr(board, a) for a in ("url", "address", "service") if getattr(board, a, None)), None)
    local = f"kubetrain tensorboard {job.metadata.name}"
    return _fields([("TensorBoard", f"{where} (from here: {local})" if where else local)], LABEL_WIDTH)


def _events(events: Sequence[client.Event], now: datetime.datetime) -> str:
    if not events:
        return "Events:  none\n"
    rows = [
        (
            output.age(e.time, now) + (f" (x{e.count})" if e.count > 1 else ""),
            e.type,
            e.reason,
            e.object,
            e.message,
        )
        for e in events[-RECENT_EVENTS:]
    ]
    return "Events:\n" + output.table(("age", "type", "reason", "object", "message"), rows, "  ")


def hint(job: v1beta1.TrainingJob, namespace: str | None = None) -> str | None:
    """The one next step the job's state calls for, as a person would type or do it."""
    name, ns = job.metadata.name, cluster.namespace_flag(namespace)
    s = job.status
    state = s.state or v1beta1.state_of(s.conditions)
    why = deciding(job)
    reason = why.reason if why is not None else ""
    last = s.failures[-1] if s.failures else None
    logs = f"kubetrain logs {name}{ns}" + (f" --replica {last.replica_type}/{last.index}" if last else "")
    if state is v1beta1.JobState.FAILED:
        if reason == "InvalidSpec":
            return f"fix the spec as the message says, then kubetrain delete {name}{ns} and submit it again"
        if reason == "CreateRefused":
            return (
                "the cluster refused to create its pods (message above); fix that, then submit the job again"
            )
        if reason == "ScheduleTimeout":
            return (
                "its pods found no place in time: free room on the nodes, or lower the pods' requests or "
                "schedulingPolicy.minAvailable, then submit the job again"
            )
        return logs
    if state is v1beta1.JobState.SUCCEEDED:
        return None
    refused = _condition(job, C.REPLICA_FAILURE)
    if refused is not None and refused.is_true():
        return f"the cluster refuses its pods ({refused.reason}): {refused.message}"
    scheduled = _condition(job, C.SCHEDULED)
    policy = job.spec.run_policy.scheduling_policy
    queue = policy.queue if policy is not None else None
    if scheduled is not None and not scheduled.is_true():
        if scheduled.reason == "Queued":
            return (
                f"it waits to be admitted in queue {queue} (kubectl get localqueue {queue}{ns})"
                if queue
                else "its pods are held back by scheduling gates"
            )
        timeout = policy.schedule_timeout_seconds if policy is not None else None
        then = f"; it fails after scheduleTimeoutSeconds ({timeout}s)" if timeout else ""
        return f"no room for its pods: free room on the nodes, or lower the pods' requests{then}"
    if state is v1beta1.JobState.SUSPENDED:
        if queue and reason in ("Queued", "Evicted"):  # Kueue's Workload route holds it
            return (
                f"it waits in queue {queue}; it resumes when Kueue admits its Workload "
                f"(kubectl get workloads{ns} -l {naming.JOB_NAME}={name})"
            )
        if queue:
            return f"it waits in queue {queue}; it resumes when the queue admits it"
        return (
            f"kubectl patch trainingjob {name}{ns} --type merge -p "
            """'{"spec":{"runPolicy":{"suspend":false}}}' resumes it"""
        )
    if state is v1beta1.JobState.RESTARTING and last is not None:
        return logs
    if state is v1beta1.JobState.RUNNING:
        return f"kubetrain logs {name}{ns} -f"
    if s.state is None:
        return "the operator has not reconciled this job yet: is kubetrain-operator running?"
    return None
