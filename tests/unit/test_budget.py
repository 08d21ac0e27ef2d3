"""Budgets per failure class, counted exactly, with windows and per-replica limits."""

import datetime

from testkit.builders import a_job

from kubetrain.api import v1beta1
from kubetrain.operator.policies import budget

NOW = datetime.datetime(2026, 11, 21, 12, 0, tzinfo=datetime.UTC)
USER, INFRA = v1beta1.FailureClass.USER_CODE, v1beta1.FailureClass.INFRASTRUCTURE
A = v1beta1.FailureAction


def record(cls: v1beta1.FailureClass, seconds_ago: int, index: int = 0) -> v1beta1.FailureRecord:
    return v1beta1.FailureRecord(
        time=NOW - datetime.timedelta(seconds=seconds_ago),
        replica_type="Worker",
        index=index,
        pod=f"w-{index}",
        failure_class=cls,
        action=A.RESTART,
    )


def charge(
    counts: v1beta1.RestartCounts,
    cls: v1beta1.FailureClass,
    b: v1beta1.Budget,
    *history: v1beta1.FailureRecord,
    action: v1beta1.FailureAction = A.RESTART,
) -> tuple[v1beta1.RestartCounts, str | None]:
    return budget.charge(
        counts, action=action, failure_class=cls, budget=b, history=history, replica=("Worker", 0), now=NOW
    )


def test_each_class_spends_its_own_counter_and_the_one_over_is_counted() -> None:
    b = v1beta1.Budget(limit=1)
    counts, over = charge(v1beta1.RestartCounts(), USER, b)
    assert counts == v1beta1.RestartCounts(user_code=1)
    assert over is None
    counts, over = charge(counts, USER, b)
    assert counts.user_code == 2
    assert over == "BackoffLimitExceeded"
    counts, over = charge(v1beta1.RestartCounts(user_code=5), INFRA, b)
    assert counts == v1beta1.RestartCounts(user_code=5, infrastructure=1)
    assert over is None


def test_uncharged_restarts_and_other_actions_spend_nothing() -> None:
    zero = v1beta1.Budget(limit=0)
    assert charge(v1beta1.RestartCounts(), USER, zero, action=A.RESTART_UNCHARGED) == (
        v1beta1.RestartCounts(uncharged=1),
        None,
    )
    assert charge(v1beta1.RestartCounts(), USER, zero, action=A.TOLERATE) == (v1beta1.RestartCounts(), None)
    assert charge(v1beta1.RestartCounts(), USER, zero, action=A.FAIL_JOB) == (v1beta1.RestartCounts(), None)


def test_a_window_counts_only_recent_restarts_of_the_class() -> None:
    b = v1beta1.Budget(limit=2, window_seconds=60)
    old = [record(USER, 61), record(USER, 90)]
    _, over = charge(v1beta1.RestartCounts(user_code=2), USER, b, *old, record(INFRA, 1))
    assert over is None
    _, over = charge(v1beta1.RestartCounts(user_code=2), USER, b, *old, record(USER, 1), record(USER, 59))
    assert over == "BackoffLimitExceeded"


def test_a_per_index_limit_counts_one_replicas_restarts() -> None:
    b = v1beta1.Budget(per_index_limit=1)
    _, over = charge(v1beta1.RestartCounts(), USER, b, record(USER, 5, index=1))
    assert over is None
    _, over = charge(v1beta1.RestartCounts(), USER, b, record(USER, 5, index=0))
    assert over == "PerIndexLimitExceeded"


def test_the_user_budget_comes_from_backoff_limit_or_the_budget_or_the_default() -> None:
    job = a_job().replicas("Worker", 1).build()
    assert budget.budget_of(job.spec, USER).limit == budget.DEFAULT_USER_LIMIT
    assert budget.budget_of(job.spec, INFRA).limit is None
    spec = a_job().replicas("Worker", 1).with_spec(run_policy=v1beta1.RunPolicy(backoff_limit=0)).build().spec
    assert budget.budget_of(spec, USER).limit == 0
    fp = v1beta1.FailurePolicy(budgets=v1beta1.Budgets(user_code=v1beta1.Budget(limit=9, window_seconds=5)))
    spec = a_job().replicas("Worker", 1).with_spec(failure_policy=fp).build().spec
    assert budget.budget_of(spec, USER) == v1beta1.Budget(limit=9, window_seconds=5)
