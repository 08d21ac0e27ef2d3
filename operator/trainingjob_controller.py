"""The TrainingJob reconciler: one for every framework, driven by the framework registry.

:meth:`TrainingJobReconciler.reconcile` is thin — fetch the job from the cache, ignore
it if it is gone or being deleted — and :meth:`~TrainingJobReconciler._reconcile` is a
list of steps. Everything it decides comes from :func:`kubetrain.operator.lifecycle.step`;
this module only reads the caches and carries out the decision:

1. The status is written first — once, and only when it changed — as a merge patch
   that carries the ``resourceVersion`` it was computed from. A decision made on a stale
   copy of the job is refused (409) and made again, and failures are recorded before any
   pod is deleted for them, so none is lost or counted twice.
2. Then the ConfigMap, the Services and the missing pods are created. Names are
   deterministic, so a pod created twice (the cache lagged, the operator restarted
   mid-reconcile) is refused by the apiserver with 409 and never duplicated. Whose an object
   is goes by its controller's uid, never by the job's name: a 409 for a name another object
   holds (a deleted predecessor's pod still stopping, a user's Service) is a refusal. Every
   refusal (that, quota, a missing ServiceAccount, PodSecurity, ...) is sent as a
   ``FailedCreate`` Event and remembered, and the next step shows it as the job's
   ``ReplicaFailure`` condition and decides when to try again — never an error retried
   in a hot loop.
   The TensorBoard's Deployment and Service (``spec.tensorboard``) are created apart, while
   its Service is not in the cache, the Deployment first; a refusal is a ``FailedCreate``
   Event only (the replicas train without it), tried again at the next reconcile.
   With a gang scheduler (``--gang-scheduler``), each new attempt's group object is created
   before its pods, and the previous one deleted; a group the cluster does not serve is a
   refusal like any other, and the pods that would join it are not created.
3. Pods a Kueue queue holds for a group the job is done with are marked not retriable, so
   that Kueue releases their quota. Pods are deleted with a UID precondition, so a stale
   decision never deletes the pod that replaced the one it meant.
4. Events go out last, describing a status that is stored.

The job cache may lag behind the status this reconciler just wrote; the reconciler
remembers its own last write per job and uses it until the cache has caught up.
"""

from __future__ import annotations

import asyncio
import datetime
import logging
from collections.abc import Callable
from typing import Any

import attrs

from kubetrain.api import naming, observed, scheme, v1beta1, validation, wire
from kubetrain.operator import accelerators, conditions, lifecycle, render, scheduling, tensorboard
from kubetrain.operator.frameworks import framework as fw_contract
from kubetrain.operator.frameworks import registry as fw_registry
from kubetrain.operator.policies import cleanup, pacing, refusal
from kubetrain.operator.runtime import cache, client, events, informer, metrics
from kubetrain.operator.runtime import reconcile as rec
from kubetrain.operator.scheduling import backend, registry

__all__ = ["MANAGER_NAME", "TrainingJobReconciler"]

log = logging.getLogger(__name__)

# runPolicy.managedBy: jobs naming another controller are left alone.
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
        tombstones: cache.Tombstones | None = None,
        frameworks: fw_registry.Registry | None = None,
        recorder: events.Recorder | None = None,
        accelerator_config: accelerators.Config | None = None,
        scheduler: backend.Backend = backend.NONE,
        clock: Callable[[], datetime.datetime] = _utcnow,
    ) -> None:
        self.api = api
        self.jobs, self.pods, self.services, self.config_maps = jobs, pods, services, config_maps
        # The kinds whose caches tell whose an object is; Secrets are not watched (their data is
        # none of the operator's business once made).
        self._stores = {"ConfigMap": config_maps.store, "Service": services.store, "Pod": pods.store}
        self.nodes, self.tombstones = nodes, tombstones
        self.frameworks = frameworks or fw_registry.default()
        self.recorder = recorder or events.Recorder(api, clock=clock)
        self.accelerators = accelerator_config or {}
        self.scheduler = scheduler
        self.clock = clock
        # key -> (resourceVersion the write replaced, the object it produced)
        self._written: dict[str, tuple[str, Obj]] = {}
        # key -> when this process last wrote the job's status (for policies/pacing)
        self._status_written_at: dict[str, datetime.datetime] = {}
        # key -> what the apiserver refused at the last create pass
        self._refused: dict[str, tuple[lifecycle.Refused, ...]] = {}
        # key -> the gang groups this process created (or found made) for the job
        self._groups: dict[str, set[str]] = {}
        # What this process created, or deleted (Services of a scale-down, which may be wanted
        # back at once), that its caches do not show so yet, by kind.
        self._expected = {"Pod": cache.Expectations(), "Service": cache.Expectations()}
        pods.add_handler(self._expected["Pod"].handler)
        services.add_handler(self._expected["Service"].handler)

    async def reconcile(self, request: rec.Request) -> rec.Result:
        obj = self._fetch(str(request))
        if obj is None:
            if self.tombstones is not None:
                self.tombstones.forget(str(request))
            self._refused.pop(str(request), None)
            self._groups.pop(str(request), None)
            self._status_written_at.pop(str(request), None)
            return rec.Result()
        if obj["metadata"].get("deletionTimestamp"):
            return rec.Result()
        return await self._reconcile(obj)

    async def _reconcile(self, obj: Obj) -> rec.Result:
        # A job that cannot be read or run fails once, with the reason.
        job, fw, errors = self._decode(obj)
        if job is None or fw is None or errors:
            await self._fail_invalid(obj, errors)
            return rec.Result()
        # Jobs another controller manages (a queue, a multi-cluster dispatcher) are not ours.
        if job.spec.run_policy.managed_by not in (None, MANAGER_NAME):
            return rec.Result()
        # Decide, from the status and what the pods look like now.
        decision = lifecycle.step(self._input(job, fw))
        # Pods an earlier pass created, which the cache does not show yet, are not made again.
        decision = attrs.evolve(decision, create=self._not_made(job, decision.create))
        # Hold a change of the starting pods' counts alone: the next real change carries it.
        hold = self._hold(job, decision)
        if hold:
            return rec.Result(requeue_after=hold)
        # Record the decision before acting on it.
        stored = await self._write_status(obj, job, decision.status)
        if stored is None:
            return rec.Result(requeue_after=0.1)
        # Create what is missing; the next step, at once, shows what the apiserver refused.
        refused = bool(decision.create) and await self._create(
            attrs.evolve(job, status=decision.status), fw, decision.create
        )
        if decision.tensorboard:
            await self._create_tensorboard(job)
        # Let a queue release the quota of a finished job's pods.
        await self._release_quota(job, decision.status)
        # Delete what the step let go of, and the Services of replicas scaled away.
        await self._delete(job, decision.delete)
        await self._delete_surplus_services(job)
        # Expire a finished job.
        if decision.delete_job:
            await self._delete_job(job)
        # Tell users, now that the status they will read is stored.
        await self._send(stored, decision.events)
        # Count jobs created, finished and restarted.
        _count(fw.name, job, decision.status)
        return rec.Result(requeue_after=0.1 if refused else decision.requeue_after)

    # --- reading ---------------------------------------------------------------------------

    def _fetch(self, key: str) -> Obj | None:
        cached = self.jobs.store.get(key)
        written = self._written.get(key)
        if written is None:
            return cached
        replaced, ours = written
        if cached is not None and cached["metadata"].get("resourceVersion") == replaced:
            return ours  # the cache has not seen our last write yet
        del self._written[key]
        return cached

    def _decode(
        self, obj: Obj
    ) -> tuple[v1beta1.TrainingJob | None, fw_contract.Framework | None, list[validation.FieldError]]:
        try:
            decoded = scheme.to_hub(scheme.decode(obj))
            fw = self.frameworks.get(decoded.spec.framework.name)
        except validation.ValidationError as e:
            return None, None, list(e.errors)
        except fw_registry.UnknownFrameworkError as e:
            return None, None, [validation.FieldError(path=("spec", "framework", "name"), message=str(e))]
        return decoded, fw, fw_contract.validate(fw, decoded)

    def _input(self, job: v1beta1.TrainingJob, fw: fw_contract.Framework) -> lifecycle.Input:
        key = f"{job.metadata.namespace}/{job.metadata.name}"
        nodes = self.nodes.store if self.nodes is not None and self.nodes.synced.is_set() else None
        pods = [
            observed.Pod.of(p, node_exists=nodes is None or _node_exists(nodes, p))
            for p in _children(self.pods.store.by_index("owner", key), job)
        ]
        live = {p.uid for p in pods}
        if self.tombstones is not None:
            pods += [
                observed.Pod.of(t, gone=True)
                for t in _children(self.tombstones.of(key), job)
                if t["metadata"].get("uid") not in live
            ]
        return lifecycle.Input(
            name=job.metadata.name or "",
            namespace=job.metadata.namespace or "default",
            generation=job.metadata.generation,
            spec=job.spec,
            status=job.status,
            pods=tuple(pods),
            defaults=lifecycle.Defaults.of(fw, job.spec),
            now=self.clock(),
            refused=self._refused.get(key, ()),
            queued=self._queued(job),
            tensorboard=self.services.store.get(
                f"{job.metadata.namespace}/{naming.tensorboard_name(job.metadata.name or '')}"
            )
            is not None,
        )

    # --- writing ---------------------------------------------------------------------------

    async def _write_status(
        self, obj: Obj, job: v1beta1.TrainingJob, status: v1beta1.TrainingJobStatus
    ) -> Obj | None:
        """Store ``status`` if it changed; the stored object, or None if ``obj`` was stale."""
        if status == job.status:
            return obj
        stored = await self._patch_status(
            obj, client.merge_patch_between(wire.unstructure(job.status), wire.unstructure(status))
        )
        if stored is not None:
            replaced = obj["metadata"]["resourceVersion"]
            self._written[cache.key_of(obj)] = (replaced, informer.strip_managed_fields(stored))
            self._status_written_at[cache.key_of(obj)] = self.clock()
        return stored

    def _not_made(
        self, job: v1beta1.TrainingJob, wanted: tuple[tuple[str, int], ...]
    ) -> tuple[tuple[str, int], ...]:
        def made(key: str, index: int) -> bool:
            name = naming.replica_name(job.metadata.name or "", key, index)
            return self._exists(job, "Pod", f"{job.metadata.namespace}/{name}")

        return tuple(w for w in wanted if not made(*w))

    def _hold(self, job: v1beta1.TrainingJob, decision: lifecycle.Decision) -> float:
        """Seconds to hold a status write that only moves the starting pods' counts (policies/pacing)."""
        if (
            decision.create
            or decision.delete
            or decision.delete_job
            or decision.events
            or decision.tensorboard
        ):
            return 0.0
        last = self._status_written_at.get(f"{job.metadata.namespace}/{job.metadata.name}")
        return pacing.delay(job.status, decision.status, last, self.clock(), due=decision.requeue_after)

    async def _patch_status(self, obj: Obj, status_patch: Obj) -> Obj | None:
        """Merge-patch the status of ``obj``, only if it is still the version read; else None."""
        meta = obj["metadata"]
        patch = {"metadata": {"resourceVersion": meta["resourceVersion"]}, "status": status_patch}
        try:
            stored: Obj = await self.api.merge_patch(
                client.TRAININGJOBS, meta["name"], patch, meta["namespace"], subresource="status"
            )
        except client.ApiError as e:
            if e.conflict or e.not_found:
                return None
            raise
        return stored

    async def _fail_invalid(self, obj: Obj, errors: list[validation.FieldError]) -> None:
        raw_conditions = (obj.get("status") or {}).get("conditions") or []
        if any(c.get("type") == "Failed" and c.get("status") == "True" for c in raw_conditions):
            return
        message = "; ".join(str(e) for e in errors)[:4096]
        now = self.clock()
        status = v1beta1.TrainingJobStatus(
            conditions=conditions.set_status(
                (), v1beta1.ConditionType.FAILED, True, "InvalidSpec", message, now
            ),
            state=v1beta1.JobState.FAILED,
            completion_time=now,
        )
        stored = await self._patch_status(obj, wire.unstructure(status))
        if stored is not None:
            await self.recorder.event(stored, "Warning", "InvalidSpec", message)

    async def _create(
        self, job: v1beta1.TrainingJob, fw: fw_contract.Framework, wanted: tuple[tuple[str, int], ...]
    ) -> bool:
        """Create the wanted pods and what they need; whether the apiserver refused any."""
        names = {naming.replica_name(job.metadata.name or "", key, i) for key, i in wanted}
        objects = render.render(job, fw, self.scheduler)
        pods = [
            o
            for o in objects
            if o["kind"] == "Pod" and o["metadata"]["name"] in names and not self._cached(job, o)
        ]
        for pod in pods:
            accelerators.apply(pod, self.accelerators)
        groups = [o for o in objects if self._is_group(o)]
        shared = [
            o
            for o in objects
            if o["kind"] != "Pod"
            and not self._is_group(o)
            and not tensorboard.is_tensorboard(o)
            and not self._cached(job, o)
        ]
        # The ConfigMap, the Secret and the Services first: a starting pod needs its peers' names,
        # and no pod starts without them (a name another Service holds would lead it astray).
        refused = await asyncio.gather(*(self._create_one(job, o) for o in shared))
        key = f"{job.metadata.namespace}/{job.metadata.name}"
        if not any(refused):
            # Then the gangs, since a pod waits without a word for a group that does not exist.
            refused_groups = await self._create_groups(job, key, groups, pods)
            pods = [p for p in pods if p["metadata"]["labels"][naming.GANG] not in refused_groups]
            refused += list(refused_groups.values())
            refused += await asyncio.gather(*(self._create_one(job, o) for o in pods))
        self._refused[key] = tuple(r for r in refused if r is not None)
        if not self._refused[key]:
            del self._refused[key]
            return False
        return True

    async def _create_tensorboard(self, job: v1beta1.TrainingJob) -> None:
        """The Deployment, then its Service: a Service in the cache means both exist."""
        deployment, service = tensorboard.objects(job, render.owner_reference(job))
        if await self._create_one(job, deployment) is None:
            await self._create_one(job, service)

    def _is_group(self, obj: Obj) -> bool:
        r = self.scheduler.resource
        return r is not None and obj["kind"] == r.kind and obj["apiVersion"] == r.api_version

    async def _create_groups(
        self, job: v1beta1.TrainingJob, key: str, groups: list[Obj], pods: list[Obj]
    ) -> dict[str, lifecycle.Refused]:
        """Create the gangs the new pods join, forget older ones; group name -> refusal."""
        resource = self.scheduler.resource
        if resource is None:
            return {}
        made = self._groups.setdefault(key, set())
        wanted = {p["metadata"]["labels"][naming.GANG] for p in pods}
        new = [g for g in groups if g["metadata"]["name"] in wanted - made]
        answers = await asyncio.gather(*(self._create_one(job, g) for g in new))
        refused = {g["metadata"]["name"]: r for g, r in zip(new, answers, strict=True) if r is not None}
        made |= {g["metadata"]["name"] for g in new} - set(refused)
        # A gang no pod joins any more: its own pods are gone or going, and the scheduler keeps
        # it (a finalizer) until they are.
        for name in sorted(made - {g["metadata"]["name"] for g in groups}):
            made.discard(name)
            await self._delete_exactly(resource, name, job.metadata.namespace, None)
        return refused

    def _cached(self, job: v1beta1.TrainingJob, obj: Obj) -> bool:
        """Whether ``obj`` exists, as far as this process knows now. Asked again just before
        creating: the decision was made before the status write, and the cache has moved on since."""
        return self._exists(job, obj["kind"], cache.key_of(obj))

    def _exists(self, job: v1beta1.TrainingJob, kind: str, key: str) -> bool:
        """The job's own, in its cache, or created by this process and not shown yet."""
        expectations = self._expected.get(kind)
        expected = expectations.expected(key) if expectations is not None else None
        if expected is not None:
            return expected
        store = self._stores.get(kind)
        found = store.get(key) if store is not None else None
        return found is not None and _controlled_by(found, job.metadata.uid)

    async def _taken(self, job: v1beta1.TrainingJob, obj: Obj, resource: client.Resource) -> str | None:
        """After a 409 AlreadyExists: why the name is not the job's, or None if the object is.

        A kind the caches hold is judged from them; a Secret, a Deployment or a gang group, which
        no cache holds, is read once (a 409 is rare): a predecessor's ssh Secret taken as the
        job's own would go with the predecessor and leave the new pods waiting for it.
        """
        key = cache.key_of(obj)
        store = self._stores.get(obj["kind"])
        if store is not None:
            if self._exists(job, obj["kind"], key):
                return None
            held = store.get(key)
        else:
            meta = obj["metadata"]
            try:
                held = await self.api.get(resource, meta["name"], meta["namespace"])
            except client.ApiError as e:
                # Gone since (the next try makes it), or unreadable now: wait either way.
                return f"{refusal.NAME_HELD} a {obj['kind']} that could not be read ({e}), until it is gone"
        if held is None:
            # Not kubetrain's (the caches watch its labels only), or made at an earlier pass and
            # not shown yet: the next pass, a second later, tells which.
            return f"{refusal.NAME_TAKEN} a {obj['kind']} that is no TrainingJob's"
        owner = cache.controller_of(held)
        if owner is not None and owner.get("uid") == job.metadata.uid:
            return None
        holder = f"{owner['kind']} {owner['name']} (uid {owner.get('uid', '?')})" if owner else "an object"
        predecessor = (
            owner is not None and owner["kind"] == "TrainingJob" and owner["name"] == job.metadata.name
        )
        if predecessor or held["metadata"].get("deletionTimestamp"):
            return f"{refusal.NAME_HELD} {holder}, until it is gone"
        return f"{refusal.NAME_TAKEN} {holder}; rename this job or delete that {obj['kind']}"

    async def _create_one(self, job: v1beta1.TrainingJob, obj: Obj) -> lifecycle.Refused | None:
        group = self._is_group(obj)
        resource = self.scheduler.resource if group else client.CHILDREN[obj["kind"]]
        assert resource is not None
        try:
            await self.api.create(resource, obj, obj["metadata"]["namespace"])
            if (expected := self._expected.get(obj["kind"])) is not None:
                expected.created(cache.key_of(obj))
        except client.ApiError as e:
            taken = await self._taken(job, obj, resource) if e.status == 409 else None
            if e.status == 409 and taken is None:
                return None  # AlreadyExists: the job's own, made at an earlier pass
            name = obj["metadata"]["name"]
            # A 404 for a group is the cluster not serving the backend's API (namespaces are
            # found: the job is in one).
            message = taken or (registry.not_served(self.scheduler) if group and e.not_found else e.message)
            await self.recorder.event(
                scheme.encode(job), "Warning", "FailedCreate", f"{obj['kind']} {name}: {message}"
            )
            return lifecycle.Refused(
                kind=obj["kind"],
                name=name,
                status=e.status,
                message=message,
                at=self.clock(),
                generation=job.metadata.generation,
            )
        return None

    async def _release_quota(self, job: v1beta1.TrainingJob, status: v1beta1.TrainingJobStatus) -> None:
        """Mark the Kueue-queued pods the job is done with as never to be retried in their group.

        Kueue keeps a group's quota, and its finalizer on the group's pods, while any of them
        could be retried. The job is done with the unfinished pods of a finished job, and with
        every pod of an attempt a restart left behind: a new attempt is a new group, whose pods,
        named like the old ones, are created only once those are gone. When all the pods of a
        group have ended and one is marked, Kueue finishes the group's Workload, releases its
        quota and lets the pods go.
        """
        if not self._queued(job):
            return
        finished = status.state in (v1beta1.JobState.SUCCEEDED, v1beta1.JobState.FAILED)
        keys = {k.lower(): k for k in job.spec.replica_specs}

        def done_with(obj: Obj) -> bool:
            pod = observed.Pod.of(obj)
            if finished:
                return pod.phase != "Succeeded"
            rtype = keys.get(pod.replica_type)
            if rtype is None:
                return True
            return pod.attempt < status.replica_statuses.get(rtype, v1beta1.ReplicaStatus()).attempt

        key = f"{job.metadata.namespace}/{job.metadata.name}"
        patch = {"metadata": {"annotations": {scheduling.kueue.RETRIABLE: "false"}}}
        await asyncio.gather(
            *(
                self._patch_pod(p["metadata"]["name"], job.metadata.namespace, patch)
                for p in _children(self.pods.store.by_index("owner", key), job)
                if (p["metadata"].get("labels") or {}).get(scheduling.kueue.QUEUE_NAME)
                and (p["metadata"].get("annotations") or {}).get(scheduling.kueue.RETRIABLE) != "false"
                and done_with(p)
            )
        )

    def _queued(self, job: v1beta1.TrainingJob) -> bool:
        """Whether the job's gangs wait in a Kueue queue (Volcano's queues are its own)."""
        policy = job.spec.run_policy.scheduling_policy
        return bool(policy and policy.queue) and not self.scheduler.own_queues

    async def _patch_pod(self, name: str, namespace: str | None, patch: Obj) -> None:
        try:
            await self.api.merge_patch(client.PODS, name, patch, namespace)
        except client.ApiError as e:
            if not e.not_found:
                raise

    async def _delete(self, job: v1beta1.TrainingJob, deletes: tuple[lifecycle.Delete, ...]) -> None:
        await asyncio.gather(
            *(
                self._delete_exactly(
                    client.PODS, d.pod, job.metadata.namespace, d.uid or None, grace=0 if d.force else None
                )
                for d in deletes
            )
        )

    async def _delete_surplus_services(self, job: v1beta1.TrainingJob) -> None:
        key = f"{job.metadata.namespace}/{job.metadata.name}"
        owned = _children(self.services.store.by_index("owner", key), job)
        names = cleanup.surplus_services(job.spec, owned)
        for n in names:
            self._expected["Service"].deleted(f"{job.metadata.namespace}/{n}")
        await asyncio.gather(
            *(
                self._delete_exactly(client.CHILDREN["Service"], n, job.metadata.namespace, None)
                for n in names
            )
        )

    async def _delete_job(self, job: v1beta1.TrainingJob) -> None:
        await self._delete_exactly(
            client.TRAININGJOBS, job.metadata.name or "", job.metadata.namespace, job.metadata.uid
        )

    async def _delete_exactly(
        self,
        resource: client.Resource,
        name: str,
        namespace: str | None,
        uid: str | None,
        grace: int | None = None,
    ) -> None:
        """Delete that incarnation of ``name``; gone already, or replaced by a newer one, is fine."""
        try:
            await self.api.delete(resource, name, namespace, grace_period_seconds=grace, uid=uid)
        except client.ApiError as e:
            if not (e.not_found or e.conflict):
                raise

    async def _send(self, stored: Obj, sent: tuple[lifecycle.Event, ...]) -> None:
        for e in sent:
            await self.recorder.event(stored, e.type, e.reason, e.message)


def _children(objs: list[Obj], job: v1beta1.TrainingJob) -> list[Obj]:
    """Those of ``objs``, filed under the job's name, that this very job controls.

    A job deleted and made again under its name finds its predecessor's children filed there
    while they go (a pod stays until its containers stop); they are not its own, and their
    failures are not its failures. As Kubernetes' controllers claim pods, the controller's uid
    tells them apart.
    """
    return [o for o in objs if _controlled_by(o, job.metadata.uid)]


def _controlled_by(obj: Obj, uid: str | None) -> bool:
    ref = cache.controller_of(obj)
    return ref is not None and ref.get("uid") == uid


def _node_exists(nodes: cache.Store, pod: Obj) -> bool:
    node = (pod.get("spec") or {}).get("nodeName")
    return not node or nodes.get(node) is not None


def _count(framework: str, job: v1beta1.TrainingJob, new: v1beta1.TrainingJobStatus) -> None:
    old = job.status
    labels = (framework, job.metadata.namespace or "")
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
