"""Gang scheduling and queues: what makes a scheduler place a job's pods together.

:mod:`.gang` says which pods form a gang (one per restart attempt) and how many must be
placed together; a :mod:`.backend` renders the group object a scheduler reads and marks
the pods that join it — :mod:`.native` (Kubernetes' own PodGroup), :mod:`.coscheduling`
(scheduler-plugins), :mod:`.volcano`; :mod:`.workload` makes a job in a Kueue queue wait as its own Workload, :mod:`.kueue_pods` as plain-pod groups; and
:mod:`.registry` maps the operator's ``--gang-scheduler`` flag to a backend; :mod:`.spread`
says how a job's pods spread over nodes, so that kube-scheduler need not read the namespace's
Services to guess. All of it is pure, so ``kubetrain render`` uses it without the operator's
runtime: which backend a cluster serves (``auto``) is asked by the operator's process
(:func:`kubetrain.operator.main.detect`).
"""

from kubetrain.operator.scheduling import (
    backend,
    coscheduling,
    gang,
    kueue_pods,
    native,
    registry,
    spread,
    volcano,
    workload,
)

__all__ = [
    "backend",
    "coscheduling",
    "gang",
    "kueue_pods",
    "native",
    "registry",
    "spread",
    "volcano",
    "workload",
]
