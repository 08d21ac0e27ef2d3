"""What can go wrong for a person using the client, each as one exception with a readable message.

``str(e)`` of every :class:`Error` is what a person should read — one or more lines, no
traceback needed — and the ``kubetrain`` command prints exactly that after ``error:``. The
failures of waiting carry the job as last seen, so a script can look at its status.
"""

from __future__ import annotations

from kubetrain.api import v1beta1

__all__ = [
    "Error",
    "InvalidInput",
    "InvalidKubeconfig",
    "JobFailed",
    "JobFinished",
    "NotFound",
    "Rejected",
    "Unreachable",
    "WaitError",
    "WaitTimeout",
]


class Error(Exception):
    """Anything the client reports; the message is meant for a person."""


class NotFound(Error):
    def __init__(self, kind: str, name: str, namespace: str | None) -> None:
        where = f" in namespace {namespace!r}" if namespace else ""
        super().__init__(f"{kind} {name!r} not found{where}")
        self.kind, self.name, self.namespace = kind, name, namespace


class InvalidInput(Error):
    """The input cannot be a TrainingJob: one ``file:line: path: message`` line per problem."""


class Rejected(Error):
    """The cluster refused a request (admission, a conflict, RBAC); the message is the apiserver's."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


class Unreachable(Error):
    """No cluster to talk to: no kubeconfig, or nothing answers at its address."""


class InvalidKubeconfig(Unreachable):
    """A kubeconfig that cannot be used: not there, not YAML, or a context that names no cluster.
    One line: ``kubeconfig FILE:LINE:COLUMN: field: what is wrong``."""


class WaitError(Error):
    """A wait that did not end as asked; ``job`` is the job as last seen."""

    def __init__(self, message: str, job: v1beta1.TrainingJob) -> None:
        super().__init__(message)
        self.job = job


class JobFailed(WaitError):
    """The job failed; ``reason``, ``message`` and ``failures`` (its failure history) say why."""

    def __init__(self, job: v1beta1.TrainingJob, reason: str, message: str) -> None:
        super().__init__(f"TrainingJob {job.metadata.name!r} failed: {reason}: {message}", job)
        self.reason, self.message = reason, message
        self.failures: tuple[v1beta1.FailureRecord, ...] = job.status.failures


class JobFinished(WaitError):
    """The job succeeded, so what was waited for can no longer happen."""

    def __init__(self, job: v1beta1.TrainingJob, until: str) -> None:
        super().__init__(f"TrainingJob {job.metadata.name!r} succeeded; it will never be {until}", job)
        self.until = until


class WaitTimeout(WaitError):
    def __init__(self, job: v1beta1.TrainingJob, until: str, timeout: float) -> None:
        state = job.status.state.value if job.status.state else "no state yet"
        super().__init__(
            f"timed out after {timeout:g}s waiting for TrainingJob {job.metadata.name!r} to be {until} "
            f"(it is {state})",
            job,
        )
        self.until, self.timeout = until, timeout
