"""One step in the life of a TrainingJob, as a pure function.

:func:`step` takes what the job asks for (its spec), what was decided before (its
status), what is seen now (its pods, with their nodes) and the time, and returns the new
status and what to do: pods to create and delete, whether to delete the job, Events to
send, and when to look again. It never talks to the apiserver, so the reconciler is a
thin shell around it and every rule below is tested without a cluster.

A step, in order:

1. A finished job only cleans up (``cleanPodPolicy``) and expires (``ttlSecondsAfterFinished``).
2. A suspended job keeps no pods and spends nothing: its pods are moved to a new restart
   attempt, so deleting them is not a failure, and resuming resets ``startTime``. A job in a
   Kueue queue as its own Workload (:attr:`Input.admission`) is held so too until Kueue admits
   it, and again when Kueue evicts it (:mod:`~kubetrain.operator.policies.admission`).
3. Success first: once the success policy is met, failures seen in the same step do not
   matter and the remaining replicas are stopped.
4. ``activeDeadlineSeconds`` fails the job with ``DeadlineExceeded``.
5. Every new failure of a pod of the current attempt is classified, decided (rules, then
   the restart policy), charged to its class's budget and recorded; the first one that
   fails the job ends the step.
6. Restarts: a ``Pod`` restart deletes that pod (unless the kubelet restarted it in
   place); a ``ReplicaType`` or ``Job`` restart moves the type or the job to a new
   attempt, which makes every older pod stale. In a Kueue queue (:attr:`Input.queued`)
   every restart that replaces a pod moves the whole job to a new attempt: a new group.
7. Stale and surplus pods are deleted — or, after a restart in place, moved to the new attempt
   where they are (:mod:`~kubetrain.operator.policies.inplace`), and opened together once none
   of the old attempt runs; pods Terminating past the termination deadline are force-deleted.
8. Refused creates (:attr:`Input.refusals`, what the apiserver answered the last try) set
   ``ReplicaFailure`` with the apiserver's message, hold further tries back (doubling,
   1 s to 60 s), and fail the job with ``CreateRefused`` once a permanent refusal is older
   than ``refusalGraceSeconds``. The last refusal is kept in ``status.lastRefusal``, so an
   operator that restarts neither tries at once nor starts the grace again. A spec changed meanwhile (templates may be mended while
   pods are refused) is tried at once, as a new attempt, so no pod of the old spec stays.
9. Missing replicas are created — only when no stale pod is left, so a new world never
   meets an old one, and not before the restart backoff has passed.
10. ``Running`` once every replica runs (or has succeeded); ``Restarting`` until then.
11. ``Scheduled``, once the scheduler could not place a pod: False while the job waits in a
    queue (``Queued``) or cannot be placed (``Unschedulable``, with the scheduler's words),
    True once every pod is placed. ``scheduleTimeoutSeconds`` fails an unschedulable job with
    ``ScheduleTimeout`` (checked with the deadline, step 4).
12. The TensorBoard (``spec.tensorboard``): its address is in ``status.tensorboard`` from the
    first step on, and it is created while its Service is not seen (:attr:`Input.tensorboard`)
    and the job is neither finished nor suspended. Nothing here ever deletes it: the garbage
    collector does, with the job.

Failures are counted per pod UID in ``status.countedFailures``, which is written before
anything is acted on, so a failure seen again (the cache lags, a delete failed, the
operator restarted) is never charged twice. Conditions change only along
:data:`TRANSITIONS`.

Around the step, what the reconciler used to decide for itself is decided here too, so the
``World`` simulator and the property machine see it:

- **Pacing** (:mod:`~kubetrain.operator.policies.pacing`): a decision that would only write the
  starting pods' counts is held (:attr:`Input.last_write`), and the pass then due carries them.
- **Kueue releases**: in a queue, the pods the job is done with are named in
  :attr:`Decision.release`, so that Kueue frees their group's quota.
- **The job's Workload** (Kueue's Workload route): made, adopted from MultiKueue, given its
  quota back after an eviction, let go while suspended, finished with the job
  (:attr:`Decision.workload`); the pods made carry what the admission asks of them
  (:attr:`Decision.assigned`).
- **Surplus Services**: the Services of replicas a scale-down removed
  (:attr:`Decision.delete_services`).
- **Pods already made**: what this process created and its caches do not show yet
  (:attr:`Input.made`) is not created again, and nothing is created or let start beside it
  until the caches show it: it may be of an attempt a suspension or restart has since left
  behind, as the ReplicaSet controller waits for its expectations.
- **Invalid specs**: a job that cannot be read or run (:class:`Invalid`) fails once, with
  ``InvalidSpec`` and every field error, and is left alone after.
- **Jobs managed elsewhere** (``spec.managedBy``): left alone, but for one MultiKueue dispatches,
  whose Workload is made (with its PriorityClass's value) on the manager cluster.
- **Gang groups**: the groups the pods made now join and that the job is not known to have are
  created (:attr:`Decision.groups`), before the pods; a group of an attempt no pod joins any more
  is deleted (:attr:`Decision.delete_groups`), once every pod made shows in the caches (one not
  shown yet may join it); an operator that started after the job's first
  restart lists the job's groups first (:attr:`Decision.look_up_groups`). What the job has is this
  process's memory of the job's UID, never its name: a job made again under its name gets its own.
- **Creation**: the pods to create go in batches that double from 8 to 256
  (:mod:`~kubetrain.operator.policies.creation`, :attr:`Decision.batches`), after the job's shared
  objects and gang groups; a refusal stops the rest until the next pass. Each refusal of the last
  try is told once as a ``FailedCreate`` Event (:attr:`Input.untold`).
- **The finished Workload** carries the job's outcome and the message of the condition that
  ended it (:attr:`Decision.finished`).

Modules: ``values`` (what a step reads and decides), ``step`` (the step), ``refusals`` (its part
that shows and times refused creates), ``around`` (what it decides around the job's own course:
jobs managed elsewhere, pacing, gang groups, a finished Workload's outcome), ``tally`` (the replica
statuses it writes), ``invalid`` (the decision for an unreadable job), ``transitions`` (the table
of states and its diagram).
"""

from kubetrain.operator.lifecycle.step import DEFAULT_REFUSAL_GRACE_SECONDS, step
from kubetrain.operator.lifecycle.transitions import TRANSITIONS, diagram
from kubetrain.operator.lifecycle.values import (
    Decision,
    Defaults,
    Delete,
    Event,
    Finished,
    Input,
    Invalid,
    Move,
)

__all__ = [
    "DEFAULT_REFUSAL_GRACE_SECONDS",
    "TRANSITIONS",
    "Decision",
    "Defaults",
    "Delete",
    "Event",
    "Finished",
    "Input",
    "Invalid",
    "Move",
    "diagram",
    "step",
]
