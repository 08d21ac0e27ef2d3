"""Execute: carry out a step's decision. The only part of the reconciler that talks to the apiserver.

In order, as :class:`~kubetrain.operator.lifecycle.Decision` says:

1. The status is written first — once, and only when it changed — as a merge patch that carries
   the ``resourceVersion`` it was computed from. A decision made on a stale copy of the job is
   refused (409) and made again, and failures are recorded before any pod is deleted for them,
   so none is lost or counted twice. A refused write ends the pass: nothing else is done.
2. The job's gang groups are listed if the decision asks (this process does not know them yet),
   its Workload is created (with the priority decided), adopted, finished (with the outcome
   decided) or requeued.
3. The creates: the job's shared objects (ConfigMap, Secret, Services: a starting pod needs its
   peers' names), then the gang groups the new pods join (a pod waits without a word for a
   group that does not exist), then the pods, in the decision's batches; a refusal stops what
   follows until the next pass. Names are deterministic, so an object created twice is refused
   with 409 and never duplicated; whose a taken name is goes by its controller's UID
   (:class:`~.observe.Holder`), and a name another object holds becomes a refusal with the
   operator's verdict as a value (``NameHeld`` while it goes, ``NameTaken`` if not). Refusals
   are remembered for the next step, which shows them and tells them once as Events.
4. Queued pods the job is done with are marked for Kueue; pods moved in place and opened; pods
   deleted with a UID precondition, so a stale decision never deletes the pod that replaced the
   one it meant; then the Services let go, the gang groups no pod joins, and an expired job.
5. Events go out last, describing a status that is stored.
"""

from __future__ import annotations

import asyncio
import datetime
from collections.abc import Callable
from typing import Any

import attrs

from kubetrain.api import meta, naming, v1beta1, wire
from kubetrain.operator import accelerators, conditions, intake, lifecycle, memory, render, tensorboard
from kubetrain.operator.frameworks import framework as fw_contract
from kubetrain.operator.observe import Caches, Holder
from kubetrain.operator.policies import creation, goodput, refusal
from kubetrain.operator.runtime import cache, client, events, informer, metrics, reconcile
from kubetrain.operator.scheduling import backend, registry, workload

__all__ = ["Executor", "delete_exactly"]

Obj = dict[str, Any]
# The kinds whose caches tell whose an object is; Secrets are not watched (their data is none of
# the operator's business once made).
CACHED = frozenset({"Pod", "Service", "ConfigMap"})


class Executor:
    def __init__(
        self,
        api: client.Client,
        *,
        caches: Caches,
        remembered: memory.Memory,
        recorder: events.Recorder,
        scheduler: backend.Backend,
        accelerator_config: accelerators.Config,
        clock: Callable[[], datetime.datetime],
    ) -> None:
        self.api, self.caches, self.memory, self.recorder = api, caches, remembered, recorder
        self.scheduler, self.accelerators, self.clock = scheduler, accelerator_config, clock

    async def run(
        self,
        obj: Obj,
        job: v1beta1.TrainingJob | None,
        fw: fw_contract.Framework | None,
        decision: lifecycle.Decision,
    ) -> float | None:
        """Carry out ``decision`` for the job stored as ``obj`` (``job`` and ``fw``: None if it
        cannot be read); when to look again."""
        old = job.status if job is not None else intake.readable_status(obj)
        md = obj["metadata"]
        mine = self.memory.of(f"{md['namespace']}/{md['name']}", md.get("uid") or "")
        # Record the decision before acting on it.
        stored = await self._write_status(obj, old, decision.status, mine)
        if stored is None:
            return 0.1
        # The step told the last try's refusals; they are told once.
        mine.untold = ()
        refused = False
        if job is not None and fw is not None:
            job = attrs.evolve(job, status=decision.status)
            refused = await self._act(job, fw, decision, mine)
        # Tell users, now that the status they will read is stored.
        for e in decision.events:
            await self.recorder.event(stored, e.type, e.reason, e.message)
        # Count jobs created, finished and restarted.
        _count(fw.name if fw is not None else "", obj, old, decision.status)
        return 0.1 if refused else decision.requeue_after

    async def _act(
        self,
        job: v1beta1.TrainingJob,
        fw: fw_contract.Framework,
        decision: lifecycle.Decision,
        mine: memory.Job,
    ) -> bool:
        """Everything after the status write; whether a create was refused."""
        if decision.look_up_groups:
            mine.groups = await self._list_groups(job)
        refused: tuple[v1beta1.Refusal, ...] | None = None
        # Create, finish or requeue the job's Workload (Kueue's Workload route).
        if decision.workload is workload.Act.CREATE:
            refused = await self._create_workload(job, fw, decision.priority)
        else:
            await self._workload(job, decision)
        # Create what is missing; the next step, at once, shows what the apiserver refused.
        if decision.create and not refused:
            refused = await self._create(job, fw, decision, mine)
        if refused is not None:
            mine.refused, mine.untold = refused, refused
        if decision.tensorboard:
            # The replicas train without it: a refusal is only told, as a FailedCreate Event.
            mine.untold += await self._tensorboard(job)
        ns = job.metadata.namespace
        # Let a queue release the quota of the pods the job is done with.
        released = {"metadata": {"annotations": {naming.KUEUE_RETRIABLE: "false"}}}
        await asyncio.gather(*(self._patch(client.PODS, n, ns, released) for n in decision.release))
        # Move pods to a new attempt in place, and open the barrier of those that moved. The UID in
        # a patch is a precondition: a stale decision never touches a pod made again.
        patches = [(m, render.moved(job.status, m.attempt)) for m in decision.move]
        patches += [(m, {"annotations": {naming.OPENED: str(m.attempt)}}) for m in decision.open]
        await asyncio.gather(
            *(self._patch(client.PODS, m.pod, ns, {"metadata": {"uid": m.uid, **p}}) for m, p in patches)
        )
        # Ask every pod for the checkpoint the status now says is asked (the kubelet puts the
        # number in the file KUBETRAIN_CHECKPOINT_FILE names).
        if decision.ask is not None:
            number, pods = decision.ask
            asked = {"metadata": {"annotations": {naming.CHECKPOINT_REQUEST: str(number)}}}
            await asyncio.gather(*(self._patch(client.PODS, n, ns, asked) for n in pods))
        # Delete what the step let go of, and the Services of replicas scaled away.
        await asyncio.gather(
            *(
                delete_exactly(self.api, client.PODS, d.pod, ns, d.uid or None, 0 if d.force else None)
                for d in decision.delete
            )
        )
        for n in decision.delete_services:
            self.memory.expected["Service"].deleted(f"{ns}/{n}", job.metadata.uid or "")
        await asyncio.gather(
            *(delete_exactly(self.api, client.SERVICES, n, ns, None) for n in decision.delete_services)
        )
        # Delete the gang groups of attempts no pod joins any more.
        if decision.delete_groups and self.scheduler.resource is not None:
            await asyncio.gather(
                *(
                    delete_exactly(self.api, self.scheduler.resource, g, ns, None)
                    for g in decision.delete_groups
                )
            )
            mine.groups = (mine.groups or frozenset()) - set(decision.delete_groups)
        # Expire a finished job.
        if decision.delete_job:
            await delete_exactly(self.api, client.TRAININGJOBS, job.metadata.name or "", ns, job.metadata.uid)
        return bool(refused)

    # --- the status --------------------------------------------------------------------------

    async def _write_status(
        self, obj: Obj, old: v1beta1.TrainingJobStatus, status: v1beta1.TrainingJobStatus, mine: memory.Job
    ) -> Obj | None:
        """Store ``status`` if it changed, only over the version read; the stored object, or None."""
        if status == old:
            return obj
        md = obj["metadata"]
        patch = {
            "metadata": {"resourceVersion": md["resourceVersion"]},
            "status": client.merge_patch_between(wire.unstructure(old), wire.unstructure(status)),
        }
        try:
            stored: Obj = await self.api.merge_patch(
                client.TRAININGJOBS, md["name"], patch, md["namespace"], subresource="status"
            )
        except client.ApiError as e:
            if e.conflict or e.not_found:
                return None
            if e.status == 422:
                # The schema refuses the status decided: the same look decides the same status, so
                # retrying cannot succeed; the job's next change brings the next pass.
                raise reconcile.TerminalError(f"status refused: {e.message}") from e
            raise
        mine.written = (md["resourceVersion"], informer.strip_managed_fields(stored))
        mine.last_write = self.clock()
        return stored

    # --- the Workload ------------------------------------------------------------------------

    async def _create_workload(
        self, job: v1beta1.TrainingJob, fw: fw_contract.Framework, priority: int | None
    ) -> tuple[v1beta1.Refusal, ...]:
        obj = render.workload(job, fw, self.scheduler, priority=priority)
        refused = await self._create_one(job, obj) if obj is not None else None
        return (refused,) if refused is not None else ()

    async def _workload(self, job: v1beta1.TrainingJob, decision: lifecycle.Decision) -> None:
        act = decision.workload
        obj = self.caches.workload_object(job) if act is not None else None
        if act is None or obj is None:
            return
        md = obj["metadata"]
        if act is workload.Act.DELETE:
            await delete_exactly(self.api, workload.WORKLOADS, md["name"], md["namespace"], md["uid"])
        elif act is workload.Act.ADOPT:
            # Over the version read: a Workload another controller took meanwhile is left to it.
            adopted = {
                "resourceVersion": md["resourceVersion"],
                "ownerReferences": render.owner_reference(job),
            }
            await self._patch(workload.WORKLOADS, md["name"], md["namespace"], {"metadata": adopted})
        elif act is workload.Act.FINISH:
            outcome = decision.finished or lifecycle.Finished(succeeded=False, message="Failed")
            patch = workload.finished_status(
                obj, succeeded=outcome.succeeded, message=outcome.message, now=self.clock()
            )
            await self._patch(workload.WORKLOADS, md["name"], md["namespace"], patch, subresource="status")
        elif act is workload.Act.REQUEUE:
            patch = workload.requeued_status(obj, now=self.clock())
            await self._patch(workload.WORKLOADS, md["name"], md["namespace"], patch, subresource="status")

    # --- creating ----------------------------------------------------------------------------

    async def _create(
        self,
        job: v1beta1.TrainingJob,
        fw: fw_contract.Framework,
        decision: lifecycle.Decision,
        mine: memory.Job,
    ) -> tuple[v1beta1.Refusal, ...]:
        """Create the pods the decision wants, as it says (the types joining an attempt under way,
        the nodes they keep off, whether they restart in place), and what they need, in its order;
        what the apiserver refused."""
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
        uid = job.metadata.uid or ""
        pods, groups, shared = [], [], []
        for o in objects:
            if o["kind"] == "Pod":
                pods.append(o)
            elif self._is_group(o):
                if o["metadata"]["name"] in decision.groups:
                    groups.append(o)
            elif not self._exists(o["kind"], cache.key_of(o), uid):
                shared.append(o)
        refused = await self._batches(job, shared, creation.batches(len(shared)))
        if not refused and groups:
            refused = await self._batches(job, groups, (len(groups),))
            made = {g["metadata"]["name"] for g in groups} - {r.name for r in refused}
            mine.groups = (mine.groups or frozenset()) | made
        if not refused:
            # Asked again just before creating: the cache has moved on since the decision.
            pods = [p for p in pods if not self._exists("Pod", cache.key_of(p), uid)]
            for p in pods:
                accelerators.apply(p, self.accelerators)
                workload.apply(p, decision.assigned.get(p["metadata"]["labels"][naming.REPLICA_TYPE]))
            refused = await self._batches(job, pods, decision.batches)
        return tuple(refused)

    async def _batches(
        self, job: v1beta1.TrainingJob, objects: list[Obj], sizes: tuple[int, ...]
    ) -> list[v1beta1.Refusal]:
        """Create ``objects`` batch after batch (``sizes`` add up to at least their number),
        stopping after a batch with a refusal."""
        start = 0
        for size in sizes:
            batch = objects[start : start + size]
            start += size
            answers = await asyncio.gather(*(self._create_one(job, o) for o in batch))
            refused = [r for r in answers if r is not None]
            if refused:
                return refused
        return []

    async def _tensorboard(self, job: v1beta1.TrainingJob) -> tuple[v1beta1.Refusal, ...]:
        """The Deployment, then its Service: a Service in the cache means both exist; what the
        apiserver refused."""
        deployment, service = tensorboard.objects(job, render.owner_reference(job))
        refused = await self._create_one(job, deployment)
        if refused is None:
            refused = await self._create_one(job, service)
        return (refused,) if refused is not None else ()

    def _exists(self, kind: str, key: str, uid: str) -> bool:
        """The job's own, in its cache, or created by this process and not shown yet."""
        expectations = self.memory.expected.get(kind)
        expected = expectations.expected(key) if expectations is not None else None
        if expected is not None:
            return expected
        held = self.caches.holder(kind, key)
        return held is not None and held.uid == uid

    def _is_group(self, obj: Obj) -> bool:
        r = self.scheduler.resource
        return r is not None and obj["kind"] == r.kind and obj["apiVersion"] == r.api_version

    async def _list_groups(self, job: v1beta1.TrainingJob) -> frozenset[str] | None:
        """The names of the job's gang groups (None: they cannot be listed now)."""
        resource = self.scheduler.resource
        if resource is None:
            return None
        selector = f"{naming.JOB_NAME}={job.metadata.name}"
        try:
            listed = await self.api.list(resource, job.metadata.namespace, labelSelector=selector)
        except client.ApiError:
            return None
        items = listed.get("items") or []
        return frozenset(g["metadata"]["name"] for g in items if meta.controlled_by(g, job.metadata.uid))

    async def _create_one(self, job: v1beta1.TrainingJob, obj: Obj) -> v1beta1.Refusal | None:
        resource = self._resource(obj)
        uid = job.metadata.uid or ""
        try:
            await self.api.create(resource, obj, obj["metadata"]["namespace"])
            if (expected := self.memory.expected.get(obj["kind"])) is not None:
                expected.created(cache.key_of(obj), uid)
            return None
        except client.ApiError as e:
            verdict: tuple[str, str] | None = None
            if e.status == 409:
                held = await self._holder(obj, resource, uid)
                if held is not None and held.uid == uid:
                    return None  # AlreadyExists: the job's own, made at an earlier pass
                verdict = _name_verdict(obj, job, held)
            elif e.not_found and (why := self._not_served(obj)) is not None:
                verdict = (refusal.NOT_SERVED_REASON, why)
            return v1beta1.Refusal(
                kind=obj["kind"],
                name=obj["metadata"]["name"],
                code=e.status,
                message=verdict[1] if verdict else e.message,
                time=self.clock(),
                observed_generation=job.metadata.generation,
                reason=verdict[0] if verdict else None,
            )

    async def _holder(self, obj: Obj, resource: client.Resource, uid: str) -> Holder | None:
        """After a 409 AlreadyExists: who holds the name (None: nothing the caches show). A kind
        the caches hold is judged from them; a Secret, a Deployment or a gang group, which no cache
        holds, is read once (a 409 is rare): a predecessor's ssh Secret taken as the job's own would
        go with the predecessor and leave the new pods waiting for it."""
        key, kind = cache.key_of(obj), obj["kind"]
        if kind in CACHED:
            expectations = self.memory.expected.get(kind)
            if expectations is not None and expectations.expected(key):
                return Holder(uid=uid)  # made by this process, not shown yet
            return self.caches.holder(kind, key)
        named = obj["metadata"]
        try:
            return Holder.of(await self.api.get(resource, named["name"], named["namespace"]))
        except client.ApiError:
            # Gone since (the next try makes it), or unreadable now: wait either way.
            return Holder(unread=True)

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

    async def _patch(
        self,
        resource: client.Resource,
        name: str,
        namespace: str | None,
        patch: Obj,
        subresource: str | None = None,
    ) -> None:
        """Merge-patch an object; gone, changed since it was read or made again (a UID or version
        precondition) is left for the next step, which sees it as it is."""
        try:
            await self.api.merge_patch(resource, name, patch, namespace, subresource=subresource)
        except client.ApiError as e:
            if not (e.conflict or e.not_found):
                raise


def _name_verdict(obj: Obj, job: v1beta1.TrainingJob, held: Holder | None) -> tuple[str, str]:
    """The operator's verdict on a name another object holds, and what it tells a person."""
    kind = obj["kind"]
    if held is None:
        # Not in the cache, which watches kubetrain's labels only: not kubetrain's (or made at an
        # earlier pass and not shown yet: the next pass tells which).
        return refusal.NAME_TAKEN_REASON, f"{refusal.NAME_TAKEN} a {kind} that is no TrainingJob's"
    if held.unread:
        return (
            refusal.NAME_HELD_REASON,
            f"{refusal.NAME_HELD} a {kind} that could not be read, until it is gone",
        )
    who = f"{held.kind} {held.name} (uid {held.uid or '?'})" if held.kind else "an object"
    predecessor = held.kind == "TrainingJob" and held.name == job.metadata.name
    if predecessor or held.going:
        return refusal.NAME_HELD_REASON, f"{refusal.NAME_HELD} {who}, until it is gone"
    return refusal.NAME_TAKEN_REASON, f"{refusal.NAME_TAKEN} {who}; rename this job or delete that {kind}"


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


def _count(framework: str, obj: Obj, old: v1beta1.TrainingJobStatus, new: v1beta1.TrainingJobStatus) -> None:
    labels = (framework, obj["metadata"].get("namespace") or "")
    for ctype, counter in (
        (v1beta1.ConditionType.CREATED, metrics.JOBS_CREATED),
        (v1beta1.ConditionType.SUCCEEDED, metrics.JOBS_SUCCEEDED),
        (v1beta1.ConditionType.FAILED, metrics.JOBS_FAILED),
    ):
        if conditions.is_true(new.conditions, ctype) and not conditions.is_true(old.conditions, ctype):
            counter.labels(*labels).inc()
    restarted = new.restarts.total - old.restarts.total
    if restarted > 0:
        metrics.JOBS_RESTARTED.labels(*labels).inc(restarted)
    # The seconds the write accounted, by cause (each part only grows while the job lives).
    if new.goodput is not None:
        before = goodput.parts(old.goodput) if old.goodput is not None else {}
        for cause, seconds in goodput.parts(new.goodput).items():
            if seconds > before.get(cause, 0):
                metrics.GOODPUT_SECONDS.labels(*labels, cause.value).inc(seconds - before.get(cause, 0))
