"""A tiny simulated cluster for the lifecycle: pods, nodes, kubelets and a clock.

:class:`World` holds one job and plays everything around :func:`lifecycle.step`: it
carries out a :class:`~kubetrain.operator.lifecycle.Decision` (creates pods Pending
with the attempt their type's status names, deletes them with a grace period, force
deletes them), runs the kubelets (pending pods start, deleted pods on live nodes go
away, leaving a tombstone), and lets tests make things happen to pods: exit, hang (their agent
says the step stopped moving), be restarted in place by the kubelet, be evicted, lose their node; and nodes turn unhealthy. Its
scheduler honours the nodes a pod keeps off, and says so when no node is left. It also plays what the
reconciler does around the step: the Services a create pass makes (one per replica), the
Services and queued pods a decision lets go, the status writes pacing counts from, a cache
that lags behind the pods just created (:attr:`World.lagging`), and a stored spec that stops
being valid (:attr:`World.invalid`). Unit tests drive it by hand; the property tests let
hypothesis drive it.
"""

from __future__ import annotations

import datetime
import itertools

import attrs

from kubetrain.api import indexes, naming, observed, v1beta1, validation
from kubetrain.operator import lifecycle, render
from kubetrain.operator.frameworks import framework as fw_contract
from kubetrain.operator.policies import inplace, progress
from kubetrain.operator.scheduling import backend
from kubetrain.operator.scheduling import workload as workload_

T0 = datetime.datetime(2026, 11, 21, 12, 0, tzinfo=datetime.UTC)
GRACE = datetime.timedelta(seconds=30)


class World:
    def __init__(
        self,
        job: v1beta1.TrainingJob,
        fw: fw_contract.Framework,
        nodes: int = 2,
        *,
        kueue: str = backend.POD_ROUTE,
    ) -> None:
        self.job, self.fw = job, fw
        self.status = job.status
        self.now = T0
        self.pods: dict[str, observed.Pod] = {}
        self.tombstones: dict[str, observed.Pod] = {}
        self.nodes = [f"node-{i}" for i in range(nodes)]
        self.lost: set[str] = set()
        self.unhealthy: set[str] = set()  # nodes the operator is told are unhealthy
        self.deleted_job = False
        # Pods the simulated apiserver refuses to create: name -> (status, message).
        self.refusing: dict[str, tuple[int, str]] = {}
        self.refused: tuple[v1beta1.Refusal, ...] | None = None  # the operator's, at its last try
        # Pods the scheduler (or a queue) holds back: the kubelets never see them.
        self.held: set[str] = set()
        policy = job.spec.run_policy.scheduling_policy
        # In a Kueue queue (the operator's --kueue): the gang as plain-pod groups, or the job as
        # its own Workload, which Kueue admits, evicts and sees finished (None: not created yet).
        self.queued = bool(policy and policy.queue) and kueue == backend.POD_ROUTE
        self.admission = bool(policy and policy.queue) and kueue == backend.WORKLOAD_ROUTE
        self.workload: workload_.Seen | None = None
        self.prebuilt: str | None = None  # the Workload MultiKueue made for the job (a worker's)
        # The pods created with what their admission asked of them: name -> assignment.
        self.assigned: dict[str, workload_.Assignment] = {}
        self.services: dict[str, observed.Service] = {}
        self.released: set[str] = set()  # uids of queued pods marked not retriable
        self.last_write: datetime.datetime | None = None
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

    # --- the operator ----------------------------------------------------------------------

    @property
    def name(self) -> str:
        return self.job.metadata.name or ""

    def input(self) -> lifecycle.Input | lifecycle.Invalid:
        if self.invalid:
            return lifecycle.Invalid(
                name=self.name,
                status=self.status,
                errors=self.invalid,
                now=self.now,
                generation=self.job.metadata.generation,
            )
        live = {p.uid for p in self.pods.values()}
        pods = [
            attrs.evolve(p, node_exists=p.node not in self.lost or p.node is None) for p in self.pods.values()
        ]
        gone = [p for uid, p in self.tombstones.items() if uid not in live]
        return lifecycle.Input(
            name=self.name,
            namespace=self.job.metadata.namespace or "default",
            generation=self.job.metadata.generation,
            spec=self.job.spec,
            status=self.status,
            pods=(*pods, *gone),
            defaults=lifecycle.Defaults.of(self.fw, self.job.spec),
            now=self.now,
            refused=self.refused,
            queued=self.queued,
            admission=self.admission,
            workload=self.workload,
            prebuilt=self.prebuilt,
            tensorboard=self.tensorboards > 0,
            services=tuple(self.services.values()),
            made=frozenset(self.unseen),
            last_write=self.last_write,
            unhealthy=frozenset(self.unhealthy),
            in_place=self.in_place,
            progress=self.reading,
        )

    def reconcile(self) -> lifecycle.Decision:
        decision = lifecycle.step(self.input())
        self.reading = None
        self.decisions.append(decision)
        if decision.status != self.status:
            self.last_write = self.now
        self.status = decision.status
        if self.invalid:
            assert not decision.acts or decision.events, "an invalid job only says why it failed"
            return decision
        refused = []
        if decision.create:  # as the reconciler: the Services first, one per replica
            for key, spec in self.job.spec.replica_specs.items():
                for i in range(spec.replicas):
                    name = naming.replica_name(self.name, key, i)
                    self.services.setdefault(
                        name, observed.Service(name=name, replica_type=key.lower(), index=i)
                    )
        for key, index in decision.create:
            name = naming.replica_name(self.name, key, index)
            if name not in self.refusing:
                self._create(key, index, decision)
                continue
            status, message = self.refusing[name]
            refused.append(
                v1beta1.Refusal(
                    kind="Pod",
                    name=name,
                    code=status,
                    message=message,
                    time=self.now,
                    observed_generation=self.job.metadata.generation,
                )
            )
        if decision.create:  # as the reconciler: a create pass replaces what was refused
            self.refused = tuple(refused)
        for name in decision.release:
            pod = self.pods[name]
            assert pod.in_queue, f"{name} released, but it is in no queue"
            self.pods[name] = attrs.evolve(pod, released=True)
            self.released.add(pod.uid)
        for m in decision.move:
            self._patch(m, attempt=m.attempt)
        for m in decision.open:
            self._patch(m, opened=m.attempt)
        for d in decision.delete:
            self._delete(d)
        for name in decision.delete_services:
            del self.services[name]
        self.deleted_job = self.deleted_job or decision.delete_job
        self.tensorboards += decision.tensorboard
        self._to_workload(decision.workload)
        return decision

    def _to_workload(self, act: workload_.Act | None) -> None:
        """As the reconciler and the apiserver: create the Workload (a second create is a 409),
        finish it, or give its quota back."""
        w = self.workload
        if act is workload_.Act.CREATE and w is None:
            self.workload = workload_.Seen(name=workload_.name_of(self.name, "uid"))
        elif act is workload_.Act.FINISH and w is not None:
            self.workload = attrs.evolve(w, finished=True)
        elif act is workload_.Act.REQUEUE and w is not None:
            self.workload = attrs.evolve(w, reserved=False, admitted=False, assignments={})
        elif act is workload_.Act.DELETE:
            self.workload = None
        elif act is workload_.Act.ADOPT and w is not None:
            self.workload = attrs.evolve(w, owned=True)

    def _create(self, key: str, index: int, decision: lifecycle.Decision) -> None:
        name = naming.replica_name(self.name, key, index)
        assert name not in self.pods, f"{name} created twice"
        assert name not in self.unseen, f"{name} created twice while the cache lagged"
        attempt = self.status.replica_statuses[key].attempt
        pod = observed.Pod(
            name=name,
            uid=f"uid-{next(self._uids)}",
            replica_type=key.lower(),
            index=index,
            attempt=attempt,
            created=self.now,
            in_queue=self.queued,
            avoiding=frozenset(decision.keep_off),
            opened=(inplace.CLOSED if decision.closed else attempt) if decision.in_place else None,
            restart_policy=render.pod_restart_policy(
                self.job.spec.replica_specs[key].restart_policy or self.fw.restart_policy
            ),
        )
        (self.unseen if self.lagging else self.pods)[name] = pod
        if key.lower() in decision.assigned:
            self.assigned[name] = decision.assigned[key.lower()]

    def _patch(self, m: lifecycle.Move, **changes: int) -> None:
        pod = self.pods.get(m.pod)
        if pod is None or pod.uid != m.uid:
            return  # the apiserver: 404, or refused by the UID precondition
        self.pods[m.pod] = attrs.evolve(pod, **changes)

    def _delete(self, d: lifecycle.Delete) -> None:
        pod = self.pods.get(d.pod)
        if pod is None or pod.uid != d.uid:
            return  # the apiserver: 404, or 409 on the UID precondition
        if d.force:
            self._remove(pod)
        elif pod.deleted is None:
            self.pods[d.pod] = attrs.evolve(pod, deleted=self.now + GRACE)

    def _remove(self, pod: observed.Pod) -> None:
        del self.pods[pod.name]
        self.started.pop(pod.uid, None)
        self.tombstones[pod.uid] = attrs.evolve(pod, gone=True)

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
        self.last_write = None
        self.refused = None
        self.pods.update(self.unseen)
        self.unseen.clear()

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

    def report(self, step: int, total: int | None = None) -> bool:
        """The first rank's agent prints ``step``: read at the next reconcile, if that rank runs."""
        defaults = lifecycle.Defaults.of(self.fw, self.job.spec)
        job = attrs.evolve(self.job, status=self.status)
        pod = progress.source(job, self.pods.values(), defaults.progress_from)
        if pod is None:
            return False
        self.reading = progress.Reading(pod=pod.name, step=step, total=total)
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
