"""Runtimes at admission: read for a job made from one, and checked when one is written.

:func:`fetch` reads the runtime a ``runtimeRef`` names and every runtime it builds on, from the
apiserver, into a :data:`~kubetrain.operator.expansion.Resolve` the pure expansion reads (a
runtime not found is simply absent: the expansion says so in the job's terms). It stops at a
runtime already read (a loop, which the expansion names) or after
:data:`~kubetrain.operator.expansion.MAX_DEPTH` runtimes.

:class:`RuntimeAdmission` is the validating webhook for ClusterTrainingRuntimes and
TrainingRuntimes. A runtime is admitted when it decodes, what it builds on resolves (exists, no
loop, not of another namespace), and a trial job made from it — the runtime's own spec, given an
image and a command where the runtime leaves them to the job — passes every check a job passes
(:mod:`~kubetrain.operator.intake`) and the apiserver's dry run of its pods
(:mod:`~kubetrain.operator.webhooks.dryrun`), every error said in the runtime's terms — and, if
it has accelerator profiles, a second one requesting each accelerator, so that the pods a
profile equips are dry-run too. So a runtime that cannot produce runnable pods is refused when it
is written, not when a job is.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubetrain.api import v1beta1, validation, wire
from kubetrain.operator import expansion, intake
from kubetrain.operator.runtime import client
from kubetrain.operator.webhooks import dryrun, validating

__all__ = ["RESOURCES", "RuntimeAdmission", "fetch", "trial_job"]

RESOURCES = {
    v1beta1.RuntimeKind.CLUSTER: client.CLUSTER_TRAINING_RUNTIMES,
    v1beta1.RuntimeKind.NAMESPACED: client.TRAINING_RUNTIMES,
}
# What a trial job gives where the runtime leaves it to the job.
TRIAL_IMAGE = "registry.invalid/kubetrain/trial:1"
TRIAL_COMMAND = ("/bin/true",)
TRIAL_NAME = "trial"
TRIAL_NAMESPACE = "default"


async def fetch(api: client.Client, ref: Any, namespace: str | None) -> expansion.Resolve:
    """The runtimes ``ref`` (wire data) leads to, read from the apiserver, as a Resolve.

    Raises :class:`client.ApiError` for an answer other than found or not found."""
    found: dict[tuple[str, str, str | None], Mapping[str, Any]] = {}
    at = ref
    for _ in range(expansion.MAX_DEPTH + 1):
        try:
            r = wire.structure(at, v1beta1.RuntimeRef)
        except validation.ValidationError:
            break  # the expansion reports it, with its path
        key = (r.kind.value, r.name, namespace if r.kind is v1beta1.RuntimeKind.NAMESPACED else None)
        if key in found:
            break
        try:
            obj = await api.get(RESOURCES[r.kind], r.name, key[2])
        except client.ApiError as e:
            if e.not_found:
                break
            raise
        found[key] = obj
        at = (obj.get("spec") or {}).get("runtimeRef")
        if at is None:
            break

    def resolve(kind: v1beta1.RuntimeKind, name: str, ns: str | None) -> Mapping[str, Any] | None:
        return found.get((kind.value, name, ns))

    return resolve


def trial_job(
    runtime: Mapping[str, Any], namespace: str | None, resolve: expansion.Resolve
) -> dict[str, Any]:
    """A short job made from ``runtime`` giving what it needs: an image, a command."""
    meta = runtime.get("metadata") or {}
    ref = {"kind": runtime.get("kind"), "name": meta.get("name")}
    resolved = expansion.resolve_runtime(wire.structure(ref, v1beta1.RuntimeRef), namespace, resolve)
    needs = expansion.needs(resolved)
    trainer: dict[str, Any] = {}
    if "image" in needs:
        trainer["image"] = TRIAL_IMAGE
    if "command" in needs:
        trainer["command"] = list(TRIAL_COMMAND)
    return {
        "apiVersion": v1beta1.API_VERSION,
        "kind": v1beta1.KIND,
        "metadata": {"name": TRIAL_NAME, "namespace": namespace or TRIAL_NAMESPACE},
        "spec": {"runtimeRef": ref, "trainer": trainer},
    }


class RuntimeAdmission(validating.Reviewer):
    """The validating webhook of both runtime kinds."""

    async def review(self, body: Mapping[str, Any]) -> dict[str, Any]:
        request = body.get("request") or {}
        new = request.get("object")
        if not isinstance(new, Mapping):
            return validating.response(request, [])  # DELETE: jobs made from it keep what they took
        errors, warnings = await self.check(new, request.get("namespace"))
        return validating.response(request, errors, warnings)

    async def check(
        self, runtime: Mapping[str, Any], namespace: str | None
    ) -> tuple[list[validation.FieldError], tuple[str, ...]]:
        """Why ``runtime`` must not be admitted, and warnings for it."""
        kind = v1beta1.RuntimeKind(runtime.get("kind", v1beta1.RuntimeKind.CLUSTER))
        try:
            wire.structure(runtime, expansion.CLASSES[kind])
        except validation.ValidationError as e:
            return list(e.errors), ()
        name = (runtime.get("metadata") or {}).get("name")
        base = await fetch(
            api=self.api, ref=(runtime.get("spec") or {}).get("runtimeRef"), namespace=namespace
        )

        def resolve(k: v1beta1.RuntimeKind, n: str, ns: str | None) -> Mapping[str, Any] | None:
            # The runtime as written, not as stored: it may be new, or being changed.
            return runtime if (k, n) == (kind, name) else base(k, n, ns)

        label = str(v1beta1.RuntimeRef(kind=kind, name=str(name)))
        try:
            job = trial_job(runtime, namespace, resolve)
        except validation.ValidationError as e:
            return list(e.errors), ()  # its runtimeRef: the runtime's own field
        found, warnings, expanded = await self._trial(job, resolve, label)
        # The trial job requests no accelerator, so no profile was applied to its pods: a second
        # one requests one of each, and what its pods get (env, host volumes, tolerations) is
        # checked too, else a bad profile is only found by the first job that requests one.
        requested = sorted((expanded.runtime.spec.get("accelerators") or {}) if expanded else ())
        if found or not requested:
            return found, warnings
        job["spec"]["trainer"]["resourcesPerNode"] = {"limits": dict.fromkeys(requested, 1)}
        more, also, _expanded = await self._trial(job, resolve, label)
        said = f"a job requesting {', '.join(requested)}"
        return [
            validation.FieldError(path=("spec", "accelerators"), message=f"{said}: {e}") for e in more
        ], tuple(dict.fromkeys((*warnings, *also)))

    async def _trial(
        self, job: Mapping[str, Any], resolve: expansion.Resolve, label: str
    ) -> tuple[list[validation.FieldError], tuple[str, ...], expansion.Expanded | None]:
        """What admission says of the trial ``job``, in the runtime's terms; the expansion."""
        try:
            expanded = expansion.expand(job, resolve, self.frameworks)
        except validation.ValidationError as e:
            return list(e.errors), (), None  # its trainer section: the runtime's own fields
        try:
            decoded = intake.decode(expanded.obj, self.frameworks, weigh=True)
        except validation.ValidationError as e:
            return [_in_runtime(expanded, label, err) for err in e.errors], (), expanded
        verdict = await dryrun.check(self.api, decoded.job, decoded.framework, self.accelerators)
        return [_in_runtime(expanded, label, err) for err in verdict.errors], verdict.warnings, expanded


def _in_runtime(
    expanded: expansion.Expanded, label: str, error: validation.FieldError
) -> validation.FieldError:
    """An error of the trial job in the runtime's terms: its own field, a field of a runtime it
    builds on (said at its ``runtimeRef``), or else what a job made from it would be told."""
    where = expanded.origin(error.path)
    if where is not None and where[0] == label:
        return validation.FieldError(path=where[1], message=error.message)
    if where is not None and where[0] != expansion.JOB:
        return expanded.explain(error)
    return validation.FieldError(path=(), message=f"a job made from this runtime: {error}")
