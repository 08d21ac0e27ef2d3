"""Rules first, then the restart policy: what a failure leads to."""

import pytest

from kubetrain.api import observed, v1beta1
from kubetrain.operator.policies import classify, failure

A, P = v1beta1.FailureAction, v1beta1.RestartPolicy
SCOPE = v1beta1.RestartScope.POD


def user_failure(code: int, container: str = "main", reason: str = "Error") -> classify.Failure:
    pod = observed.Pod(
        name="p", uid="u", replica_type="worker", index=0, exit_codes={container: code}, reasons=(reason,)
    )
    return classify.Failure(
        pod=pod, failure_class=v1beta1.FailureClass.USER_CODE, reason=reason, exit_code=code
    )


def decide(
    f: classify.Failure, policy: v1beta1.RestartPolicy, *rules: v1beta1.FailureRule
) -> failure.Verdict:
    return failure.verdict(
        f, replica_type="Worker", rules=rules, restart_policy=policy, scope=SCOPE, container="main"
    )


@pytest.mark.parametrize(
    ("code", "action"),
    [(1, A.FAIL_JOB), (127, A.FAIL_JOB), (128, A.RESTART), (137, A.RESTART), (255, A.RESTART)],
)
def test_exit_code_policy_splits_permanent_from_retryable(code: int, action: v1beta1.FailureAction) -> None:
    v = decide(user_failure(code), P.EXIT_CODE)
    assert v.action is action
    assert v.reason == ("RetryableExitCode" if action is A.RESTART else "PermanentExitCode")


@pytest.mark.parametrize(
    ("policy", "action"), [(P.NEVER, A.FAIL_JOB), (P.ON_FAILURE, A.RESTART), (P.ALWAYS, A.RESTART)]
)
def test_other_restart_policies(policy: v1beta1.RestartPolicy, action: v1beta1.FailureAction) -> None:
    assert decide(user_failure(1), policy).action is action


def test_infrastructure_failures_restart_whatever_the_restart_policy() -> None:
    pod = observed.Pod(name="p", uid="u", replica_type="worker", index=0)
    f = classify.Failure(pod=pod, failure_class=v1beta1.FailureClass.INFRASTRUCTURE, reason="Evicted")
    v = decide(f, P.NEVER)
    assert (v.action, v.reason) == (A.RESTART, "InfrastructureFailure")


def test_the_first_rule_whose_every_criterion_matches_wins() -> None:
    rules = (
        v1beta1.FailureRule(name="otherType", action=A.TOLERATE, replica_types=("PS",)),
        v1beta1.FailureRule(
            name="sidecar",
            action=A.TOLERATE,
            on_exit_codes=v1beta1.ExitCodeMatch(container_name="side", values=(1,)),
        ),
        v1beta1.FailureRule(
            name="signals",
            action=A.RESTART_UNCHARGED,
            on_exit_codes=v1beta1.ExitCodeMatch(ranges=(v1beta1.ExitCodeRange(min=128, max=159),)),
            restart_scope=v1beta1.RestartScope.JOB,
        ),
        v1beta1.FailureRule(name="anything", action=A.FAIL_JOB),
    )
    v = decide(user_failure(137), P.NEVER, *rules)
    assert (v.action, v.rule, v.reason, v.scope) == (
        A.RESTART_UNCHARGED,
        "signals",
        "Rule:signals",
        v1beta1.RestartScope.JOB,
    )
    assert decide(user_failure(1), P.EXIT_CODE, *rules).rule == "anything"


def test_not_in_matches_codes_outside_the_list_and_conditions_must_all_hold() -> None:
    not_in = v1beta1.FailureRule(
        name="notZeroOrOne",
        action=A.TOLERATE,
        on_exit_codes=v1beta1.ExitCodeMatch(operator=v1beta1.ExitCodeOperator.NOT_IN, values=(0, 1)),
    )
    assert decide(user_failure(2), P.NEVER, not_in).rule == "notZeroOrOne"
    assert decide(user_failure(1), P.NEVER, not_in).rule is None
    both = v1beta1.FailureRule(
        name="both", action=A.TOLERATE, on_pod_conditions=("DisruptionTarget", "Ready")
    )
    assert decide(user_failure(1), P.NEVER, both).rule is None
    reasons = v1beta1.FailureRule(name="oom", action=A.TOLERATE, on_reasons=("OOMKilled",))
    assert decide(user_failure(137, reason="OOMKilled"), P.NEVER, reasons).rule == "oom"
