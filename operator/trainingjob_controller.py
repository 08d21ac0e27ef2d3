"""The TrainingJob reconciler: one for every framework, driven by the framework registry.

It reads, asks :func:`kubetrain.operator.lifecycle.step`, writes. Every decision — the new
status, what to create and delete, which Services a scale-down let go, which queued pods Kueue
may release, whether a status write waits (pacing), how an invalid spec fails — comes out of
the step, so the ``World`` simulator and the property machine see each of them. This module
only reads the caches into the step's input and carries out its decision:

1. The status is written first — once, and only when it changed — as a merge patch that
   carries the ``resourceVersion`` it was computed from. A decision made on a stale copy of
   the job is refused (409) and made again, and failures are recorded before any pod is
   deleted for them, so none is lost or counted twice.
2. Then the children are created (:mod:`.children`: what is missing, and whose a taken name
   is); what the apiserver refused is remembered for the next step, which follows at once.
3. Queued pods the job is done with are marked for Kueue; pods are deleted with a UID
   precondition, so a stale decision never deletes the pod that replaced the one it meant;
   then the Services let go, and an expired job.
4. Events go out last, describing a status that is stored.

The job cache may lag behind the status this reconciler just wrote; the reconciler remembers
its own last write per job (:mod:`.memory`) and uses it until the cache has caught up.
"""

from __future__ import annotations

import asyncio
import datetime
from collections.abc import Callable, Iterable
from typing import Any

import attrs

from kubetrain.api import meta, naming, observed, v1beta1, validation, wire
from kubetrain.operator import (
    accelerators,
    children,
    conditions,
    intake,
    lifecycle,
    memory,
    progress_reader,
    render,
)
from kubetrain.operator import nodes as nodes_
from kubetrain.operator.frameworks import framework as fw_contract
from kubetrain.operator.frameworks import registry as fw_registry
from kubetrain.operator.policies import admission, avoid, progress
from kubetrain.operator.runtime import cache, client, events, informer, metrics
from kubetrain.operator.runtime import reconcile as rec
from kubetrain.operator.scheduling import backend, workload

__all__ = ["MANAGER_NAME", "TrainingJobReconciler"]

# spec.managedBy (or the deprecated runPolicy.managedBy): jobs naming another controller are left alone.
MANAGER_NAME = "kubetrain.dev/operator"

Obj = dict[str, Any]


def _utcnow() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


class TrainingJobReconciler:
    def __init__(
        self,
        api: client.Client,
        *,
        jobs: informer.Informer,
        pods: informer.Informer,
        services: informer.Informer,
        config_maps: informer.Informer,
        nodes: informer.Informer | None = None,
        unhealthy: avoid.Unhealthy | None = None,
        tombstones: cache.Tombstones | None = None,
        frameworks: fw_registry.Registry | None = None,
        recorder: events.Recorder | None = None,
        accelerator_config: accelerators.Config | None = None,
        scheduler: backend.Backend = backend.NONE,
        clock: Callable[[], datetime.datetime] = _utcnow,
        reader: progress_reader.Reader | None = None,
        workloads: informer.Informer | None = None,
        flavors: informer.Informer | None = None,
    ) -> None:
        self.api = api
        self.jobs, self.pods, self.services = jobs, pods, services
        self.nodes, self.tombstones = nodes, tombstones
        self.health = nodes_.Health(nodes, unhealthy or avoid.Unhealthy()) if nodes is not None else None
        self.frameworks = frameworks or fw_registry.default()
        self.recorder = recorder or events.Recorder(api, clock=clock)
        self.scheduler = scheduler
        self.clock = clock
        self.reader = reader
        # Kueue's Workload route: the jobs' Workloads and the ResourceFlavors their admissions name.
        self.workloads, self.flavors = workloads, flavors
        self.memory = memory.Memory()
        for kind, inf in (("Pod", pods), ("Service", services)):
            inf.add_handler(self.memory.expected[kind].handler)
        self.children = children.Children(
            api,
            # The kinds whose caches tell whose an object is; Secrets are not watched (their data
            # is none of the operator's business once made).
            stores={"ConfigMap": config_maps.store, "Service": services.store, "Pod": pods.store},
            remembered=self.memory,
            recorder=self.recorder,
            scheduler=scheduler,
            accelerator_config=accelerator_config or {},
            clock=clock,
        )

    async def reconcile(self, request: rec.Request) -> rec.Result:
        key = str(request)
        obj = self._fetch(key)
        if obj is None:
            # Gone: forget everything remembered of it.
            if self.tombstones is not None:
                self.tombstones.forget(key)
            self.memory.forget(key)
            if self.reader is not None:
                self.reader.forget(request.namespace, request.name)
            return rec.Result()
        if obj["metadata"].get("deletionTimestamp"):
            return rec.Result()
        return await self._reconcile(obj)

    async def _reconcile(self, obj: Obj) -> rec.Result:
        # Read the job; one that cannot be read or run is a step of its own. A new one is also
        # weighed: one too large to store (admission was off) fails before anything is made.
        try:
            taken = intake.decode(obj, self.frameworks, weigh=not (obj.get("status") or {}).get("conditions"))
        except validation.ValidationError as e:
            return await self._act(obj, None, None, lifecycle.step(self._invalid(obj, e.errors)))
        job, fw = taken.job, taken.framework
        # Jobs another controller manages are not ours; one MultiKueue dispatches gets its Workload.
        if job.spec.manager not in (None, MANAGER_NAME):
            if job.spec.manager == workload.MULTIKUEUE and self._admission(job):
                await self._workload(job, fw, admission.dispatched(self._seen_workload(job)))
            return rec.Result()
        # Decide, from the status, what the caches show now and the first rank's progress.
        inp = self._progress(job, self._input(job, fw))
        decision = lifecycle.step(inp)
        result = await self._act(obj, job, fw, decision)
        # A job that finished now has its first rank read a last time.
        self._progress_ends(job, inp, decision.status)
        return result

    async def _act(
        self,
        obj: Obj,
        job: v1beta1.TrainingJob | None,
        fw: fw_contract.Framework | None,
        decision: lifecycle.Decision,
    ) -> rec.Result:
        old = job.status if job is not None else intake.readable_status(obj)
        # Record the decision before acting on it.
        stored = await self._write_status(obj, old, decision.status)
        if stored is None:
            return rec.Result(requeue_after=0.1)
        refused = False
        if job is not None and fw is not None:
            job = attrs.evolve(job, status=decision.status)
            # Create, finish or requeue the job's Workload (Kueue's Workload route).
            refused = await self._workload(job, fw, decision.workload)
            # Create what is missing; the next step, at once, shows what the apiserver refused.
            refused = refused or (bool(decision.create) and await self._create(job, fw, decision))
            if decision.tensorboard:
                await self.children.tensorboard(job)
            # Let a queue release the quota of the pods the job is done with.
            await self._release(job, decision.release)
            # Move pods to a new attempt in place, and open the barrier of those that moved.
            await self._move(job, decision.move, decision.open)
            # Delete what the step let go of, and the Services of replicas scaled away.
            await self._delete(job, decision.delete)
            await self._delete_services(job, decision.delete_services)
            # Expire a finished job.
            if decision.delete_job:
                name, ns, uid = job.metadata.name or "", job.metadata.namespace, job.metadata.uid
                await children.delete_exactly(self.api, client.TRAININGJOBS, name, ns, uid)
        # Tell users, now that the status they will read is stored.
        for e in decision.events:
            await self.recorder.event(stored, e.type, e.reason, e.message)
        # Count jobs created, finished and restarted.
        _count(fw.name if fw is not None else "", obj, old, decision.status)
        return rec.Result(requeue_after=0.1 if refused else decision.requeue_after)

    # --- reading ---------------------------------------------------------------------------

    def _fetch(self, key: str) -> Obj | None:
        cached = self.jobs.store.get(key)
        remembered = self.memory.get(key)
        if remembered is None or remembered.written is None:
            return cached
        replaced, ours = remembered.written
        if cached is not None and cached["metadata"].get("resourceVersion") == replaced:
            return ours  # the cache has not seen our last write yet
        remembered.written = None
        return cached

    def _invalid(self, obj: Obj, errors: Iterable[validation.FieldError]) -> lifecycle.Invalid:
        return lifecycle.Invalid(
            name=obj["metadata"]["name"],
            status=intake.readable_status(obj),
            errors=tuple(errors),
            now=self.clock(),
            generation=obj["metadata"].get("generation"),
        )

    def _input(self, job: v1beta1.TrainingJob, fw: fw_contract.Framework) -> lifecycle.Input:
        key = f"{job.metadata.namespace}/{job.metadata.name}"
        nodes = self.nodes.store if self.nodes is not None and self.nodes.synced.is_set() else None
        pods = [
            observed.Pod.of(p, node_exists=nodes is None or nodes_.exists(nodes, p))
            for p in self._owned(self.pods, key, job)
        ]
        live = {p.uid for p in pods}
        if self.tombstones is not None:
            pods += [
                observed.Pod.of(t, gone=True)
                for t in self.tombstones.of(key)
                if meta.controlled_by(t, job.metadata.uid) and t["metadata"].get("uid") not in live
            ]
        gone = self.memory.expected["Service"]
        made = self.memory.expected["Pod"].pending(key)
        remembered = self.memory.get(key) or memory.Job()
        policy = job.spec.run_policy.scheduling_policy
        queued = self._admission(job)
        return lifecycle.Input(
            name=job.metadata.name or "",
            namespace=job.metadata.namespace or "default",
            generation=job.metadata.generation,
            spec=job.spec,
            status=job.status,
            pods=tuple(pods),
            defaults=lifecycle.Defaults.of(fw, job.spec),
            now=self.clock(),
            refused=remembered.refused,
            # Whether the job's gangs wait in a Kueue queue (Volcano's queues are its own).
            queued=self.scheduler.kueue_queue(policy.queue if policy else None) is not None,
            admission=queued,
            workload=self._seen_workload(job) if queued else None,
            prebuilt=workload.prebuilt(job.metadata.annotations, job.metadata.labels) if queued else None,
            tensorboard=self.services.store.get(
                f"{job.metadata.namespace}/{naming.tensorboard_name(job.metadata.name or '')}"
            )
            is not None,
            services=tuple(
                observed.Service.of(s)
                for s in self._owned(self.services, key, job)
                if gone.expected(cache.key_of(s)) is not False
            ),
            made=frozenset(k.partition("/")[2] for k in made if self.pods.store.get(k) is None),
            last_write=remembered.last_write,
            unhealthy=self.health.unhealthy if self.health is not None else frozenset(),
            in_place=self.health is not None and self.health.in_place,
        )

    def _admission(self, job: v1beta1.TrainingJob) -> bool:
        """Whether the job waits in a Kueue queue as its own Workload."""
        policy = job.spec.run_policy.scheduling_policy
        return self.scheduler.workload_queue(policy.queue if policy else None) is not None

    def _workload_of(self, job: v1beta1.TrainingJob) -> Obj | None:
        """The job's Workload as the cache shows it: one this very job controls, or the one
        MultiKueue made for it, while no one controls that."""
        if self.workloads is None:
            return None
        prebuilt = workload.prebuilt(job.metadata.annotations, job.metadata.labels)
        name = prebuilt or workload.name_of(job.metadata.name or "", job.metadata.uid or "")
        obj = self.workloads.store.get(f"{job.metadata.namespace}/{name}")
        if obj is None:
            return None
        ours = meta.controlled_by(obj, job.metadata.uid)
        return obj if ours or (prebuilt is not None and meta.controller_of(obj) is None) else None

    def _seen_workload(self, job: v1beta1.TrainingJob) -> workload.Seen | None:
        obj = self._workload_of(job)
        if obj is None:
            return None
        flavors = self.flavors.store if self.flavors is not None else None
        return workload.Seen.of(
            obj,
            lambda name: flavors.get(name) if flavors is not None else None,
            owned=meta.controlled_by(obj, job.metadata.uid),
        )

    def _progress(self, job: v1beta1.TrainingJob, inp: lifecycle.Input) -> lifecycle.Input:
        """``inp`` with the first rank's progress read since the job's last pass, if any: the reader
        is told which pod stands for the job, and whether the job has finished."""
        if self.reader is None:
            return inp
        pod = progress.source(job, inp.pods, inp.defaults.progress_from)
        if pod is None:
            # Its first rank ended (the job is about to finish), or is made again: read it no more
            # until it runs, or a last time once the job has finished.
            self.reader.pause(inp.namespace, inp.name)
            return inp
        self.reader.want(inp.namespace, inp.name, pod.name, finished=progress.finished(job.status))
        return attrs.evolve(inp, progress=self.reader.take(inp.namespace, inp.name))

    def _progress_ends(
        self, job: v1beta1.TrainingJob, inp: lifecycle.Input, status: v1beta1.TrainingJobStatus
    ) -> None:
        """A job that finished in this pass has its first rank read a last time: no pass may follow
        (its own status write brings none)."""
        if self.reader is None or progress.finished(job.status) or not progress.finished(status):
            return
        pod = progress.source(attrs.evolve(job, status=status), inp.pods, inp.defaults.progress_from)
        if pod is not None:
            self.reader.want(inp.namespace, inp.name, pod.name, finished=True)

    def _owned(self, inf: informer.Informer, key: str, job: v1beta1.TrainingJob) -> list[Obj]:
        """The objects filed under the job's name that this very job controls.

        A job deleted and made again under its name finds its predecessor's children filed there
        while they go (a pod stays until its containers stop); they are not its own, and their
        failures are not its failures. As Kubernetes' controllers claim pods, the controller's
        uid tells them apart.
        """
        return [o for o in inf.store.by_index("owner", key) if meta.controlled_by(o, job.metadata.uid)]

    # --- writing ---------------------------------------------------------------------------

    async def _write_status(
        self, obj: Obj, old: v1beta1.TrainingJobStatus, status: v1beta1.TrainingJobStatus
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
            raise
        remembered = self.memory.of(cache.key_of(obj))
        remembered.written = (md["resourceVersion"], informer.strip_managed_fields(stored))
        remembered.last_write = self.clock()
        return stored

    async def _create(
        self, job: v1beta1.TrainingJob, fw: fw_contract.Framework, decision: lifecycle.Decision
    ) -> bool:
        """Create the wanted pods and what they need; whether the apiserver refused any."""
        refused = await self.children.create(job, fw, decision)
        self.memory.of(f"{job.metadata.namespace}/{job.metadata.name}").refused = refused
        return bool(refused)

    async def _workload(
        self, job: v1beta1.TrainingJob, fw: fw_contract.Framework, act: workload.Act | None
    ) -> bool:
        """Act on the job's Workload; whether its create was refused."""
        if act is workload.Act.CREATE:
            refused = await self.children.workload(job, fw, await self._priority(job))
            self.memory.of(f"{job.metadata.namespace}/{job.metadata.name}").refused = refused
            return bool(refused)
        obj = self._workload_of(job)
        if act is None or obj is None:
            return False
        md = obj["metadata"]
        if act is workload.Act.DELETE:
            await children.delete_exactly(
                self.api, workload.WORKLOADS, md["name"], md["namespace"], md["uid"]
            )
            return False
        if act is workload.Act.ADOPT:
            # Over the version read: a Workload another controller took meanwhile is left to it.
            adopted = {
                "resourceVersion": md["resourceVersion"],
                "ownerReferences": render.owner_reference(job),
            }
            await self._patch(workload.WORKLOADS, md["name"], md["namespace"], {"metadata": adopted})
            return False
        now = self.clock()
        if act is workload.Act.FINISH:
            ended = v1beta1.ConditionType
            succeeded = conditions.is_true(job.status.conditions, ended.SUCCEEDED)
            ctype = ended.SUCCEEDED if succeeded else ended.FAILED
            message = next((c.message for c in job.status.conditions if c.type == ctype), "") or ctype.value
            patch = workload.finished_status(obj, succeeded=succeeded, message=message, now=now)
        else:
            patch = workload.requeued_status(obj, now=now)
        await self._patch(workload.WORKLOADS, md["name"], md["namespace"], patch, subresource="status")
        return False

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

    async def _priority(self, job: v1beta1.TrainingJob) -> int | None:
        """The value of the job's PriorityClass, which Kueue orders and preempts by; None if it
        has none, or it cannot be read (its pods are then refused, saying why)."""
        policy = job.spec.run_policy.scheduling_policy
        if policy is None or not policy.priority_class:
            return None
        try:
            pc = await self.api.get(workload.PRIORITY_CLASSES, policy.priority_class)
        except client.ApiError:
            return None
        return int(pc.get("value") or 0)

    async def _release(self, job: v1beta1.TrainingJob, names: tuple[str, ...]) -> None:
        patch = {"metadata": {"annotations": {naming.KUEUE_RETRIABLE: "false"}}}
        await asyncio.gather(*(self._patch(client.PODS, n, job.metadata.namespace, patch) for n in names))

    async def _move(
        self, job: v1beta1.TrainingJob, moves: tuple[lifecycle.Move, ...], opens: tuple[lifecycle.Move, ...]
    ) -> None:
        # The UID in a patch is a precondition: a stale decision never touches a pod made again.
        patches = [(m, render.moved(job.status, m.attempt)) for m in moves]
        patches += [(m, {"annotations": {naming.OPENED: str(m.attempt)}}) for m in opens]
        await asyncio.gather(
            *(
                self._patch(client.PODS, m.pod, job.metadata.namespace, {"metadata": {"uid": m.uid, **md}})
                for m, md in patches
            )
        )

    async def _delete(self, job: v1beta1.TrainingJob, deletes: tuple[lifecycle.Delete, ...]) -> None:
        ns = job.metadata.namespace
        await asyncio.gather(
            *(
                children.delete_exactly(
                    self.api, client.PODS, d.pod, ns, d.uid or None, 0 if d.force else None
                )
                for d in deletes
            )
        )

    async def _delete_services(self, job: v1beta1.TrainingJob, names: tuple[str, ...]) -> None:
        ns, key = job.metadata.namespace, f"{job.metadata.namespace}/{job.metadata.name}"
        for n in names:
            self.memory.expected["Service"].deleted(f"{ns}/{n}", key)
        await asyncio.gather(
            *(children.delete_exactly(self.api, client.CHILDREN["Service"], n, ns, None) for n in names)
        )


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
