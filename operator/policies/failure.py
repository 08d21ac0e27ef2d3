"""From a classified failure to an action: failure rules first, then the restart policy.

``failurePolicy.rules`` are tried in order and the first whose every criterion matches
decides; the rule is named in the verdict. Without a match, an infrastructure failure is
restarted (it spends the infrastructure budget), and a user-code failure follows the
replica type's ``restartPolicy``:

- ``Always`` / ``OnFailure``: restart (the kubelet restarts containers in place; each
  restart spends the user-code budget);
- ``Never``: the replica's failure is final, and the job fails;
- ``ExitCode``: exit codes 128 to 255 (signals: OOM kills, preemption of the process) are
  retryable and restart the replica; 1 to 127 are permanent and fail the job at once.

A hang (``ProgressDeadlineExceeded``) has no exit code to judge and a process that still runs:
without a rule it restarts, whatever the restart policy, and spends the user-code budget.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable

import attrs

from kubetrain.api import observed, v1beta1
from kubetrain.operator.policies import classify

__all__ = [
    "Verdict",
    "describe",
    "is_retryable_exit_code",
    "matches",
    "record",
    "restarted_types",
    "scope_text",
    "verdict",
]

Action = v1beta1.FailureAction


@attrs.frozen(kw_only=True)
class Verdict:
    action: v1beta1.FailureAction
    scope: v1beta1.RestartScope
    rule: str | None = None
    reason: str
    avoid_node: bool = False  # the rule keeps replacements off the pod's node


def is_retryable_exit_code(code: int | None) -> bool:
    return code is not None and 128 <= code <= 255


def verdict(
    f: classify.Failure,
    *,
    replica_type: str,
    rules: tuple[v1beta1.FailureRule, ...],
    restart_policy: v1beta1.RestartPolicy,
    scope: v1beta1.RestartScope,
    container: str,
) -> Verdict:
    """What to do about ``f``, a failure of a pod of ``replica_type``."""
    for rule in rules:
        if matches(rule, f, replica_type=replica_type, container=container):
            return Verdict(
                action=rule.action,
                scope=rule.restart_scope or scope,
                rule=rule.name,
                reason=f"Rule:{rule.name}",
                avoid_node=rule.avoid_node,
            )
    if f.failure_class is v1beta1.FailureClass.INFRASTRUCTURE:
        return Verdict(action=Action.RESTART, scope=scope, reason="InfrastructureFailure")
    if f.hung:
        return Verdict(action=Action.RESTART, scope=scope, reason=f.reason)
    if f.pod.held and f.exit_code is None:
        # Its kubelet restarted it in place and its exit code was not seen (the operator was down
        # then): the kubelet does so only on the codes the job restarts for (inplace.restart_codes).
        return Verdict(action=Action.RESTART, scope=scope, reason="RestartedInPlace")
    match restart_policy:
        case v1beta1.RestartPolicy.ALWAYS | v1beta1.RestartPolicy.ON_FAILURE:
            return Verdict(action=Action.RESTART, scope=scope, reason="ReplicaFailed")
        case v1beta1.RestartPolicy.NEVER:
            return Verdict(action=Action.FAIL_JOB, scope=scope, reason="ReplicaFailed")
        case v1beta1.RestartPolicy.EXIT_CODE if is_retryable_exit_code(f.exit_code):
            return Verdict(action=Action.RESTART, scope=scope, reason="RetryableExitCode")
        case _:
            return Verdict(action=Action.FAIL_JOB, scope=scope, reason="PermanentExitCode")


def restarted_types(
    key: str,
    f: classify.Failure,
    scope: v1beta1.RestartScope,
    replica_types: Iterable[str],
    *,
    queued: bool,
    alone: bool,
) -> set[str]:
    """The replica types that a restart of ``scope`` for ``f``, a failure of a ``key`` pod, moves to
    a new attempt. A queued job's (Kueue admits the whole job) unless the kubelet restarted the pod
    itself; for ``Job``, every type, or ``key`` ``alone`` — the type whose main process starts every
    rank and stops them as it ends (MPI's launcher), when it restarts in place."""
    if queued and not f.in_place:
        return set(replica_types)
    if scope is v1beta1.RestartScope.JOB:
        return {key} if alone else set(replica_types)
    return {key} if scope is v1beta1.RestartScope.REPLICA_TYPE else set()


def matches(rule: v1beta1.FailureRule, f: classify.Failure, *, replica_type: str, container: str) -> bool:
    """Whether every criterion ``rule`` gives holds for ``f``."""
    if rule.replica_types and replica_type not in rule.replica_types:
        return False
    if rule.on_failure_class is not None and rule.on_failure_class is not f.failure_class:
        return False
    if rule.on_exit_codes is not None:
        code = f.pod.exit_codes.get(rule.on_exit_codes.container_name or container)
        if code is None or not rule.on_exit_codes.matches(code):
            return False
    if rule.on_reasons and not {f.reason, *f.pod.reasons} & set(rule.on_reasons):
        return False
    return set(rule.on_pod_conditions) <= f.pod.conditions


def record(
    pod: observed.Pod,
    key: str,
    f: classify.Failure,
    v: Verdict,
    action: v1beta1.FailureAction,
    now: datetime.datetime,
) -> v1beta1.FailureRecord:
    """The entry of ``status.failures`` for ``f``, a failure of ``pod``, a ``key`` replica."""
    return v1beta1.FailureRecord(
        time=now,
        replica_type=key,
        index=pod.index,
        pod=pod.name,
        node=pod.node,
        exit_code=f.exit_code,
        reason=f.reason,
        failure_class=f.failure_class,
        rule=v.rule,
        action=action,
    )


def describe(
    pod: observed.Pod, key: str, f: classify.Failure, v: Verdict, action: v1beta1.FailureAction
) -> str:
    """One line of the failure record and the Event: which pod, how it failed, what is done."""
    code = "" if f.exit_code is None else f", exit code {f.exit_code}"
    how = "hung" if f.hung else "container restarted" if f.in_place else "failed"
    rule = f" (rule {v.rule})" if v.rule else ""
    return f"{key} {pod.index} ({pod.name}) {how}: {f.failure_class.value} {f.reason}{code}; {action.value}{rule}"


def scope_text(scope: v1beta1.RestartScope, pod: observed.Pod) -> str:
    """What a restart of ``scope`` after ``pod``'s failure restarts, in words."""
    if scope is v1beta1.RestartScope.JOB:
        return "restarting every replica"
    if scope is v1beta1.RestartScope.REPLICA_TYPE:
        return f"restarting every {pod.replica_type} replica"
    return f"restarting {pod.name}"
