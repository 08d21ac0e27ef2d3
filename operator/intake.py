"""How a TrainingJob is taken in: decoded, its framework found, the framework's rules applied.

Everything that accepts a job written by a person asks the same three questions in the same
order. Does the object decode, in either API version, with every rule of the API's types
(:func:`kubetrain.api.scheme.decode`, then the hub)? Is the framework it names registered
(:mod:`~kubetrain.operator.frameworks.registry`)? Can that framework run it as written — its
replica types and counts, its own options (:func:`~kubetrain.operator.frameworks.framework.validate`)?
And, asked with ``weigh=True`` where a job comes in (admission, ``render``, ``submit``, and the
reconciler for a job it has not stepped yet), would its objects fit in etcd
(:mod:`~kubetrain.operator.policies.footprint`)?
:func:`decode` asks them and returns the hub job with its framework, or raises a
:class:`~kubetrain.api.validation.ValidationError` holding every field error it found: the
decoding's own, an unknown framework at ``spec.framework.name``, or each of the framework's
refusals.

The admission webhook, the reconciler (a job past the webhook fails once, with the reason),
``kubetrain render``, ``kubetrain submit`` and the converter use it, so that a job one of
them accepts is a job all of them accept. It is pure — no cluster, no runtime. A job that
decodes but that no registered framework runs as written raises :class:`Unrunnable`, which
still holds the job: admission also compares it with the job it replaces, and ``submit``
leaves a framework it does not know to the cluster, whose operator may have that plugin.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import attrs

from kubetrain.api import meta, scheme, v1beta1, validation, wire
from kubetrain.operator import render
from kubetrain.operator.frameworks import framework as fw_contract
from kubetrain.operator.frameworks import registry
from kubetrain.operator.policies import footprint

__all__ = ["Decoded", "Unrunnable", "decode", "readable_status"]

FRAMEWORK_NAME = ("spec", "framework", "name")


@attrs.frozen
class Decoded:
    """A job that may run: the hub (v1beta1) job and the framework that runs it."""

    job: v1beta1.TrainingJob
    framework: fw_contract.Framework


class Unrunnable(validation.ValidationError):
    """A job that decodes, but that no registered framework runs as written.

    ``job`` is the decoded hub job; ``framework`` the one it names, or ``None`` when no
    framework of that name is registered (the one error is then at ``spec.framework.name``).
    """

    def __init__(
        self,
        job: v1beta1.TrainingJob,
        framework: fw_contract.Framework | None,
        errors: Iterable[validation.FieldError],
    ) -> None:
        super().__init__(errors)
        self.job, self.framework = job, framework


def decode(obj: Any, frameworks: registry.Registry | None = None, *, weigh: bool = False) -> Decoded:
    """``obj`` (a TrainingJob of either version, as wire data) with its framework.

    Raises ValidationError with every field error: :class:`Unrunnable` where the job decoded.
    ``frameworks`` defaults to the built-ins and every installed plugin. ``weigh`` also
    refuses a job whose objects would be too large to store, from one pod of each replica type.
    """
    job = scheme.to_hub(scheme.decode(obj))
    known = registry.default() if frameworks is None else frameworks
    try:
        fw = known.get(job.spec.framework.name)
    except registry.UnknownFrameworkError as e:
        raise Unrunnable(job, None, [validation.FieldError(path=FRAMEWORK_NAME, message=str(e))]) from None
    found = fw_contract.validate(fw, job)
    if not found and weigh and footprint.worth_weighing(job):
        found = footprint.errors(job, render.representatives(job, fw))
    if found:
        raise Unrunnable(job, fw, found)
    return Decoded(job=job, framework=fw)


def readable_status(obj: Any) -> v1beta1.TrainingJobStatus:
    """The stored status of ``obj`` as far as it reads: whole, or else those of its conditions
    that do — enough to tell a job that already failed, whatever else its status holds."""
    raw = obj.get("status") or {} if isinstance(obj, dict) else {}
    try:
        return wire.structure(raw, v1beta1.TrainingJobStatus)
    except validation.ValidationError:
        pass
    kept = []
    for c in raw.get("conditions") or () if isinstance(raw, dict) else ():
        try:
            kept.append(wire.structure(c, meta.Condition))
        except validation.ValidationError:
            continue
    return v1beta1.TrainingJobStatus(conditions=tuple(kept))
