"""Restart budgets: one per failure class, counted exactly.

A restart caused by user code spends ``failurePolicy.budgets.userCode`` (or
``runPolicy.backoffLimit``, which is the same limit; :data:`DEFAULT_USER_LIMIT` when
neither is set); one caused by the infrastructure spends ``budgets.infrastructure``
(unlimited unless set: preemption and node loss are not the program's fault).
``RestartUncharged`` spends nothing and is counted apart. The failure that goes over a
limit is counted too and fails the job, so a counter never exceeds its limit + 1.

With ``windowSeconds``, only the restarts of that class recorded in the failure history
within the window count against ``limit``; ``perIndexLimit`` counts the recorded
restarts of one replica. Both read the bounded history (the last 64 failures).
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence

import attrs

from kubetrain.api import v1beta1

__all__ = ["DEFAULT_USER_LIMIT", "budget_of", "charge"]

DEFAULT_USER_LIMIT = 6

Class = v1beta1.FailureClass


def budget_of(spec: v1beta1.TrainingJobSpec, failure_class: v1beta1.FailureClass) -> v1beta1.Budget:
    budgets = spec.failure_policy.budgets
    if failure_class is Class.INFRASTRUCTURE:
        return budgets.infrastructure
    limit = spec.run_policy.backoff_limit
    if limit is None:
        limit = DEFAULT_USER_LIMIT if budgets.user_code.limit is None else budgets.user_code.limit
    return attrs.evolve(budgets.user_code, limit=limit)


def charge(
    counts: v1beta1.RestartCounts,
    *,
    action: v1beta1.FailureAction,
    failure_class: v1beta1.FailureClass,
    budget: v1beta1.Budget,
    history: Sequence[v1beta1.FailureRecord],
    replica: tuple[str, int],
    now: datetime.datetime,
) -> tuple[v1beta1.RestartCounts, str | None]:
    """The counters after ``action``, and why it is over budget (``None`` if it is not)."""
    if action is v1beta1.FailureAction.RESTART_UNCHARGED:
        return attrs.evolve(counts, uncharged=counts.uncharged + 1), None
    if action is not v1beta1.FailureAction.RESTART:
        return counts, None
    if failure_class is Class.USER_CODE:
        counts = attrs.evolve(counts, user_code=counts.user_code + 1)
        spent, over = counts.user_code, "BackoffLimitExceeded"
    else:
        counts = attrs.evolve(counts, infrastructure=counts.infrastructure + 1)
        spent, over = counts.infrastructure, "InfrastructureLimitExceeded"
    charged = [
        r for r in history if r.failure_class is failure_class and r.action is v1beta1.FailureAction.RESTART
    ]
    if budget.window_seconds is not None:
        since = now - datetime.timedelta(seconds=budget.window_seconds)
        spent = 1 + sum(r.time > since for r in charged)
    if budget.limit is not None and spent > budget.limit:
        return counts, over
    if budget.per_index_limit is not None:
        same = 1 + sum((r.replica_type, r.index) == replica for r in charged)
        if same > budget.per_index_limit:
            return counts, "PerIndexLimitExceeded"
    return counts, None
