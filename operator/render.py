"""Every object of a TrainingJob, computed from the job alone.

:func:`render` is pure: given a v1beta1 job and its framework it returns the
ConfigMap (when the framework has files), the Secret (when it has one), one headless
Service per replica (when the framework needs them), one Pod per replica and, last, the
TensorBoard's Deployment and Service (when ``spec.tensorboard`` asks for one, see
:mod:`.tensorboard`), as plain dictionaries ready for the apiserver. The reconciler creates
exactly these — the TensorBoard once, apart from the replicas' objects; ``kubetrain render``
prints them.

The Secret is the one output that may differ between calls: an ssh key pair is random.
Its name, ``{job}-ssh``, is fixed, and the reconciler creates it only when it is missing
(AlreadyExists is success) and never updates it, so a job keeps the first key it was
given and every pod, whenever it is created, mounts that one.

Precedence: a variable that the user already set in the main container is kept, and
the framework's value for it is not added — user intent wins and nothing is silently
overwritten. Labels and annotations of the pod template are kept; kubetrain's own
labels are added on top because selectors depend on them. A template on the host's network
(``hostNetwork: true``) without a ``dnsPolicy`` gets ``ClusterFirstWithHostNet``, so that the
Service names in its env resolve there too.
"""

from __future__ import annotations

import base64
import copy
from collections.abc import Collection, Mapping
from typing import Any

from kubetrain.api import naming, observed, v1beta1, validation
from kubetrain.operator import agent, scheduling, tensorboard
from kubetrain.operator.frameworks import framework as fw_contract
from kubetrain.operator.policies import checkpoint, inplace
from kubetrain.operator.scheduling import backend

__all__ = [
    "CONFIG_MOUNT",
    "LAST_RESTART_REASON_ENV",
    "RESTARTS_ENV",
    "RESTART_ATTEMPT_ENV",
    "RESTART_ENV",
    "SECRET_MODE",
    "kubelet_restart_codes",
    "moved",
    "owner_reference",
    "pod_restart_policy",
    "render",
    "representatives",
]

CONFIG_MOUNT = fw_contract.CONFIG_MOUNT
_CONFIG_VOLUME = "kubetrain-config"
_SECRET_VOLUME = "kubetrain-secret"
# Owner read and write only: ssh refuses a private key that others can read.
SECRET_MODE = 0o600
# Every main container's: its attempt, the job's restarts so far, the last restart's reason.
RESTART_ATTEMPT_ENV = fw_contract.RESTART_ATTEMPT_ENV
RESTARTS_ENV = fw_contract.RESTARTS_ENV
LAST_RESTART_REASON_ENV = fw_contract.LAST_RESTART_REASON_ENV
RESUME_STEP_ENV = fw_contract.RESUME_STEP_ENV
RESTART_ENV = (RESTART_ATTEMPT_ENV, RESTARTS_ENV, LAST_RESTART_REASON_ENV, RESUME_STEP_ENV)

Object = dict[str, Any]


def render(
    job: v1beta1.TrainingJob,
    fw: fw_contract.Framework,
    scheduler: backend.Backend = backend.NONE,
    *,
    pods: Collection[tuple[str, int]] | None = None,
    joining: Collection[str] = (),
    keep_off: Collection[str] = (),
    in_place: bool = False,
    closed: bool = False,
    with_tensorboard: bool = True,
    machine: fw_contract.Machine | None = None,
) -> list[Object]:
    """ConfigMap, Services, gang groups, Pods and TensorBoard of ``job``; raises ValidationError if it cannot run.

    ``scheduler`` is the gang-scheduling backend: it adds one group object per gang the pods
    join (see :mod:`.scheduling.gang`) and marks the pods; ``schedulingPolicy.queue`` puts
    them in a Kueue queue (a Volcano queue with Volcano) and ``priorityClass`` is every pod's.
    ``pods`` (replica type as the spec spells it, index) renders only those pods, so that
    replacing one pod costs one pod's rendering; ``joining`` names the replica types whose pods
    are created into an attempt under way, which join a gang of their own, not the attempt's
    (:func:`.scheduling.gang.of_joiners`); the pods keep off the nodes named in ``keep_off``
    (:mod:`.policies.avoid`); ``in_place`` gives each pod the agent and barrier that restart it
    in place (:mod:`.agent`), ``closed`` makes their barrier wait until the operator opens it
    (:mod:`.policies.inplace`); ``with_tensorboard=False`` leaves the TensorBoard out (the
    reconciler creates it apart); ``machine`` puts every replica on one machine, each at the
    address it gives (:class:`.frameworks.framework.Machine`: the local runner's).
    """
    errors = fw_contract.validate(fw, job)
    if errors:
        raise validation.ValidationError(errors)
    world = fw_contract.World.of(job, fw, machine)
    files = fw.files(world)
    secret = fw.secret(world) if fw.secret is not None else {}
    objects: list[Object] = []
    if files:
        objects.append(_config_map(world, files))
    if secret:
        objects.append(_secret(world, secret))
    if fw.services:
        objects.extend(_services(world, fw))
    late = {key: fw.starts_late(key) for key in job.spec.replica_specs}
    gangs = scheduling.gang.of_attempts(job, late)
    created = [(r.type, r.index) for r in world.replicas if _wanted(r, pods)]
    joined = scheduling.gang.joined(job, gangs, joining, created)
    every = [*gangs.values(), *joined.values()]
    groups = {g.name: scheduler.group(g, owner_reference(job)) for g in every if g is not None}
    objects.extend(g for g in groups.values() if g is not None)
    for r in world.replicas:
        if not _wanted(r, pods):
            continue
        pod = _pod(
            world, fw, r, has_files=bool(files), has_secret=bool(secret), in_place=in_place, closed=closed
        )
        g = joined[r.type] if r.type in joined else gangs[r.type]
        _schedule(pod, g, gangs[r.type], scheduler, late=late[r.type])
        _keep_off(pod["spec"], keep_off)
        objects.append(pod)
    if with_tensorboard:
        objects.extend(tensorboard.objects(job, owner_reference(job)))
    return objects


def representatives(job: v1beta1.TrainingJob, fw: fw_contract.Framework) -> list[Object]:
    """What stands for all of ``job``'s objects, rendered without rendering them all: the shared
    ones, each replica type's last Pod and Service (its longest names; the replicas of a type
    differ only in their index and env), and the TensorBoard's objects."""
    last = {(k, s.replicas - 1) for k, s in job.spec.replica_specs.items() if s.replicas > 0}
    names = {naming.replica_name(job.metadata.name or "", k, i) for k, i in last}
    return [
        o
        for o in render(job, fw, pods=last)
        if o["kind"] != "Service" or o["metadata"]["name"] in names or tensorboard.is_tensorboard(o)
    ]


def workload(
    job: v1beta1.TrainingJob,
    fw: fw_contract.Framework,
    scheduler: backend.Backend = backend.NONE,
    *,
    priority: int | None = None,
) -> Object | None:
    """The Workload of a job in a Kueue queue on the Workload route (:mod:`.scheduling.workload`),
    or None; ``priority`` is the value of the job's PriorityClass, which only a cluster knows."""
    policy = job.spec.run_policy.scheduling_policy
    queue = scheduler.workload_queue(policy.queue if policy else None)
    if queue is None or policy is None:
        return None
    firsts = {(k, 0) for k, s in job.spec.replica_specs.items() if s.replicas > 0}
    keys = {k.lower(): k for k in job.spec.replica_specs}
    pods = {
        keys[o["metadata"]["labels"][naming.REPLICA_TYPE]]: o
        for o in render(job, fw, scheduler, pods=firsts, with_tensorboard=False)
        if o["kind"] == "Pod"
    }
    name = job.metadata.name or ""
    # An elastic job may be admitted with as few Workers as it trains with (partial admission).
    elastic = job.spec.framework.elastic
    fewest = {k: elastic.min_replicas for k in pods if k.lower() == "worker"} if elastic is not None else {}
    return scheduling.workload.render(
        name=scheduling.workload.name_of(name, job.metadata.uid or ""),
        namespace=job.metadata.namespace or "default",
        labels={naming.JOB_NAME: name},
        owners=owner_reference(job),
        queue=queue,
        pods=pods,
        counts={k: job.spec.replica_specs[k].replicas for k in pods},
        min_counts=fewest,
        index_label=naming.REPLICA_INDEX,
        priority=(policy.priority_class, priority)
        if policy.priority_class and priority is not None
        else None,
    )


def _wanted(r: fw_contract.Replica, pods: Collection[tuple[str, int]] | None) -> bool:
    return pods is None or (r.type, r.index) in pods


def _schedule(
    pod: Object,
    g: scheduling.gang.Gang | None,
    attempt: scheduling.gang.Gang,
    scheduler: backend.Backend,
    *,
    late: bool,
) -> None:
    """Put ``pod`` in gang ``g`` (None: in none, placed alone) of its attempt's gang ``attempt``."""
    if attempt.priority_class:
        pod["spec"]["priorityClassName"] = attempt.priority_class
    if g is None:
        return
    pod["metadata"]["labels"][naming.GANG] = g.name
    scheduler.join(pod, g)
    # Volcano reads the queue from its PodGroup; pods started late stay out of a Kueue group,
    # which is admitted only once all of its pods exist.
    if scheduler.kueue_queue(g.queue) and not late:
        scheduling.kueue_pods.join(pod, g)


def owner_reference(job: v1beta1.TrainingJob) -> list[Object]:
    """The controller owner reference to ``job``, if it has a UID yet."""
    if not job.metadata.uid:
        return []
    return [
        {
            "apiVersion": job.api_version,
            "kind": job.kind,
            "name": job.metadata.name,
            "uid": job.metadata.uid,
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]


def pod_restart_policy(policy: v1beta1.RestartPolicy) -> str:
    # ExitCode is decided by the operator from the exit code, so the kubelet must not restart.
    return "Never" if policy is v1beta1.RestartPolicy.EXIT_CODE else policy.value


def _metadata(world: fw_contract.World, name: str, labels: dict[str, str], **extra: Any) -> Object:
    meta: Object = {"name": name, "namespace": world.namespace, "labels": labels}
    meta.update(extra)
    owners = owner_reference(world.job)
    if owners:
        meta["ownerReferences"] = owners
    return meta


def _config_map(world: fw_contract.World, files: Mapping[str, str]) -> Object:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": _metadata(world, naming.config_map_name(world.name), {naming.JOB_NAME: world.name}),
        "data": dict(files),
    }


def _secret(world: fw_contract.World, data: Mapping[str, str]) -> Object:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": _metadata(world, naming.secret_name(world.name), {naming.JOB_NAME: world.name}),
        "type": "Opaque",
        "data": {k: base64.b64encode(v.encode()).decode("ascii") for k, v in data.items()},
    }


def _replica_labels(
    world: fw_contract.World, fw: fw_contract.Framework, r: fw_contract.Replica
) -> dict[str, str]:
    rt = fw.type_of(r.type)
    return naming.labels(world.name, r.type, r.index, master=rt is not None and rt.master)


def _services(world: fw_contract.World, fw: fw_contract.Framework) -> list[Object]:
    """The headless Services that give the pods their host names: the job's, or one per replica."""
    if world.job.spec.network.hosts is v1beta1.HostNames.PER_JOB:
        # No ports: DNS gives each pod whose subdomain this is a record of its own host name. The
        # TensorBoard's pods carry the job's name too, but no subdomain, so no host name here.
        labels = {naming.JOB_NAME: world.name}
        return [_headless(world, world.name, labels, dict(labels), ports=[])]
    out = []
    for r in world.replicas:
        labels = _replica_labels(world, fw, r)
        selector = {k: labels[k] for k in (naming.JOB_NAME, naming.REPLICA_TYPE, naming.REPLICA_INDEX)}
        ports = [{"name": fw.port_name, "port": r.port, "targetPort": r.port}]
        out.append(_headless(world, r.name, labels, selector, ports=ports))
    return out


def _headless(
    world: fw_contract.World,
    name: str,
    labels: dict[str, str],
    selector: dict[str, str],
    *,
    ports: list[Object],
) -> Object:
    spec: Object = {
        "clusterIP": "None",
        "selector": selector,
        # Peers must resolve each other while they start, before any is Ready.
        "publishNotReadyAddresses": True,
    }
    if ports:
        spec["ports"] = ports
    return {"apiVersion": "v1", "kind": "Service", "metadata": _metadata(world, name, labels), "spec": spec}


def _pod(
    world: fw_contract.World,
    fw: fw_contract.Framework,
    r: fw_contract.Replica,
    *,
    has_files: bool,
    has_secret: bool,
    in_place: bool = False,
    closed: bool = False,
) -> Object:
    template = copy.deepcopy(dict(r.spec.template))
    tmeta = template.get("metadata") or {}
    spec: Object = template["spec"]
    attempt = world.job.status.replica_statuses.get(r.type, v1beta1.ReplicaStatus()).attempt
    labels = {**(tmeta.get("labels") or {}), **_replica_labels(world, fw, r), naming.ATTEMPT: str(attempt)}
    spec["hostname"] = r.name
    if fw.services:
        spec["subdomain"] = r.subdomain
    _dns_policy(spec)
    scheduling.spread.add(spec, world.name)
    spec["restartPolicy"] = pod_restart_policy(r.spec.restart_policy or fw.restart_policy)
    container = fw_contract.main_container(template, fw.container)
    assert container is not None, "validated above"
    # `kubectl logs POD` and `kubetrain logs` read the training process, not a sidecar.
    annotations = {naming.DEFAULT_CONTAINER: container["name"], **(tmeta.get("annotations") or {})}
    restart_env = _restart_env(world.job.status, attempt)
    # The restart env first: a framework's value may refer to the attempt (fw_contract.ATTEMPT).
    progress = world.job.spec.progress
    if in_place:
        _in_place(spec, annotations, container, restart_env, closed=closed)
        agent.add(
            spec,
            container,
            in_place=True,
            progress=progress,
            restart_codes=kubelet_restart_codes(world.job.spec, fw, r.type, container["name"]),
        )
        _add_env(container, fw.env(world, r))
    else:
        _add_env(container, {**restart_env, **fw.env(world, r)})
        # The progress file, and the agent that reads it where a hang is to be found or the
        # job's progress is read.
        watched = progress is not None and (
            progress.deadline_seconds is not None
            or (r.index == 0 and r.type == fw.progress_type(world.job.spec))
        )
        agent.add(spec, container, in_place=False, progress=progress, watched=watched)
    if world.job.spec.checkpoint is not None:
        _checkpoint_file(spec, container)
    _add_port(container, fw.port_name, r.port)
    if has_files:
        spec.setdefault("volumes", []).append(
            # Executable, for scripts such as Horovod's discover_hosts.sh; read-only for everyone.
            {
                "name": _CONFIG_VOLUME,
                "configMap": {"name": naming.config_map_name(world.name), "defaultMode": 0o555},
            }
        )
        container.setdefault("volumeMounts", []).append(
            {"name": _CONFIG_VOLUME, "mountPath": CONFIG_MOUNT, "readOnly": True}
        )
    if has_secret:
        spec.setdefault("volumes", []).append(
            {
                "name": _SECRET_VOLUME,
                "secret": {"secretName": naming.secret_name(world.name), "defaultMode": SECRET_MODE},
            }
        )
        container.setdefault("volumeMounts", []).append(
            {"name": _SECRET_VOLUME, "mountPath": fw.secret_mount, "readOnly": True}
        )
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": _metadata(world, r.name, labels, annotations=annotations),
        "spec": spec,
    }


def kubelet_restart_codes(
    spec: v1beta1.TrainingJobSpec, fw: fw_contract.Framework, key: str, main: str
) -> tuple[int, ...]:
    """The exit codes of its main container ``main`` on which the kubelet restarts in place a
    ``key`` pod made to restart in place, though its policy is ``Never``: those on which the job
    restarts anyway (:func:`.policies.inplace.restart_codes`)."""
    policy = spec.replica_specs[key].restart_policy or fw.restart_policy
    if pod_restart_policy(policy) != "Never":
        return ()  # its kubelet restarts the main container by itself
    fp = spec.failure_policy
    return inplace.restart_codes(
        fp.rules,
        replica_type=key,
        restart_policy=policy,
        scope=fp.restart_scope or fw.restart_scope_of(spec),
        container=main,
    )


def _dns_policy(spec: Object) -> None:
    """A pod on the host's network resolves names as its node does (``dnsPolicy: ClusterFirst``
    falls back to ``Default`` there), so the Service names in its env would not resolve: such a
    pod gets ``ClusterFirstWithHostNet``, the cluster's DNS first. A policy the template sets is
    kept (``Default`` or ``None`` on purpose, say)."""
    if spec.get("hostNetwork") is True and not spec.get("dnsPolicy"):
        spec["dnsPolicy"] = "ClusterFirstWithHostNet"


def _restart_env(status: v1beta1.TrainingJobStatus, attempt: int) -> dict[str, str]:
    """What every rank knows of the attempt it is part of: the attempt (the pod's label), the
    job's restarts so far, and why the last one happened (``{class}:{reason}``, ``""`` before
    any), so that a program can resume and say why."""
    restarted = [
        f
        for f in status.failures
        if f.action in (v1beta1.FailureAction.RESTART, v1beta1.FailureAction.RESTART_UNCHARGED)
    ]
    last = restarted[-1] if restarted else None
    resume = checkpoint.resume_step(status)
    return {
        RESTART_ATTEMPT_ENV: str(attempt),
        RESTARTS_ENV: str(status.restarts.total),
        LAST_RESTART_REASON_ENV: f"{last.failure_class.value}:{last.reason}" if last is not None else "",
        RESUME_STEP_ENV: "" if resume is None else str(resume),
    }


def moved(status: v1beta1.TrainingJobStatus, attempt: int) -> Object:
    """The metadata that moves a pod to ``attempt`` in place (its agent then restarts it): the
    attempt label, and the annotations its restart env reads."""
    env = _restart_env(status, attempt)
    return {
        "labels": {naming.ATTEMPT: env[RESTART_ATTEMPT_ENV]},
        "annotations": {
            naming.RESTARTS: env[RESTARTS_ENV],
            naming.LAST_RESTART_REASON: env[LAST_RESTART_REASON_ENV],
            naming.RESUME_STEP: env[RESUME_STEP_ENV],
        },
    }


def _in_place(
    spec: Object, annotations: dict[str, str], main: Object, restart_env: Mapping[str, str], *, closed: bool
) -> None:
    """Let a pod restart in place: its agent and barrier, its barrier open for its attempt (unless
    ``closed``), and its restart env read from what its barrier wrote of its own metadata, which a
    move changes."""
    attempt = int(restart_env[RESTART_ATTEMPT_ENV])
    annotations[naming.OPENED] = str(inplace.CLOSED if closed else attempt)
    annotations[naming.RESTARTS] = restart_env[RESTARTS_ENV]
    annotations[naming.LAST_RESTART_REASON] = restart_env[LAST_RESTART_REASON_ENV]
    annotations[naming.RESUME_STEP] = restart_env[RESUME_STEP_ENV]
    current = main.setdefault("env", [])
    user_set = {e.get("name") for e in current}
    current.extend(agent.restart_env(k) for k in RESTART_ENV if k not in user_set)


def _checkpoint_file(spec: Object, main: Object) -> None:
    """The file the checkpoint asked of the pod appears in (spec.checkpoint): its annotation, as
    the kubelet projects it, in the main container, named by KUBETRAIN_CHECKPOINT_FILE."""
    request = f"metadata.annotations['{naming.CHECKPOINT_REQUEST}']"
    spec.setdefault("volumes", []).append(
        {
            "name": naming.CHECKPOINT_VOLUME,
            "downwardAPI": {"items": [{"path": "request", "fieldRef": {"fieldPath": request}}]},
        }
    )
    main.setdefault("volumeMounts", []).append(
        {"name": naming.CHECKPOINT_VOLUME, "mountPath": naming.CHECKPOINT_DIR, "readOnly": True}
    )
    _add_env(main, {naming.CHECKPOINT_FILE_ENV: naming.CHECKPOINT_FILE})


def _keep_off(spec: Object, nodes: Collection[str]) -> None:
    """Add ``metadata.name NotIn [node]`` for each node to every term of the pod's required node
    affinity (the terms are alternatives: each must keep off them), or make them the only term.
    The apiserver takes one value per node field requirement: one requirement per node."""
    if not nodes:
        return
    fields = [{"key": observed.NODE_NAME_FIELD, "operator": "NotIn", "values": [n]} for n in sorted(nodes)]
    node_affinity = spec.setdefault("affinity", {}).setdefault("nodeAffinity", {})
    required = node_affinity.setdefault("requiredDuringSchedulingIgnoredDuringExecution", {})
    terms = required.setdefault("nodeSelectorTerms", [])
    if not terms:
        terms.append({})
    for term in terms:
        term.setdefault("matchFields", []).extend(copy.deepcopy(fields))


def _add_env(container: Object, env: Mapping[str, str]) -> None:
    current = container.setdefault("env", [])
    user_set = {e.get("name") for e in current}
    current.extend({"name": k, "value": v} for k, v in env.items() if k not in user_set)


def _add_port(container: Object, name: str, port: int) -> None:
    ports = container.setdefault("ports", [])
    if not any(p.get("containerPort") == port for p in ports):
        ports.append({"name": name, "containerPort": port})
