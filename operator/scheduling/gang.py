"""Which pods of a job must be placed together: one gang per restart attempt.

Pods carry the restart attempt of their replica type, and a new attempt always takes the
next number after every attempt so far. So a gang is named by the attempt —
``{job}-gang-{attempt}`` — and holds exactly the pods created for it: every replica on the
first attempt, or after a restart of the whole job; the restarted replica types after a
``ReplicaType`` restart. The group objects the schedulers read have immutable specs, which is
why a new attempt gets a new gang rather than an edited one.

Pods created into an attempt already under way — a replacement after a ``Pod`` restart, workers
added by scaling, MPI's launcher once its workers are ready — do not join its gang: its other
members may have finished, and a gang whose members cannot all be placed again is never placed
(the pod would wait for ever). They are a gang of their own (:func:`of_joiners`), placed
together, or no gang at all when one pod is created alone.

``minCount`` is ``schedulingPolicy.minAvailable`` when set, else every pod of the gang — less
the replicas a framework starts only once others are ready (MPI's launcher): waiting for them
to be placed together with the pods they wait for would deadlock, so they join the placed
gang afterwards. An elastic PyTorch job trains with ``minReplicas`` nodes, so that is all its
gang waits for.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

import attrs

from kubetrain.api import observed, v1beta1

__all__ = ["Gang", "attempt_of", "joined", "name", "of_attempts", "of_joiners", "stale", "wanted"]


@attrs.frozen(kw_only=True)
class Gang:
    job: str
    namespace: str
    attempt: int
    size: int  # pods that join the gang together (replicas started later join it afterwards)
    min_count: int  # pods the scheduler must place together
    queue: str | None = None
    priority_class: str | None = None
    timeout_seconds: int | None = None

    # Set for the pods created into an attempt under way: the first of them ("worker-3"),
    # which names their gang apart from the attempt's own.
    joining: str | None = None

    @property
    def name(self) -> str:
        base = name(self.job, self.attempt)
        return base if self.joining is None else f"{base}-{self.joining}-{self.size}"

    def of_attempt(self, attempt_gang: str) -> bool:
        """Whether this is ``attempt_gang`` or a gang of pods that joined its attempt later."""
        return self.name == attempt_gang or self.name.startswith(attempt_gang + "-")


def name(job: str, attempt: int) -> str:
    return f"{job}-gang-{attempt}"


def attempt_of(job: str, group: str) -> int | None:
    """The attempt a group of ``job`` was made for (its own gang, or one of pods that joined it
    later), or None for a name that is no gang of ``job``'s."""
    prefix = f"{job}-gang-"
    if not group.startswith(prefix):
        return None
    number = group[len(prefix) :].partition("-")[0]
    return int(number) if number.isdigit() else None


def stale(
    job: str, groups: Collection[str], attempts: Collection[int], joined: Collection[str]
) -> tuple[str, ...]:
    """The groups of ``job`` that no pod joins any more: made for an attempt none of ``attempts``
    (the job's attempts now) is, and none of ``joined`` (the groups its pods were placed with: a
    pod moved to a new attempt in place, or one still stopping, keeps its group)."""
    return tuple(sorted(g for g in groups if attempt_of(job, g) not in attempts and g not in joined))


def of_attempts(job: v1beta1.TrainingJob, late: Mapping[str, bool] | None = None) -> dict[str, Gang]:
    """Replica type -> the gang its pods join now. ``late``: types started after others."""
    late = late or {}
    attempts = {
        key: job.status.replica_statuses.get(key, v1beta1.ReplicaStatus()).attempt
        for key in job.spec.replica_specs
    }
    policy = job.spec.run_policy.scheduling_policy or v1beta1.SchedulingPolicy()
    gangs: dict[int, Gang] = {}
    for attempt in sorted(set(attempts.values())):
        keys = [k for k, a in attempts.items() if a == attempt]
        first_wave = sum(job.spec.replica_specs[k].replicas for k in keys if not late.get(k))
        size = first_wave or sum(job.spec.replica_specs[k].replicas for k in keys)
        wanted = policy.min_available if policy.min_available is not None else _fewest(job, size)
        gangs[attempt] = Gang(
            job=job.metadata.name or "",
            namespace=job.metadata.namespace or "default",
            attempt=attempt,
            size=size,
            min_count=max(1, min(wanted, size)),
            queue=policy.queue,
            priority_class=policy.priority_class,
            timeout_seconds=policy.schedule_timeout_seconds,
        )
    return {key: gangs[a] for key, a in attempts.items()}


def _fewest(job: v1beta1.TrainingJob, size: int) -> int:
    """The fewest pods the job trains with: ``minReplicas`` of an elastic job, else all."""
    elastic = job.spec.framework.elastic
    return size if elastic is None else min(size, elastic.min_replicas)


def of_joiners(job: v1beta1.TrainingJob, pods: Collection[tuple[str, int]], base: Gang) -> Gang | None:
    """The gang of ``pods`` (replica type, index), created together into ``base``'s attempt
    while it is under way: all of them placed together, or None for one pod alone."""
    if len(pods) < 2:
        return None
    key, index = min(pods, key=lambda p: (p[0].lower(), p[1]))
    return attrs.evolve(base, size=len(pods), min_count=len(pods), joining=f"{key.lower()}-{index}")


def joined(
    job: v1beta1.TrainingJob,
    gangs: Mapping[str, Gang],
    joining: Collection[str],
    created: Collection[tuple[str, int]],
) -> dict[str, Gang | None]:
    """Replica type (of ``joining``) -> the gang of its pods of ``created`` (replica type, index),
    made into an attempt under way (None: alone)."""
    out: dict[str, Gang | None] = {}
    for attempt in sorted({gangs[k].attempt for k in joining if k in gangs}):
        keys = [k for k in joining if k in gangs and gangs[k].attempt == attempt]
        mine = [(t, i) for t, i in created if t in keys]
        out.update(dict.fromkeys(keys, of_joiners(job, mine, gangs[keys[0]])))
    return out


def wanted(
    job: v1beta1.TrainingJob,
    created: Collection[tuple[str, int]],
    joining: Collection[str],
    late: Mapping[str, bool],
) -> frozenset[str]:
    """The names of the gangs the pods ``created`` (replica type, index) join."""
    gangs = of_attempts(job, late)
    joins = joined(job, gangs, joining, created)
    found = (joins[t] if t in joins else gangs[t] for t, _ in created)
    return frozenset(g.name for g in found if g is not None)


def joining(
    creates: Collection[tuple[str, int]], attempts: Mapping[str, int], pods: Collection[observed.Pod]
) -> tuple[str, ...]:
    """The replica types of ``creates`` created into an attempt whose gang was placed already: some
    pod of it (of ``pods``, the job's) has been on a node, or has ended, or went. Pods of an
    attempt none of whose pods was ever placed join its gang, so that it can still be placed whole."""
    placed = {p.attempt for p in pods if p.node is not None or p.finished or p.vanished}
    created = dict.fromkeys(k for k, _ in creates)
    return tuple(k for k in created if attempts[k] in placed)
