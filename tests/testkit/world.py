"""A tiny simulated cluster for the lifecycle: pods, nodes, kubelets and a clock — and the real operator.

:class:`World` holds one job and runs the operator's own shell around :func:`lifecycle.step`:
:func:`kubetrain.operator.observe.observe` reads its caches and the operator's memory, the step
decides, and :class:`kubetrain.operator.execute.Executor` carries the decision out against a fake
apiserver (:mod:`testkit.worldapi`): creates pods Pending with the attempt their rendered labels
name, their Services, ConfigMaps, Secrets, gang groups and Workload, deletes them with a grace
period or force, patches pods moved in place, writes the status as a merge patch, sends Events. The
World runs the kubelets (pending pods start, deleted pods on live nodes go away, leaving a
tombstone), and lets tests make things happen to pods: exit, hang (their agent says the step
stopped moving), be restarted in place by the kubelet, be evicted, lose their node; and nodes
turn unhealthy. Its scheduler honours the nodes a pod keeps off, and says so when no node is
left. It also plays a cache that lags behind the pods just created (:attr:`World.lagging`), a
stored spec that stops being valid (:attr:`World.invalid`), an operator that restarts (its
memory gone) and a job deleted and made again under its name (:meth:`World.recreate`). Unit tests
drive it by hand; the property tests let hypothesis drive it.
"""

from __future__ import annotations

import asyncio
import datetime
import itertools
from typing import Any

import attrs

from kubetrain.api import indexes, naming, observed, v1beta1, validation, wire
from kubetrain.operator import execute, lifecycle, memory, observe, render
from kubetrain.operator.frameworks import framework as fw_contract
from kubetrain.operator.policies import inplace, progress
from kubetrain.operator.runtime import events
from kubetrain.operator.scheduling import backend
from kubetrain.operator.scheduling import workload as workload_
from testkit import worldapi

T0 = datetime.datetime(2026, 11, 21, 12, 0, tzinfo=datetime.UTC)
# The loop the executor runs on, one for every World: its fake apiserver answers at once.
_LOOP = asyncio.new_event_loop()
GRACE = datetime.timedelta(seconds=30)


class World:
    def __init__(
        self,
        job: v1beta1.TrainingJob,
        fw: fw_contract.Framework,
        nodes: int = 2,
        *,
        kueue: str = backend.POD_ROUTE,
        scheduler: backend.Backend = backend.NONE,
    ) -> None:
        self.fw = fw
        self.uid = "job-uid-1"
        self.job = attrs.evolve(job, metadata=attrs.evolve(job.metadata, uid=self.uid))
        self.status = job.status
        self.version = 1  # the stored job's resourceVersion
        self.now = T0
        self.pods: dict[str, observed.Pod] = {}
        self.tombstones: dict[str, observed.Pod] = {}
        self.nodes = [f"node-{i}" for i in range(nodes)]
        self.lost: set[str] = set()
        self.unhealthy: set[str] = set()  # nodes the operator is told are unhealthy
        self.noticed: set[str] = set()  # nodes a notice says will go
        self.asked: dict[str, int] = {}  # the checkpoint request each pod's annotation says, by pod
        self.deleted_job = False
        # Pods the simulated apiserver refuses to create: name -> (status, message).
        self.refusing: dict[str, tuple[int, str]] = {}
        # Pods the scheduler (or a queue) holds back: the kubelets never see them.
        self.held: set[str] = set()
        policy = job.spec.run_policy.scheduling_policy
        # In a Kueue queue (the operator's --kueue): the gang as plain-pod groups, or the job as
        # its own Workload, which Kueue admits, evicts and sees finished (None: not created yet).
        self.scheduler = attrs.evolve(scheduler, kueue=kueue)
        queue = policy.queue if policy else None
        self.queued = self.scheduler.kueue_queue(queue) is not None
        self.admission = self.scheduler.workload_queue(queue) is not None
        self.workload: workload_.Seen | None = None
        self.priorities: dict[str, int] = {}  # PriorityClasses by name
        # The apiserver's other objects: ConfigMaps, Secrets, the TensorBoard's Deployment (kind,
        # name); the gang groups (name -> the uid of the job that controls it), and those deleted.
        self.shared: set[tuple[str, str]] = set()
        self.groups: dict[str, str] = {}
        self.groups_deleted: list[str] = []
        # Pods of a predecessor under the same name, still stopping: name -> its uid.
        self.others: dict[str, str] = {}
        self.events: list[tuple[str, str]] = []  # (reason, message) of every Event sent
        # The pods created with what their admission asked of them: name -> assignment.
        self.assigned: dict[str, workload_.Assignment] = {}
        self.services: dict[str, observed.Service] = {}
        self.released: set[str] = set()  # uids of queued pods marked not retriable
        # While lagging, pods just created are in the apiserver but not in the cache: the step
        # sees them only as made (Input.made), until the next kubelets() shows them.
        self.lagging = False
        self.unseen: dict[str, observed.Pod] = {}
        self.invalid: tuple[validation.FieldError, ...] = ()  # the stored spec no longer reads
        # Pods that went while the operator was not watching, and whose index the stored status
        # recorded active in their attempt: (replica type, index, attempt).
        self.vanished_unseen: set[tuple[str, int, int]] = set()
        self.tensorboards = 0  # TensorBoards created (its Service is seen at once)
        self.decisions: list[lifecycle.Decision] = []
        # Whether the nodes declare that they restart pods in place (what the operator is told:
        # Input.in_place), and whether their kubelets do restart a moved pod (they may not).
        self.in_place = True
        self.restarting = True
        # The attempt each running pod's containers were started in (by uid): its agent's own.
        self.started: dict[str, int] = {}
        # The first rank's progress line, read at the next reconcile (spec.progress).
        self.reading: progress.Reading | None = None
        self._uids = itertools.count(1)
        self._uids_signal = itertools.count(1)  # the agents' exits that say "held"
        self._placement = itertools.cycle(self.nodes)
        self.api = worldapi.WorldApi(self)
        self.caches = worldapi.WorldCaches(self)
        self._operator()

    def _operator(self) -> None:
        """A new operator process: nothing remembered."""
        self.memory = memory.Memory()
        self.executor = execute.Executor(
            self.api,  # type: ignore[arg-type]
            caches=self.caches,
            remembered=self.memory,
            recorder=events.Recorder(self.api, clock=lambda: self.now),  # type: ignore[arg-type]
            scheduler=self.scheduler,
            accelerator_config={},
            clock=lambda: self.now,
        )

    # --- the operator ----------------------------------------------------------------------

    @property
    def name(self) -> str:
        return self.job.metadata.name or ""

    @property
    def namespace(self) -> str:
        return self.job.metadata.namespace or "default"

    @property
    def prebuilt(self) -> str | None:
        """The Workload MultiKueue made for the job (a worker's copy of a dispatched job)."""
        return workload_.prebuilt(self.job.metadata.annotations, {})

    @prebuilt.setter
    def prebuilt(self, name: str | None) -> None:
        annotations = {k: v for k, v in self.job.metadata.annotations.items() if k != workload_.PREBUILT}
        if name is not None:
            annotations[workload_.PREBUILT] = name
        self.job = attrs.evolve(self.job, metadata=attrs.evolve(self.job.metadata, annotations=annotations))

    @property
    def mine(self) -> memory.Job:
        """What the operator remembers of the job."""
        return self.memory.of(f"{self.namespace}/{self.name}", self.uid)

    @property
    def refused(self) -> tuple[v1beta1.Refusal, ...] | None:
        """What the apiserver refused at the operator's last try."""
        return self.mine.refused

    @refused.setter
    def refused(self, refused: tuple[v1beta1.Refusal, ...] | None) -> None:
        self.mine.refused = refused

    @property
    def last_write(self) -> datetime.datetime | None:
        return self.mine.last_write

    @last_write.setter
    def last_write(self, at: datetime.datetime | None) -> None:
        self.mine.last_write = at

    def input(self) -> lifecycle.Input | lifecycle.Invalid:
        """What the operator's observe makes of the World now."""
        if self.unreadable:
            return lifecycle.Invalid(
                name=self.name,
                status=self.status,
                errors=self.unreadable,
                now=self.now,
                generation=self.job.metadata.generation,
            )
        self._inform()
        job = attrs.evolve(self.job, status=self.status)
        return observe.observe(
            job,
            self.fw,
            self.caches,
            self.mine,
            self.memory.expected,
            scheduler=self.scheduler,
            now=self.now,
            reading=self.reading,
        )

    @property
    def unreadable(self) -> tuple[validation.FieldError, ...]:
        """Why the stored job cannot be read or run, as the operator's intake would say: a spec
        that stopped reading (:attr:`invalid`), or one its framework cannot run."""
        return self.invalid or tuple(fw_contract.validate(self.fw, self.job))

    def reconcile(self) -> lifecycle.Decision:
        """One pass of the operator: observe, step, execute."""
        inp = self.input()
        decision = lifecycle.step(inp)
        self.reading = None
        self.decisions.append(decision)
        invalid = isinstance(inp, lifecycle.Invalid)
        job = None if invalid else attrs.evolve(self.job, status=self.status)
        fw = None if invalid else self.fw
        _LOOP.run_until_complete(self.executor.run(self._object(invalid), job, fw, decision))
        if invalid:
            assert not decision.acts or decision.events, "an invalid job only says why it failed"
        assert self.status == decision.status, "the status stored is the status decided"
        return decision

    def _object(self, invalid: bool = False) -> dict[str, Any]:
        """The job as the operator's cache holds it."""
        md = {
            "name": self.name,
            "namespace": self.namespace,
            "uid": self.uid,
            "resourceVersion": str(self.version),
        }
        obj: dict[str, Any] = {"apiVersion": v1beta1.API_VERSION, "kind": "TrainingJob", "metadata": md}
        if invalid:
            obj["status"] = wire.unstructure(self.status)
        return obj

    # --- the apiserver, as the executor meets it (testkit.worldapi) --------------------------

    def stored(self, patch: dict[str, Any]) -> dict[str, Any]:
        """A status patch: over the version read, applied and read back."""
        if patch["metadata"]["resourceVersion"] != str(self.version):
            raise worldapi.refuse(409, "the object has been modified")
        self.status = worldapi.stored_status(self.status, patch["status"])
        self.version += 1
        return self._object(bool(self.unreadable))

    def created(self, obj: dict[str, Any]) -> None:
        """A pod the executor created, as the apiserver stores it."""
        pod = attrs.evolve(observed.Pod.of(obj), uid=f"uid-{next(self._uids)}", created=self.now)
        assert pod.attempt == self.status.replica_statuses[self._key(pod)].attempt, (
            "made in its type's attempt"
        )
        (self.unseen if self.lagging else self.pods)[pod.name] = pod
        for decision in self.decisions[-1:]:
            if pod.replica_type in decision.assigned:
                self.assigned[pod.name] = decision.assigned[pod.replica_type]

    def patched(self, pod: observed.Pod, md: dict[str, Any]) -> None:
        labels, annotations = md.get("labels") or {}, md.get("annotations") or {}
        changes: dict[str, Any] = {}
        if naming.ATTEMPT in labels:
            changes["attempt"] = int(labels[naming.ATTEMPT])
        if naming.OPENED in annotations:
            changes["opened"] = int(annotations[naming.OPENED])
        if naming.CHECKPOINT_REQUEST in annotations:
            self.asked[pod.name] = int(annotations[naming.CHECKPOINT_REQUEST])
        if annotations.get(naming.KUEUE_RETRIABLE) == "false":
            assert pod.in_queue, f"{pod.name} released, but it is in no queue"
            changes["released"] = True
            self.released.add(pod.uid)
        self.pods[pod.name] = attrs.evolve(pod, **changes)

    def deleted(self, pod: observed.Pod, *, force: bool) -> None:
        if force:
            self._remove(pod)
        elif pod.deleted is None:
            self.pods[pod.name] = attrs.evolve(pod, deleted=self.now + GRACE)

    def seen(self, kind: str, name: str, event: str) -> None:
        """The operator's informer of ``kind`` hears of ``name``."""
        expectations = self.memory.expected.get(kind)
        if expectations is not None:
            expectations.handler(event, {"metadata": {"name": name, "namespace": self.namespace}}, None)

    def _inform(self) -> None:
        """The informers have heard of every pod the cache shows."""
        for name in self.pods:
            self.seen("Pod", name, "MODIFIED")

    def _remove(self, pod: observed.Pod) -> None:
        del self.pods[pod.name]
        self.started.pop(pod.uid, None)
        self.tombstones[pod.uid] = attrs.evolve(pod, gone=True)
        self.seen("Pod", pod.name, "DELETED")

    def vanish_unseen(self, name: str) -> None:
        """The pod goes while the operator is not watching: no tombstone is left of it."""
        pod = self.pods.pop(name)
        key = self._key(pod)
        rs = self.status.replica_statuses.get(key, v1beta1.ReplicaStatus())
        if pod.attempt == rs.attempt and pod.index in indexes.parse_indexes(rs.active_indexes):
            self.vanished_unseen.add((pod.replica_type, pod.index, pod.attempt))

    def restart_operator(self) -> None:
        """The operator restarts: what it remembered is gone; its caches list what is there now.

        A pod it had seen go (a tombstone) is then one that went unseen."""
        live = {(p.replica_type, p.index, p.attempt) for p in self.pods.values()}
        for pod in self.tombstones.values():
            rs = self.status.replica_statuses.get(self._key(pod), v1beta1.ReplicaStatus())
            at = (pod.replica_type, pod.index, pod.attempt)
            recorded = pod.attempt == rs.attempt and pod.index in indexes.parse_indexes(rs.active_indexes)
            if recorded and at not in live:
                self.vanished_unseen.add(at)
        self.tombstones.clear()
        self.pods.update(self.unseen)
        self.unseen.clear()
        self._operator()

    def recreate(self) -> None:
        """The job is deleted and made again under its name while the operator does not look: a
        new UID and an empty status; the garbage collector deletes what the old one controlled
        (its gang groups and Workload at once, its pods are stopping and keep their names a while)."""
        old = self.uid
        self.uid = f"job-uid-{int(old.rpartition('-')[2]) + 1}"
        self.job = attrs.evolve(self.job, metadata=attrs.evolve(self.job.metadata, uid=self.uid))
        self.status = v1beta1.TrainingJobStatus()
        self.version += 1
        self.others.update(dict.fromkeys(self.pods, old))
        self.pods.clear()
        self.unseen.clear()
        self.tombstones.clear()
        self.started.clear()
        self.services.clear()
        self.shared.clear()
        self.groups.clear()
        self.workload = None
        self.vanished_unseen.clear()
        self.decisions.clear()

    # --- Kueue ------------------------------------------------------------------------------

    def admit(self, counts: dict[str, int] | None = None, *, checked: bool = True) -> None:
        """Kueue reserves quota for the Workload (each pod set's count, or ``counts``), and, once
        its admission checks are ready (``checked``), admits it."""
        assert self.workload is not None, "no Workload to admit"
        sets = {
            workload_.pod_set_name(k): workload_.Assignment(
                count=(counts or {}).get(k, s.replicas), node_selector={"flavor": "on-demand"}
            )
            for k, s in self.job.spec.replica_specs.items()
        }
        self.workload = attrs.evolve(
            self.workload, reserved=True, admitted=checked, evicted=None, cluster_queue="cq", assignments=sets
        )

    def kueue_evicts(self, reason: str = "Preempted") -> None:
        assert self.workload is not None, "no Workload to evict"
        self.workload = attrs.evolve(self.workload, evicted=(reason, f"{reason} by Kueue"))

    # --- the cluster -----------------------------------------------------------------------

    def kubelets(self) -> None:
        """The cache shows the pods it lagged behind; pending pods start on a live node; deleted
        pods on live nodes go away."""
        self.pods.update(self.unseen)
        self.unseen.clear()
        self.others.clear()  # a predecessor's pods stopped: their names are free
        for pod in list(self.pods.values()):
            node = pod.node
            if node in self.lost:
                continue
            if pod.deleted is not None:
                self._remove(pod)
            elif pod.node is None and pod.phase == "Pending" and pod.name not in self.held:
                self._schedule(pod)
            elif pod.node is not None:
                self._restart_in_place(pod)

    def _restart_in_place(self, pod: observed.Pod) -> None:
        """The agent of a pod moved to another attempt has the kubelet restart every container
        (each restart counted); the barrier then holds the pod until it is opened."""
        if pod.finished or pod.opened is None:
            return
        if pod.running and self.restarting and self.started.get(pod.uid) != pod.attempt:
            pod = attrs.evolve(
                pod,
                phase="Pending",
                running=False,
                ready=False,
                restarts=pod.restarts + 1,
                restarted_in_place=True,
                started_at=None,
                hung_at=None,  # the agent's last end is now its exit for the restart
                held_signal=None,
            )
            self.started.pop(pod.uid, None)
        if not pod.running and pod.opened == pod.attempt and self.started.get(pod.uid) != pod.attempt:
            # The kubelet counts the start after a restart in place once more. The barrier lets an
            # attempt start once in a pod (started: its memory).
            restarts = pod.restarts + pod.restarted_in_place
            pod = attrs.evolve(
                pod,
                phase="Running",
                running=True,
                ready=True,
                restarts=restarts,
                started_at=self._started(),
            )
            self.started[pod.uid] = pod.attempt
        self.pods[pod.name] = pod

    def _schedule(self, pod: observed.Pod) -> None:
        """Place ``pod`` on the next live node its affinity allows, or say it cannot be placed."""
        fits = [n for n in self.nodes if n not in self.lost and n not in pod.avoiding]
        if fits:
            node = next(n for n in self._placement if n in fits)
            # A pod made closed waits at its barrier (init containers: Pending) until opened.
            if pod.opened is not None and pod.opened < pod.attempt:
                self.pods[pod.name] = attrs.evolve(pod, node=node, unscheduled=None)
                return
            self.pods[pod.name] = attrs.evolve(
                pod,
                phase="Running",
                running=True,
                ready=True,
                node=node,
                unscheduled=None,
                started_at=self._started(),
            )
            self.started[pod.uid] = pod.attempt
        elif pod.unscheduled is None:
            k = len(self.nodes) - len(self.lost)
            said = f"0/{k} nodes are available: {k} node(s) didn't match Pod's node affinity/selector."
            self.pods[pod.name] = attrs.evolve(
                pod, unscheduled=("Unschedulable", said), unscheduled_since=self.now
            )

    def exit(self, name: str, code: int, reason: str | None = None) -> None:
        """The pod's main container exits; the kubelet restarts it if the pod's policy says so."""
        pod = self.pods[name]
        container = lifecycle.Defaults.of(self.fw, self.job.spec).containers[self._key(pod)]
        why = reason or ("Completed" if code == 0 else "Error")
        if self._kubelet_restarts(pod, code):
            self.pods[name] = attrs.evolve(
                pod,
                restarts=pod.restarts + 1,
                exit_codes={container: code},
                reasons=(why,),
                restarted_in_place=False,
                started_at=self._started(),
            )
        elif self._restarts_all(pod, code, container):
            # Its rule restarts the pod in place and the barrier holds it: the attempt ran here.
            # The exit code the kubelet erases is kept (the operator's cache carries it).
            self.pods[name] = attrs.evolve(
                pod,
                phase="Pending",
                ready=False,
                running=False,
                restarts=pod.restarts + 1,
                exit_codes={container: code},
                reasons=(why,),
                restarted_in_place=False,
                started_at=None,
                # The agent's word stays in the pod's status until its next exit.
                held_signal=f"agent-{next(self._uids_signal)}",
                held_attempt=self.started.get(pod.uid, pod.attempt),  # the attempt that ran there
            )
        else:
            self.pods[name] = attrs.evolve(
                pod,
                phase="Succeeded" if code == 0 else "Failed",
                ready=False,
                running=False,
                restarted_in_place=False,
                exit_codes={container: code},
                reasons=(why,),
                started_at=None,
            )
            self.started.pop(pod.uid, None)

    def hang(self, name: str) -> None:
        """The pod's agent finds its step unmoved for the deadline and exits (spec.progress)."""
        self.pods[name] = attrs.evolve(self.pods[name], hung_at=self.now)

    def report(
        self, step: int, total: int | None = None, checkpoint: int | None = None, answered: int | None = None
    ) -> bool:
        """The first rank's agent prints ``step`` (with the rank's last ``checkpoint`` and the
        request it ``answered``): read at the next reconcile, if that rank runs."""
        defaults = lifecycle.Defaults.of(self.fw, self.job.spec)
        job = attrs.evolve(self.job, status=self.status)
        pod = progress.source(job, self.pods.values(), defaults.progress_from)
        if pod is None:
            return False
        self.reading = progress.Reading(
            pod=pod.name, step=step, total=total, checkpoint=checkpoint, answered=answered
        )
        return True

    def _started(self) -> datetime.datetime | None:
        """When a pod's containers start, as the pod shows it: only a pod with the agent (spec.progress)
        shows it."""
        return self.now if self.job.spec.progress is not None else None

    def _key(self, pod: observed.Pod) -> str:
        return next(k for k in self.job.spec.replica_specs if k.lower() == pod.replica_type)

    def _kubelet_restarts(self, pod: observed.Pod, code: int) -> bool:
        policy = self.job.spec.replica_specs[self._key(pod)].restart_policy or self.fw.restart_policy
        return policy is v1beta1.RestartPolicy.ALWAYS or (
            policy is v1beta1.RestartPolicy.ON_FAILURE and code != 0
        )

    def _restarts_all(self, pod: observed.Pod, code: int, container: str) -> bool:
        """Whether the main container's rule has the kubelet restart the pod in place on ``code``
        (a pod made to restart in place under ``Never``, on a kubelet that can)."""
        if not inplace.says_its_ends(pod) or not self.restarting:
            return False
        return code in render.kubelet_restart_codes(self.job.spec, self.fw, self._key(pod), container)

    def hold(self, names: list[str], reason: str) -> None:
        """The scheduler cannot place these Pending pods (``Unschedulable``), or a queue gates them."""
        for name in names:
            pod = self.pods[name]
            if pod.node is None and pod.deleted is None:
                self.pods[name] = attrs.evolve(pod, unscheduled=(reason, "held"), unscheduled_since=self.now)
                self.held.add(name)

    def evict(self, name: str) -> None:
        pod = self.pods[name]
        self.pods[name] = attrs.evolve(
            pod,
            conditions=pod.conditions | {"DisruptionTarget"},
            disruption="EvictionByEvictionAPI",
            deleted=pod.deleted or self.now + GRACE,
        )

    def lose_node(self, node: str) -> None:
        """The node's kubelet vanishes; its pods are marked and deleted, and stay Terminating."""
        self.lost.add(node)
        for pod in list(self.pods.values()):
            if pod.node == node:
                self.pods[pod.name] = attrs.evolve(
                    pod,
                    conditions=pod.conditions | {"DisruptionTarget"},
                    disruption="DeletionByTaintManager",
                    deleted=pod.deleted or self.now,
                )

    def tick(self, seconds: float) -> None:
        self.now += datetime.timedelta(seconds=seconds)

    # --- reading ---------------------------------------------------------------------------

    @property
    def state(self) -> v1beta1.JobState:
        return v1beta1.state_of(self.status.conditions)

    def running_attempts(self) -> dict[str, set[int]]:
        """Replica type -> the attempts the running pods' containers were started in."""
        out: dict[str, set[int]] = {}
        for pod in self.pods.values():
            if pod.uid in self.started:
                out.setdefault(pod.replica_type, set()).add(self.started[pod.uid])
        return out

    def pod(self, key: str, index: int) -> observed.Pod:
        return self.pods[naming.replica_name(self.name, key, index)]

    def settle(self, rounds: int = 8) -> None:
        """Reconcile and run the kubelets until nothing changes (or ``rounds`` run out)."""
        for _ in range(rounds):
            before = (self.status, dict(self.pods))
            self.reconcile()
            self.kubelets()
            if (self.status, self.pods) == before:
                return
