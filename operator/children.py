"""Creating a job's children, and telling whose a name is when the apiserver says it is taken.

:meth:`Children.create` makes what a decision asks for. The ConfigMap, the Secret and the
Services come first: a starting pod needs its peers' names, and no pod starts without them (a
name another Service holds would lead it astray). Then, with a gang scheduler, each new
attempt's group object, since a pod waits without a word for a group that does not exist, and
the previous attempt's group is deleted. Then the wanted pods, rendered alone: replacing one pod
costs one pod's rendering, however large the job.

Names are deterministic, so an object created twice (the cache lagged, the operator restarted
mid-pass) is refused by the apiserver with 409 and never duplicated. Whose an object is goes by
its controller's uid, never by the job's name: a 409 for a name another object holds (a deleted
predecessor's pod still stopping, a user's Service) is a refusal, ``NameHeld`` while it goes
and ``NameTaken`` if it is not going. Every refusal (that, quota, a missing ServiceAccount,
PodSecurity, ...) is sent as a ``FailedCreate`` Event and returned, for the next step to show
as the job's ``ReplicaFailure`` condition and to pace the next try.

The TensorBoard's Deployment and Service are created by :meth:`Children.tensorboard`, the
Deployment first, so that its Service in the cache means both exist; a refusal there is a
``FailedCreate`` Event only (the replicas train without it).
"""

from __future__ import annotations

import asyncio
import datetime
from collections.abc import Callable
from typing import Any

from kubetrain.api import meta, naming, scheme, v1beta1
from kubetrain.operator import accelerators, lifecycle, memory, render, tensorboard
from kubetrain.operator.frameworks import framework as fw_contract
from kubetrain.operator.policies import refusal
from kubetrain.operator.runtime import cache, client, events
from kubetrain.operator.scheduling import backend, registry, workload

__all__ = ["Children", "delete_exactly"]

Obj = dict[str, Any]
# The creates of one pass in flight at once: the first batch, and the most a batch doubles to.
FIRST_BATCH = 8
MAX_BATCH = 256


class Children:
    def __init__(
        self,
        api: client.Client,
        *,
        stores: dict[str, cache.Store],
        remembered: memory.Memory,
        recorder: events.Recorder,
        scheduler: backend.Backend,
        accelerator_config: accelerators.Config,
        clock: Callable[[], datetime.datetime],
    ) -> None:
        self.api, self.stores, self.memory, self.recorder = api, stores, remembered, recorder
        self.scheduler, self.accelerators, self.clock = scheduler, accelerator_config, clock

    async def create(
        self,
        job: v1beta1.TrainingJob,
        fw: fw_contract.Framework,
        decision: lifecycle.Decision,
    ) -> tuple[v1beta1.Refusal, ...]:
        """Create the pods the decision wants, as it says (the types joining an attempt under way,
        the nodes they keep off, whether they restart in place), and what they need; what the
        apiserver refused."""
        objects = render.render(
            job,
            fw,
            self.scheduler,
            pods=set(decision.create),
            joining=decision.joining,
            keep_off=decision.keep_off,
            in_place=decision.in_place,
            closed=decision.closed,
            with_tensorboard=False,
        )
        pods = [o for o in objects if o["kind"] == "Pod" and not self._cached(job, o)]
        for pod in pods:
            accelerators.apply(pod, self.accelerators)
            workload.apply(pod, decision.assigned.get(pod["metadata"]["labels"][naming.REPLICA_TYPE]))
        groups = [o for o in objects if self._is_group(o)]
        shared = [
            o for o in objects if o["kind"] != "Pod" and not self._is_group(o) and not self._cached(job, o)
        ]
        refused = await self._slow_start(job, shared)
        if not refused:
            refused_groups = await self._create_groups(job, groups, pods)
            pods = [p for p in pods if p["metadata"]["labels"].get(naming.GANG) not in refused_groups]
            refused += list(refused_groups.values())
            refused += await self._slow_start(job, pods)
        return tuple(refused)

    async def _slow_start(self, job: v1beta1.TrainingJob, objects: list[Obj]) -> list[v1beta1.Refusal]:
        """Create ``objects`` in batches that double from :data:`FIRST_BATCH` up to
        :data:`MAX_BATCH`, stopping after a batch with a refusal: what was not tried is made at a
        later pass (as Kubernetes' Job and ReplicaSet controllers do). A 10,000-pod job sent at
        once queued its creates at the apiserver past the client's timeout: 115 timed out there,
        and 13,000 FailedCreate events were written for the creates the client gave up on."""
        refused: list[v1beta1.Refusal] = []
        size, start = FIRST_BATCH, 0
        while start < len(objects) and not refused:
            batch = objects[start : start + size]
            answers = await asyncio.gather(*(self._create_one(job, o) for o in batch))
            refused = [r for r in answers if r is not None]
            start, size = start + len(batch), min(2 * size, MAX_BATCH)
        return refused

    async def workload(
        self, job: v1beta1.TrainingJob, fw: fw_contract.Framework, priority: int | None
    ) -> tuple[v1beta1.Refusal, ...]:
        """Create the job's Workload (Kueue's Workload route); what the apiserver refused."""
        obj = render.workload(job, fw, self.scheduler, priority=priority)
        refused = await self._create_one(job, obj) if obj is not None else None
        return (refused,) if refused is not None else ()

    async def tensorboard(self, job: v1beta1.TrainingJob) -> None:
        """The Deployment, then its Service: a Service in the cache means both exist."""
        deployment, service = tensorboard.objects(job, render.owner_reference(job))
        if await self._create_one(job, deployment) is None:
            await self._create_one(job, service)

    def exists(self, job: v1beta1.TrainingJob, kind: str, key: str) -> bool:
        """The job's own, in its cache, or created by this process and not shown yet."""
        expectations = self.memory.expected.get(kind)
        expected = expectations.expected(key) if expectations is not None else None
        if expected is not None:
            return expected
        store = self.stores.get(kind)
        found = store.get(key) if store is not None else None
        return found is not None and meta.controlled_by(found, job.metadata.uid)

    # --- gangs -----------------------------------------------------------------------------

    def _is_group(self, obj: Obj) -> bool:
        r = self.scheduler.resource
        return r is not None and obj["kind"] == r.kind and obj["apiVersion"] == r.api_version

    async def _create_groups(
        self, job: v1beta1.TrainingJob, groups: list[Obj], pods: list[Obj]
    ) -> dict[str, v1beta1.Refusal]:
        """Create the gangs the new pods join, forget older ones; group name -> refusal."""
        resource = self.scheduler.resource
        if resource is None:
            return {}
        made = self.memory.of(_key(job)).groups
        wanted = {g for p in pods if (g := p["metadata"]["labels"].get(naming.GANG)) is not None}
        new = [g for g in groups if g["metadata"]["name"] in wanted - made]
        answers = await asyncio.gather(*(self._create_one(job, g) for g in new))
        refused = {g["metadata"]["name"]: r for g, r in zip(new, answers, strict=True) if r is not None}
        made |= {g["metadata"]["name"] for g in new} - set(refused)
        # A gang of an attempt no pod joins any more (with the gangs of pods that joined that
        # attempt later): its own pods are gone or going, and the scheduler keeps it (a
        # finalizer) until they are.
        current = {g["metadata"]["name"] for g in groups}
        for name in sorted(n for n in made if not any(n == c or n.startswith(c + "-") for c in current)):
            made.discard(name)
            await delete_exactly(self.api, resource, name, job.metadata.namespace, None)
        return refused

    # --- one object ------------------------------------------------------------------------

    def _cached(self, job: v1beta1.TrainingJob, obj: Obj) -> bool:
        """Whether ``obj`` exists, as far as this process knows now. Asked again just before
        creating: the decision was made before the status write, and the cache has moved on since."""
        return self.exists(job, obj["kind"], cache.key_of(obj))

    async def _create_one(self, job: v1beta1.TrainingJob, obj: Obj) -> v1beta1.Refusal | None:
        resource = self._resource(obj)
        try:
            await self.api.create(resource, obj, obj["metadata"]["namespace"])
            if (expected := self.memory.expected.get(obj["kind"])) is not None:
                expected.created(cache.key_of(obj), _key(job))
        except client.ApiError as e:
            taken = await self._taken(job, obj, resource) if e.status == 409 else None
            if e.status == 409 and taken is None:
                return None  # AlreadyExists: the job's own, made at an earlier pass
            name = obj["metadata"]["name"]
            # A 404 for a group is the cluster not serving the backend's API (namespaces are
            # found: the job is in one).
            message = taken or (e.not_found and self._not_served(obj)) or e.message
            await self.recorder.event(
                scheme.encode(job), "Warning", "FailedCreate", f"{obj['kind']} {name}: {message}"
            )
            return v1beta1.Refusal(
                kind=obj["kind"],
                name=name,
                code=e.status,
                message=message,
                time=self.clock(),
                observed_generation=job.metadata.generation,
            )
        return None

    def _resource(self, obj: Obj) -> client.Resource:
        if self._is_group(obj):
            assert self.scheduler.resource is not None
            return self.scheduler.resource
        if obj["kind"] == workload.WORKLOADS.kind:
            return workload.WORKLOADS
        return client.CHILDREN[obj["kind"]]

    def _not_served(self, obj: Obj) -> str | None:
        """Why a create of ``obj`` was answered 404, if its kind may not be served: a gang group's
        or a Workload's (namespaces are found: the job is in one)."""
        if self._is_group(obj):
            return registry.not_served(self.scheduler)
        if obj["kind"] == workload.WORKLOADS.kind:
            return f"{obj['kind']} {obj['apiVersion']} {registry.NOT_SERVED} (schedulingPolicy.queue names a Kueue LocalQueue: install Kueue, then restart kubetrain-operator)"
        return None

    async def _taken(self, job: v1beta1.TrainingJob, obj: Obj, resource: client.Resource) -> str | None:
        """After a 409 AlreadyExists: why the name is not the job's, or None if the object is.

        A kind the caches hold is judged from them; a Secret, a Deployment or a gang group, which
        no cache holds, is read once (a 409 is rare): a predecessor's ssh Secret taken as the
        job's own would go with the predecessor and leave the new pods waiting for it.
        """
        key = cache.key_of(obj)
        store = self.stores.get(obj["kind"])
        if store is not None:
            if self.exists(job, obj["kind"], key):
                return None
            held = store.get(key)
        else:
            named = obj["metadata"]
            try:
                held = await self.api.get(resource, named["name"], named["namespace"])
            except client.ApiError as e:
                # Gone since (the next try makes it), or unreadable now: wait either way.
                return f"{refusal.NAME_HELD} a {obj['kind']} that could not be read ({e}), until it is gone"
        if held is None:
            # Not kubetrain's (the caches watch its labels only), or made at an earlier pass and
            # not shown yet: the next pass, a second later, tells which.
            return f"{refusal.NAME_TAKEN} a {obj['kind']} that is no TrainingJob's"
        owner = meta.controller_of(held)
        if owner is not None and owner.get("uid") == job.metadata.uid:
            return None
        holder = f"{owner['kind']} {owner['name']} (uid {owner.get('uid', '?')})" if owner else "an object"
        predecessor = (
            owner is not None and owner["kind"] == "TrainingJob" and owner["name"] == job.metadata.name
        )
        if predecessor or held["metadata"].get("deletionTimestamp"):
            return f"{refusal.NAME_HELD} {holder}, until it is gone"
        return f"{refusal.NAME_TAKEN} {holder}; rename this job or delete that {obj['kind']}"


async def delete_exactly(
    api: client.Client,
    resource: client.Resource,
    name: str,
    namespace: str | None,
    uid: str | None,
    grace: int | None = None,
) -> None:
    """Delete that incarnation of ``name``; gone already, or replaced by a newer one, is fine."""
    try:
        await api.delete(resource, name, namespace, grace_period_seconds=grace, uid=uid)
    except client.ApiError as e:
        if not (e.not_found or e.conflict):
            raise


def _key(job: v1beta1.TrainingJob) -> str:
    return f"{job.metadata.namespace}/{job.metadata.name}"
