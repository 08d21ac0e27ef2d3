"""The TrainingJob reconciler: one for every framework, driven by the framework registry.

A pass is three calls. :func:`~.observe.observe` turns the caches, the job and what this process
remembers of the job's UID into the step's input; :func:`~.lifecycle.step` decides everything —
the new status, what to create (in which batches) and delete, the gang groups, the Workload, the
Events; :class:`~.execute.Executor` carries the decision out, and is the only code that talks to
the apiserver. So the ``World`` simulator and the property machine, which run the same observe
and execute against a simulated cluster, see every decision and every rule of the shell.

The job cache may lag behind the status this reconciler just wrote; the reconciler remembers its
own last write per job (:mod:`.memory`) and uses it until the cache has caught up.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Iterable
from typing import Any

import attrs

from kubetrain.api import naming, v1beta1, validation
from kubetrain.operator import (
    accelerators,
    caches,
    execute,
    intake,
    lifecycle,
    memory,
    observe,
    progress_reader,
)
from kubetrain.operator import nodes as nodes_
from kubetrain.operator.frameworks import registry as fw_registry
from kubetrain.operator.policies import avoid, progress
from kubetrain.operator.runtime import cache, client, events, informer, metrics
from kubetrain.operator.runtime import reconcile as rec
from kubetrain.operator.scheduling import backend

__all__ = ["MANAGER_NAME", "TrainingJobReconciler"]

# spec.managedBy (or the deprecated runPolicy.managedBy): jobs naming another controller are left alone.
MANAGER_NAME = naming.MANAGER_NAME

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
        notice: avoid.Unhealthy | None = None,
        tombstones: cache.Tombstones | None = None,
        frameworks: fw_registry.Registry | None = None,
        recorder: events.Recorder | None = None,
        accelerator_config: accelerators.Config | None = None,
        scheduler: backend.Backend = backend.NONE,
        clock: Callable[[], datetime.datetime] = _utcnow,
        reader: progress_reader.Reader | None = None,
        workloads: informer.Informer | None = None,
        flavors: informer.Informer | None = None,
        priorities: informer.Informer | None = None,
    ) -> None:
        self.jobs, self.tombstones = jobs, tombstones
        self.frameworks = frameworks or fw_registry.default()
        self.scheduler, self.clock, self.reader = scheduler, clock, reader
        self.memory = memory.Memory()
        for kind, inf in (("Pod", pods), ("Service", services)):
            inf.add_handler(self.memory.expected[kind].handler)
        health = nodes_.Health(nodes, unhealthy or avoid.Unhealthy(), notice) if nodes is not None else None
        self.caches = caches.InformerCaches(
            stores={"Pod": pods.store, "Service": services.store, "ConfigMap": config_maps.store},
            tombstones=tombstones,
            nodes=nodes,
            health=health,
            workloads=workloads,
            flavors=flavors,
            priorities=priorities,
        )
        self.recorder = recorder or events.Recorder(api, clock=clock)
        self.execute = execute.Executor(
            api,
            caches=self.caches,
            remembered=self.memory,
            recorder=self.recorder,
            scheduler=scheduler,
            accelerator_config=accelerator_config or {},
            clock=clock,
        )
        metrics.remember("trainingjob", self.sizes)

    def sizes(self) -> dict[str, int]:
        """The entries of every per-job map this reconciler keeps: all 0 once its jobs are gone."""
        out = {f"memory_{k}": v for k, v in self.memory.sizes().items()}
        out["events"] = len(self.recorder)
        if self.tombstones is not None:
            out["tombstones"] = len(self.tombstones)
        if self.reader is not None:
            out |= {f"progress_{k}": v for k, v in self.reader.sizes().items()}
        return out

    async def reconcile(self, request: rec.Request) -> rec.Result:
        key = str(request)
        obj = self._fetch(key)
        if obj is None:
            # Gone: forget everything remembered of it.
            if self.tombstones is not None:
                self.tombstones.forget(key)
            self.memory.forget(key)
            self.recorder.forget(request.namespace, request.name)
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
            decision = lifecycle.step(self._invalid(obj, e.errors))
            return rec.Result(requeue_after=await self.execute.run(obj, None, None, decision))
        job, fw = taken.job, taken.framework
        # Observe: the caches, and what this process remembers of this very job (its UID).
        key = f"{job.metadata.namespace}/{job.metadata.name}"
        mine = self.memory.of(key, job.metadata.uid or "")
        inp = observe.observe(
            job, fw, self.caches, mine, self.memory.expected, scheduler=self.scheduler, now=self.clock()
        )
        # With the first rank's progress read since the last pass.
        inp = self._progress(job, inp)
        # Decide.
        decision = lifecycle.step(inp)
        # Carry it out.
        result = rec.Result(requeue_after=await self.execute.run(obj, job, fw, decision))
        # A job that finished now has its first rank read a last time.
        self._progress_ends(job, inp, decision.status)
        return result

    # --- reading ---------------------------------------------------------------------------

    def _fetch(self, key: str) -> Obj | None:
        cached = self.jobs.store.get(key)
        remembered = self.memory.written(key)
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
        waits = job.status.checkpoint is not None and job.status.checkpoint.requested is not None
        self.reader.want(
            inp.namespace,
            inp.name,
            pod.name,
            finished=progress.finished(job.status),
            ended=pod.finished,
            soon=waits,
        )
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
            self.reader.want(inp.namespace, inp.name, pod.name, finished=True, ended=pod.finished)
