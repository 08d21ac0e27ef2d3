"""The operator's caches over a local run's pods: :class:`~kubetrain.operator.observe.Caches`.

:func:`kubetrain.operator.observe.observe` reads a job's world through this small interface; the
operator's informers implement it over a cluster, the tests' ``World`` over a simulated one, and
:class:`LocalCaches` over the :class:`~.kubelet.Kubelet`'s processes. So a local run's step sees
the very input a cluster's would, made by the same code, with what one machine does not have
said plainly: no Services (the replicas are reached at 127.0.0.1), no gang groups, no Workload,
no PriorityClass, no unhealthy node or one about to go, no kubelet that restarts pods in place (a restart with
``restartMethod: InPlace`` makes the pods again, as ``Recreate``). The TensorBoard is not run
here: its Service is taken as there, so the step does not ask for it again and again.

What this process remembers of the job (:class:`Mine`) is the operator's memory of a job's UID
reduced to what a local run has: its last status write; nothing is ever refused, and a pod made
is shown at once (:data:`NOTHING` expected).
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable
from typing import Any

import attrs

from kubetrain.api import naming, observed, v1beta1
from kubetrain.operator import observe
from kubetrain.operator.local import kubelet as kubelet_
from kubetrain.operator.scheduling import workload

__all__ = ["NOTHING", "LocalCaches", "Mine"]


class LocalCaches:
    """What the caches would show of the local run's pods."""

    def __init__(self, kubelet: kubelet_.Kubelet, job: str) -> None:
        self.kubelet = kubelet
        self._tensorboard = naming.tensorboard_name(job)

    def pods(self, key: str, uid: str) -> Iterable[observed.Pod]:
        return self.kubelet.pods()

    def gone(self, key: str, uid: str) -> Iterable[observed.Pod]:
        return self.kubelet.gone()

    def services(self, key: str, uid: str) -> Iterable[tuple[str, observed.Service]]:
        return ()

    def shows(self, kind: str, key: str) -> bool:
        name = key.partition("/")[2]
        if kind == "Pod":
            return self.kubelet.has(name)
        return kind == "Service" and name == self._tensorboard

    def holder(self, kind: str, key: str) -> observe.Holder | None:
        return None

    def workload(self, job: v1beta1.TrainingJob) -> workload.Seen | None:
        return None

    def workload_object(self, job: v1beta1.TrainingJob) -> dict[str, Any] | None:
        return None

    def priority(self, name: str) -> int | None:
        return None

    def unhealthy(self) -> frozenset[str]:
        return frozenset()

    def noticed(self) -> frozenset[str]:
        return frozenset()

    def in_place(self) -> bool:
        return False


@attrs.define(kw_only=True)
class Mine:
    """This run's memory of its job (:class:`~kubetrain.operator.observe.Mine`)."""

    refused: tuple[v1beta1.Refusal, ...] | None = None
    untold: tuple[v1beta1.Refusal, ...] = ()
    last_write: datetime.datetime | None = None
    groups: frozenset[str] | None = None


class _Nothing:
    """Nothing made or deleted that the caches do not show: a local pod is seen as it is made."""

    def expected(self, key: str, /) -> bool | None:
        return None

    def pending(self, owner: str, /) -> Iterable[str]:
        return ()


NOTHING = _Nothing()
