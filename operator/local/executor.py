"""Execute, on one machine: a step's decision carried out on processes instead of the apiserver.

The reconciler's :mod:`~kubetrain.operator.execute` writes the decided status, creates the pods
(rendered with the job's status of the moment), deletes pods with a UID precondition and a grace
period, and sends Events. :class:`Executor` does the same, in the same order, to a local run:

1. the status decided becomes the job's (a status written: it is told as :class:`~.said.Changed`,
   and its time is the last write that pacing counts from, as the operator's memory keeps it);
2. the pods to create are rendered for exactly those replicas, with that status, and started by
   the :class:`~.kubelet.Kubelet`; a pod still there under the name is not made twice;
3. the pods to delete are stopped if they are still the pod of that UID (SIGTERM, SIGKILL after
   their grace period; at once when the step forces it);
4. the Events are told, now that the status they describe is the job's.

What a local run has none of is never asked by a step that reads :class:`~.caches.LocalCaches`:
no Kueue (releases, Workloads), no gang groups, no Services of replicas scaled away, no
TensorBoard, and no restarts in place (no node declares it): the decision's fields for them stay
empty, and are left so here.
"""

from __future__ import annotations

import attrs

from kubetrain.api import naming, v1beta1
from kubetrain.operator import lifecycle
from kubetrain.operator.local import caches, kubelet, prepared, said

__all__ = ["Executor"]


class Executor:
    def __init__(
        self,
        run: prepared.Prepared,
        pods: kubelet.Kubelet,
        mine: caches.Mine,
        tell: said.Tell,
    ) -> None:
        self.run_, self.pods, self.mine, self.tell = run, pods, mine, tell

    def run(self, job: v1beta1.TrainingJob, decision: lifecycle.Decision) -> v1beta1.TrainingJob:
        """Carry out ``decision`` for ``job``; the job with the status decided."""
        if decision.status != job.status:
            job = attrs.evolve(job, status=decision.status)
            self.mine.last_write = self.pods.clock()
            self.tell(said.Changed(job=job))
        self.mine.untold = ()
        wanted = [p for p in decision.create if not self.pods.has(_name(job, p))]
        if wanted:
            for launch in self.run_.launches(job, wanted):
                self.pods.create(launch)
        for d in decision.delete:
            self.pods.delete(d.pod, d.uid, force=d.force)
        for e in decision.events:
            self.tell(said.Told(event=e))
        return job


def _name(job: v1beta1.TrainingJob, replica: tuple[str, int]) -> str:
    return naming.replica_name(job.metadata.name or "", *replica)
