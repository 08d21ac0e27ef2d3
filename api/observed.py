"""What the operator sees of one pod: the facts the failure semantics decide on.

:meth:`Pod.of` reads a pod as the apiserver returns it — phase, exit codes and reasons
per container, container restarts, true conditions (``DisruptionTarget`` among them),
its node and whether that node still exists, when it was created and when its
deletion was asked for — into a frozen value. A pod that has been deleted from the
apiserver can still be observed for a while through its last known state
(``gone=True``), so that a pod that failed and vanished between two reconciles is still
counted. Nothing here talks to the apiserver.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any

import attrs

from kubetrain.api import naming, wire

__all__ = [
    "IMAGE_PULL_REASONS",
    "NODE_NAME_FIELD",
    "RESTARTED_IN_PLACE",
    "Pod",
    "Service",
    "avoided_nodes",
    "has_agent",
]

# The field a node selector term matches a node's name by.
NODE_NAME_FIELD = "metadata.name"
_BACKOFF = "CrashLoopBackOff"
# The reason of a container's last termination when the kubelet restarted its whole pod in place.
RESTARTED_IN_PLACE = "RestartingAllContainers"
IMAGE_PULL_REASONS = frozenset({"ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull"})


@attrs.frozen(kw_only=True)
class Pod:
    name: str
    uid: str
    replica_type: str  # as labelled: lower case
    index: int
    attempt: int = 0
    phase: str = "Pending"
    ready: bool = False
    created: datetime.datetime | None = None
    deleted: datetime.datetime | None = None  # deletionTimestamp: when the grace period ends
    node: str | None = None
    node_exists: bool = True
    gone: bool = False
    # Gone without being seen to go: known only from the status's record of active indexes
    # (the operator was down, or its watch broken, when it went).
    vanished: bool = False
    restarts: int = 0
    backing_off: int = 0  # crashed containers the kubelet has yet to start again
    # Its containers last stopped for a restart of the whole pod in place (RestartAllContainers),
    # not for a failure: the restart counts that restart added are none of the job's failures.
    restarted_in_place: bool = False
    exit_codes: Mapping[str, int] = attrs.field(factory=dict)
    reasons: tuple[str, ...] = ()
    conditions: frozenset[str] = frozenset()
    disruption: str | None = None
    waiting: frozenset[str] = frozenset()
    # PodScheduled False: why the scheduler has not placed it (reason, message), and since when.
    unscheduled: tuple[str, str] | None = None
    unscheduled_since: datetime.datetime | None = None
    # Labelled with a Kueue queue (it is one of a Kueue group), and marked never to be retried
    # in that group (the job is done with it).
    in_queue: bool = False
    released: bool = False
    # The nodes its affinity keeps it off (``metadata.name NotIn``): the job's avoided nodes
    # and the unhealthy ones, as they were when it was created.
    avoiding: frozenset[str] = frozenset()
    # Restartable in place (it has kubetrain's agent and barrier): the attempt its barrier lets
    # start (naming.OPENED); below ``attempt`` while the pod moves to a new attempt in place.
    opened: int | None = None
    # Some container of its own (not an init container or sidecar) runs now.
    running: bool = False
    # With kubetrain's agent: when the last of its own running containers started (none runs: None).
    started_at: datetime.datetime | None = None
    # When its agent last exited because the step stopped moving (spec.progress.deadlineSeconds),
    # unless the pod restarted in place since.
    hung_at: datetime.datetime | None = None
    # Its agent's last word was that its main container ended, the kubelet restarted the pod in
    # place for it and the barrier holds it, its attempt having run there (naming.HELD_EXIT_CODE,
    # once per attempt): which exit of the agent said it (its container's ID; None: its last end
    # was another).
    held_signal: str | None = None
    # The attempt that word speaks of (its termination message; None: not said).
    held_attempt: int | None = None
    # Its pod restartPolicy.
    restart_policy: str = "Always"
    # The gang group it was made to join (its label), if any: a pod moved to a new attempt in place
    # still belongs to the group it was placed with.
    gang: str | None = None

    @property
    def crashes(self) -> int:
        """The kubelet's restarts of its containers, those it has yet to make included."""
        return self.restarts + self.backing_off

    @property
    def held(self) -> bool:
        """Waiting at its barrier after its agent said its attempt ended (none of its own runs)."""
        return self.held_signal is not None and not self.running

    @property
    def moving(self) -> bool:
        """Moved to a new attempt in place, and held at its barrier until the operator opens it."""
        return self.opened is not None and self.opened < self.attempt

    @property
    def deleting(self) -> bool:
        return self.deleted is not None or self.gone

    @property
    def finished(self) -> bool:
        return self.phase in ("Succeeded", "Failed")

    @classmethod
    def of(cls, obj: Mapping[str, Any], *, node_exists: bool = True, gone: bool = False) -> Pod:
        meta = obj["metadata"]
        labels = meta.get("labels") or {}
        status = obj.get("status") or {}
        containers = [*status.get("initContainerStatuses", []), *status.get("containerStatuses", [])]
        annotations = meta.get("annotations") or {}
        phase = status.get("phase", "Pending")
        # A finished pod's containers are not started again, whatever its policy.
        policy = (
            "Never"
            if phase in ("Succeeded", "Failed")
            else (obj.get("spec") or {}).get("restartPolicy", "Always")
        )
        restarts, backing_off = _restarts(
            status.get("initContainerStatuses", []), status.get("containerStatuses", []), policy
        )
        exit_codes: dict[str, int] = {}
        reasons: list[str] = [status["reason"]] if status.get("reason") else []
        waiting: set[str] = set()
        for c in containers:
            state = c.get("state") or {}
            # A container that exits and is restarted by the kubelet shows why in lastState.
            terminated = state.get("terminated") or (c.get("lastState") or {}).get("terminated")
            # A container stopped for a restart in place (exit code 137) did not end by itself.
            if terminated and c.get("name") not in _OWN and terminated.get("reason") != RESTARTED_IN_PLACE:
                exit_codes[c["name"]] = int(terminated.get("exitCode", 0))
                if terminated.get("reason"):
                    reasons.append(terminated["reason"])
            if (state.get("waiting") or {}).get("reason"):
                waiting.add(state["waiting"]["reason"])
        running = any("running" in (c.get("state") or {}) for c in status.get("containerStatuses", []))
        agent_end = _agent_end(status.get("initContainerStatuses", []))
        true = {c["type"]: c for c in status.get("conditions", []) if c.get("status") == "True"}
        # Kueue marks the pods it preempts TerminationTarget, the way Kubernetes marks DisruptionTarget.
        disruption = true.get("DisruptionTarget") or true.get("TerminationTarget")
        unscheduled = next(
            (
                c
                for c in status.get("conditions", [])
                if c.get("type") == "PodScheduled" and c.get("status") == "False"
            ),
            None,
        )
        return cls(
            name=meta["name"],
            uid=meta.get("uid", ""),
            replica_type=labels.get(naming.REPLICA_TYPE, ""),
            index=_int(labels.get(naming.REPLICA_INDEX)),
            attempt=_int(labels.get(naming.ATTEMPT)),
            phase=phase,
            ready="Ready" in true,
            created=_time(meta.get("creationTimestamp")),
            deleted=_time(meta.get("deletionTimestamp")),
            node=(obj.get("spec") or {}).get("nodeName"),
            node_exists=node_exists,
            gone=gone,
            restarts=restarts,
            backing_off=backing_off,
            exit_codes=exit_codes,
            reasons=tuple(reasons),
            conditions=frozenset(true),
            disruption=(disruption.get("reason") or "DisruptionTarget") if disruption else None,
            waiting=frozenset(waiting),
            unscheduled=(unscheduled.get("reason") or "", unscheduled.get("message") or "")
            if unscheduled
            else None,
            unscheduled_since=_time(unscheduled.get("lastTransitionTime")) if unscheduled else None,
            in_queue=naming.KUEUE_QUEUE_NAME in labels,
            released=annotations.get(naming.KUEUE_RETRIABLE) == "false",
            avoiding=avoided_nodes(obj.get("spec") or {}),
            opened=_int(annotations[naming.OPENED]) if naming.OPENED in annotations else None,
            restarted_in_place=any(
                ((c.get("lastState") or {}).get("terminated") or {}).get("reason") == RESTARTED_IN_PLACE
                and "terminated" not in (c.get("state") or {})
                for c in status.get("containerStatuses", [])
                if c.get("name") not in _OWN
            ),
            running=running,
            started_at=None
            if not has_agent(status)
            else max(
                (
                    t
                    for c in status.get("containerStatuses", [])
                    if c.get("name") not in _OWN
                    and (t := _loose_time(((c.get("state") or {}).get("running") or {}).get("startedAt")))
                ),
                default=None,
            ),
            hung_at=_hung_at(agent_end),
            held_signal=_held_signal(agent_end),
            held_attempt=_held_attempt(agent_end),
            restart_policy=(obj.get("spec") or {}).get("restartPolicy", "Always"),
            gang=labels.get(naming.GANG),
        )


_OWN = frozenset({naming.AGENT, naming.BARRIER})


def _restarts(
    init: list[Mapping[str, Any]], regular: list[Mapping[str, Any]], policy: str
) -> tuple[int, int]:
    """The restart counts of the pod's own containers, and how many of them crashed and wait for
    the kubelet to start them again (a regular one stopped under ``policy``, the pod's
    restartPolicy, or any waiting out its back-off): their count goes up only when they start,
    after a back-off of up to 5 minutes. kubetrain's own containers restart with the pod, not for
    a failure of it."""
    restarts = pending = 0
    for is_regular, containers in ((False, init), (True, regular)):
        for c in containers:
            if c.get("name") in _OWN:
                continue
            restarts += int(c.get("restartCount", 0))
            state = c.get("state") or {}
            ended = state.get("terminated")
            code = int(ended.get("exitCode", 0)) if ended else None
            if ((state.get("waiting") or {}).get("reason")) == _BACKOFF:
                pending += 1
            elif (
                is_regular
                and code is not None
                and (policy == "Always" or (policy == "OnFailure" and code != 0))
            ):
                pending += 1  # stopped, and not yet waiting out the back-off
    return restarts, pending


def has_agent(status: Mapping[str, Any]) -> bool:
    """Whether a pod's status shows kubetrain's agent (a hang is judged by it, and by start times)."""
    return any(
        isinstance(c, Mapping) and c.get("name") == naming.AGENT
        for c in status.get("initContainerStatuses") or ()
    )


def _agent_end(init: list[Mapping[str, Any]]) -> Mapping[str, Any]:
    """The agent's current or, running again, last end (empty: none)."""
    for c in init:
        if c.get("name") == naming.AGENT:
            return (
                (c.get("state") or {}).get("terminated") or (c.get("lastState") or {}).get("terminated") or {}
            )
    return {}


def _held_signal(end: Mapping[str, Any]) -> str | None:
    """Which exit of the agent said the pod is held, if its last one did: its container's ID (the
    restart count changes between the exit and the next start), else when it ended."""
    if end.get("exitCode") != naming.HELD_EXIT_CODE:
        return None
    return str(end.get("containerID") or end.get("finishedAt") or end.get("startedAt") or "held")


def _held_attempt(end: Mapping[str, Any]) -> int | None:
    """The attempt the agent's word "held" speaks of (its termination message), if it says one."""
    said = str(end.get("message") or "").strip()
    return int(said) if end.get("exitCode") == naming.HELD_EXIT_CODE and said.isdigit() else None


def _hung_at(end: Mapping[str, Any]) -> datetime.datetime | None:
    """When the agent exited for a hang, if its last end was that."""
    if end.get("exitCode") != naming.HUNG_EXIT_CODE:
        return None
    return _loose_time(end.get("finishedAt")) or _loose_time(end.get("startedAt"))


def avoided_nodes(pod_spec: Mapping[str, Any]) -> frozenset[str]:
    """The node names a pod spec's required node affinity excludes, in every one of its terms."""
    required = ((pod_spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    out: set[str] = set()
    for i, term in enumerate(required.get("nodeSelectorTerms") or ()):
        names = {
            v
            for f in term.get("matchFields") or ()
            if f.get("key") == NODE_NAME_FIELD and f.get("operator") == "NotIn"
            for v in f.get("values") or ()
        }
        out = names if i == 0 else out & names
    return frozenset(out)


@attrs.frozen(kw_only=True)
class Service:
    """One of a job's Services: a replica's (its type and index) or the job's own (neither)."""

    name: str
    replica_type: str | None = None  # as labelled: lower case
    index: int | None = None

    @classmethod
    def of(cls, obj: Mapping[str, Any]) -> Service:
        meta = obj["metadata"]
        labels = meta.get("labels") or {}
        index = labels.get(naming.REPLICA_INDEX)
        return cls(
            name=meta["name"],
            replica_type=labels.get(naming.REPLICA_TYPE),
            index=int(index) if index is not None and index.isdigit() else None,
        )


def _int(value: str | None) -> int:
    try:
        return int(value) if value is not None else 0
    except ValueError:
        return 0


def _time(value: str | None) -> datetime.datetime | None:
    return wire.parse_time(value) if value else None


def _loose_time(value: str | None) -> datetime.datetime | None:
    """A container state's time, or None where a kubelet (or a fake one) wrote none that reads."""
    try:
        return _time(value)
    except ValueError:
        return None
