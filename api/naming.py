"""Names and labels of the objects a TrainingJob owns.

Every replica gets a Pod named ``{job}-{type}-{index}`` (type in lower case). Its host name
(:func:`host`) depends on the job's ``spec.network.hostNames``: with ``PerReplica`` a headless
Service of the pod's name makes it ``{job}-{type}-{index}.{namespace}.svc``; with ``PerJob`` one
headless Service named after the job is every pod's subdomain, and the host
``{job}-{type}-{index}.{job}.{namespace}.svc``. The labels below
select a job's objects, one replica type, or one replica. A job's TensorBoard is a Deployment
and a Service named ``{job}-tensorboard``; its pods carry :func:`tensorboard_labels` (no
replica type or index: they are not replicas, and no controller owner of the job's: the
Deployment's ReplicaSet owns them).

The resource itself is named here too — its group, kind and plural, which every version shares
(each version's ``groupversion_info`` adds its own version) — and so is every label and annotation
key that more than one package writes or reads, so that the operator, the client, the CLI and the
dev cluster spell each one once.
"""

from collections.abc import Mapping

__all__ = [
    "AGENT",
    "AGENT_EXIT_CODE",
    "ATTEMPT",
    "BARRIER",
    "CHECKPOINT_DIR",
    "CHECKPOINT_FILE",
    "CHECKPOINT_FILE_ENV",
    "CHECKPOINT_REQUEST",
    "CHECKPOINT_VOLUME",
    "DEFAULT_CONTAINER",
    "GANG",
    "GROUP",
    "HELD_EXIT_CODE",
    "HUNG_EXIT_CODE",
    "IN_PLACE_FEATURE",
    "JOB_NAME",
    "JOB_ROLE",
    "KIND",
    "KUEUE_QUEUE_NAME",
    "KUEUE_RETRIABLE",
    "LAST_RESTART_REASON",
    "MANAGER_NAME",
    "OPENED",
    "PLURAL",
    "PREFIX",
    "PROGRESS_DIR",
    "PROGRESS_FILE",
    "PROGRESS_FILE_ENV",
    "PROGRESS_VOLUME",
    "REPLICA_INDEX",
    "REPLICA_TYPE",
    "RESTARTS",
    "RESUME_STEP",
    "TENSORBOARD_ROLE",
    "TENSORBOARD_SUFFIX",
    "config_map_name",
    "host",
    "labels",
    "replica_name",
    "secret_name",
    "selector",
    "subdomain",
    "tensorboard_labels",
    "tensorboard_name",
]

# The TrainingJob resource, in every version: trainingjobs.training.kubetrain.dev.
GROUP = "training.kubetrain.dev"
KIND = "TrainingJob"
PLURAL = "trainingjobs"
# spec.managedBy's value for jobs this operator manages.
MANAGER_NAME = "kubetrain.dev/operator"
# Labels and annotations of kubetrain's own are named in its group.
PREFIX = GROUP + "/"
JOB_NAME = PREFIX + "job-name"
REPLICA_TYPE = PREFIX + "replica-type"
REPLICA_INDEX = PREFIX + "replica-index"
JOB_ROLE = PREFIX + "job-role"
# Which restart attempt a pod belongs to: pods of an older attempt are being replaced.
ATTEMPT = PREFIX + "restart-attempt"
# The gang a pod is scheduled with (one per restart attempt; see kubetrain.operator.scheduling).
GANG = PREFIX + "gang"
# Kueue's: the LocalQueue a pod waits in, and whether Kueue may retry it in its group (a pod
# marked "false" lets Kueue finish the group's Workload once all its pods have ended).
KUEUE_QUEUE_NAME = "kueue.x-k8s.io/queue-name"
KUEUE_RETRIABLE = "kueue.x-k8s.io/retriable-in-group"
# kubectl's: the container that ``kubectl logs`` and ``exec`` pick when none is named.
DEFAULT_CONTAINER = "kubectl.kubernetes.io/default-container"
# A pod restarted in place (failurePolicy.restartMethod InPlace) keeps its name and UID and moves
# to the new attempt: the operator relabels it (ATTEMPT), and its agent, which reads the label
# through a downwardAPI volume, exits with AGENT_EXIT_CODE, on which the kubelet restarts every
# container of the pod where it is. The barrier, the pod's first init container, then holds it
# until the pod's OPENED annotation names its attempt: the operator opens it once no pod of the
# old attempt still runs. RESTARTS and LAST_RESTART_REASON are what the main container's restart
# env reads (downward API env, read again at every container start).
OPENED = PREFIX + "opened-attempt"
RESTARTS = PREFIX + "restarts"
LAST_RESTART_REASON = PREFIX + "last-restart-reason"
# The step of the last checkpoint the operator read (spec.checkpoint): what the next attempt
# resumes from, in its restart env as RESUME_STEP_ENV.
RESUME_STEP = PREFIX + "resume-step"
# spec.checkpoint: the number of the checkpoint the operator asks of the pod now; the kubelet puts it
# in the file CHECKPOINT_FILE_ENV names (a downwardAPI volume of the main container). The process
# answers on its progress line: checkpoint=STEP answered=NUMBER.
CHECKPOINT_REQUEST = PREFIX + "checkpoint-request"
CHECKPOINT_FILE_ENV = "KUBETRAIN_CHECKPOINT_FILE"
CHECKPOINT_VOLUME = "kubetrain-checkpoint"
CHECKPOINT_DIR = "/etc/kubetrain/checkpoint"
CHECKPOINT_FILE = CHECKPOINT_DIR + "/request"
AGENT = "kubetrain-agent"
BARRIER = "kubetrain-barrier"
AGENT_EXIT_CODE = 86
# With spec.progress, a process reports its step in the file PROGRESS_FILE_ENV names, in an emptyDir
# every container of the pod mounts at PROGRESS_DIR; the agent exits HUNG_EXIT_CODE when a rank's
# step stopped moving for the job's deadline (it runs on: the pod's own containers are untouched).
PROGRESS_FILE_ENV = "KUBETRAIN_PROGRESS_FILE"
PROGRESS_VOLUME = "kubetrain-progress"
PROGRESS_DIR = "/var/run/kubetrain-progress"
PROGRESS_FILE = PROGRESS_DIR + "/progress"
HUNG_EXIT_CODE = 87
# A pod whose main container ended in an attempt that is still the pod's, and that the kubelet then
# restarted in place (the main container's RestartAllContainers rule, on the exit codes the job's
# policy restarts for): its barrier holds it, since that attempt has run there; its agent exits
# HELD_EXIT_CODE once to say so, for the kubelet erases the main container's exit code in that restart.
HELD_EXIT_CODE = 88
# What a node declares (status.declaredFeatures) when its kubelet can restart a pod in place;
# the scheduler places a pod with a RestartAllContainers rule only on such a node.
IN_PLACE_FEATURE = "RestartAllContainersOnContainerExits"
# JOB_ROLE of the TensorBoard's pods (replicas are "master" or "worker").
TENSORBOARD_ROLE = "tensorboard"


def replica_name(job: str, replica_type: str, index: int) -> str:
    return f"{job}-{replica_type.lower()}-{index}"


TENSORBOARD_SUFFIX = "-tensorboard"


def tensorboard_name(job: str) -> str:
    """The job's TensorBoard Deployment and Service."""
    return job + TENSORBOARD_SUFFIX


def tensorboard_labels(job: str) -> dict[str, str]:
    """Labels of the TensorBoard's Deployment, Service and pods; its Service selects by them."""
    return {JOB_NAME: job, JOB_ROLE: TENSORBOARD_ROLE}


def config_map_name(job: str) -> str:
    return f"{job}-config"


def secret_name(job: str) -> str:
    return f"{job}-ssh"


def subdomain(job: str, replica_type: str, index: int, *, per_job: bool) -> str:
    """The pod's ``spec.subdomain``: the name of the headless Service that gives it its host name."""
    return job if per_job else replica_name(job, replica_type, index)


def host(job: str, namespace: str, replica_type: str, index: int, *, per_job: bool) -> str:
    name = replica_name(job, replica_type, index)
    return f"{name}.{job}.{namespace}.svc" if per_job else f"{name}.{namespace}.svc"


def labels(job: str, replica_type: str, index: int, *, master: bool) -> dict[str, str]:
    return {
        JOB_NAME: job,
        REPLICA_TYPE: replica_type.lower(),
        REPLICA_INDEX: str(index),
        JOB_ROLE: "master" if master else "worker",
    }


def selector(match: Mapping[str, str]) -> str:
    """A label selector string, e.g. for ``status.replicaStatuses[].selector``."""
    return ",".join(f"{k}={v}" for k, v in sorted(match.items()))
