"""What it means when the apiserver refuses to create one of a job's objects.

A refusal is either about the object or about the namespace it goes to:

- **Invalid** (400, 422): the object itself is wrong — a container without an image, a
  name that is not a DNS label. It never gets better by waiting. Admission refuses such a
  job outright (its dry run sees the same answer); one that got in anyway (created while
  the webhook was not installed) fails after the job's grace period.
- **Forbidden by policy** (403 from PodSecurity or another admission webhook): the
  namespace's rules forbid what the job asks for. Permanent until the spec or the
  namespace's policy changes, so it also fails the job after the grace period — enough
  time for an administrator to relabel a namespace.
- **Unserved**: the cluster does not serve an API the job needs — the group object of the
  operator's gang scheduler, or Kueue's Workload (404 for its kind: the operator's verdict
  :data:`NOT_SERVED_REASON`). Permanent until someone installs it: fails the job after the grace period.
- **Name taken**: the name is another object's — a user's Service, a pod of another
  controller, another job's. Permanent until someone renames or deletes one of them, so
  it fails the job after the grace period. A name still **held** by what is going away (a
  predecessor's pod, when a job is deleted and made again under its name, stays until its
  containers stop) is waited for instead.
- **Waiting** for the namespace: a ResourceQuota is used up, the ServiceAccount does not
  exist yet, the namespace is being created or deleted, the apiserver or a webhook is
  busy or down (404, 409 on a terminating namespace, 429, 5xx, timeouts). These clear by
  themselves, so the job waits, retried with backoff and without limit other than
  ``activeDeadlineSeconds``.

The last three are the operator's own verdicts on a 404 or 409, carried as values
(``Refusal.reason``), never read back out of the message a person reads.

Every kind is shown on the job the same way: a ``ReplicaFailure`` condition whose reason
is :attr:`Refusal.reason` and whose message is the apiserver's, and a Warning Event.
"""

from __future__ import annotations

import enum

import attrs

__all__ = [
    "NAME_HELD",
    "NAME_HELD_REASON",
    "NAME_TAKEN",
    "NAME_TAKEN_REASON",
    "NOT_SERVED",
    "NOT_SERVED_REASON",
    "Kind",
    "Refusal",
    "backoff",
    "classify",
]


class Kind(enum.Enum):
    INVALID = "Invalid"
    FORBIDDEN = "Forbidden"
    UNSERVED = "Unserved"
    TAKEN = "Taken"
    WAITING = "Waiting"


@attrs.frozen(kw_only=True)
class Refusal:
    kind: Kind
    reason: str  # CamelCase, for a condition: Invalid, QuotaExceeded, PodSecurity, ...

    @property
    def permanent(self) -> bool:
        return self.kind is not Kind.WAITING


# (what the message says, the condition reason), first match wins.
_WAITING = (
    ("exceeded quota", "QuotaExceeded"),
    ("serviceaccount", "ServiceAccountMissing"),
    ("service account", "ServiceAccountMissing"),
    ("is being terminated", "NamespaceTerminating"),
    ("failed calling webhook", "WebhookUnavailable"),
)
_FORBIDDEN = (("violates podsecurity", "PodSecurity"),)


def classify(status: int, message: str, verdict: str | None = None) -> Refusal:
    """The kind of a refusal: from the operator's own ``verdict`` on the apiserver's answer where
    it has one (:data:`NAME_TAKEN_REASON`, :data:`NAME_HELD_REASON`, :data:`NOT_SERVED_REASON`),
    else from the HTTP status and the apiserver's message."""
    if verdict == NOT_SERVED_REASON:
        return Refusal(kind=Kind.UNSERVED, reason="GangSchedulerNotServed")
    if verdict == NAME_TAKEN_REASON:
        return Refusal(kind=Kind.TAKEN, reason=NAME_TAKEN_REASON)
    if verdict == NAME_HELD_REASON:
        return Refusal(kind=Kind.WAITING, reason=NAME_HELD_REASON)
    text = message.lower()
    if status in (400, 422):
        return Refusal(kind=Kind.INVALID, reason="Invalid")
    for needle, reason in _WAITING:
        if needle in text:
            return Refusal(kind=Kind.WAITING, reason=reason)
    if status == 403:
        reason = next((r for needle, r in _FORBIDDEN if needle in text), "Forbidden")
        return Refusal(kind=Kind.FORBIDDEN, reason=reason)
    if status == 404:
        return Refusal(kind=Kind.WAITING, reason="NamespaceNotFound")
    return Refusal(kind=Kind.WAITING, reason="Unavailable")


# The operator's verdicts on a create the apiserver answered (v1beta1.Refusal.reason).
NAME_TAKEN_REASON = "NameTaken"
NAME_HELD_REASON = "NameHeld"
NOT_SERVED_REASON = "NotServed"

# What the reconciler says of a gang scheduler's API the cluster does not serve (kept here, as
# policies import nothing of the runtime).
NOT_SERVED = "is not served by this cluster"

# What the reconciler says of a name that is not its job's (a 409 AlreadyExists is no refusal
# when the object is the job's own, made at an earlier pass).
NAME_HELD = "the name is still held by"
NAME_TAKEN = "the name is taken by"

MIN_BACKOFF = 1.0
MAX_BACKOFF = 60.0


def backoff(refused_for: float) -> float:
    """Seconds until the next try, after ``refused_for`` seconds of refusals: doubling, 1 s to 60 s.

    Derived from the time since the first refusal (the condition's transition time), so it
    needs no counter in the status and survives an operator restart.
    """
    return min(MAX_BACKOFF, max(MIN_BACKOFF, refused_for))
