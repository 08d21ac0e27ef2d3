"""The mutating admission webhook: a job made from a runtime is expanded when it is created.

A TrainingJob created with ``spec.runtimeRef`` comes here first (the apiserver runs mutating
webhooks before the CRD's schema and CEL rules, and before the validating webhook). The runtime
and those it builds on are read from the apiserver (:func:`.runtimes.fetch`), the job is expanded
(:mod:`kubetrain.operator.expansion`), and the whole job is checked as the validating webhook
checks one — the framework's rules, what it weighs, and the apiserver's dry run of its pods —
every error said in the terms of whoever wrote the field: the job (``spec.trainer.image``) or the
runtime (``spec.runtimeRef: ClusterTrainingRuntime torch-distributed: spec.replicaSpecs...``).
A job that passes is admitted with one JSON patch: its spec, expanded. The stored job is then
whole and pinned; nothing reads the runtime again.

Only a create is expanded: on an update the stored spec is already whole, and ``runtimeRef`` and
``trainer`` may not change (the validating webhook). A job without ``runtimeRef`` passes untouched.
A runtime that cannot be read (the apiserver is busy) refuses the create, with the apiserver's
words: the job cannot be made without it.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from typing import Any

from kubetrain.api import validation
from kubetrain.operator import expansion, intake
from kubetrain.operator.runtime import client
from kubetrain.operator.webhooks import dryrun, runtimes, validating

__all__ = ["STAND_IN_SUFFIX", "Expansion"]

# As long as the suffix the apiserver adds to generateName.
STAND_IN_SUFFIX = "xxxxx"


class Expansion(validating.Reviewer):
    """The webhook: expand, check, and answer with the expanded spec as a patch."""

    async def review(self, body: Mapping[str, Any]) -> dict[str, Any]:
        request = body.get("request") or {}
        obj = request.get("object")
        job: dict[str, Any] = dict(obj) if isinstance(obj, Mapping) else {}
        spec = job.get("spec")
        if request.get("operation") != "CREATE" or not isinstance(spec, Mapping) or "runtimeRef" not in spec:
            return validating.response(request, [])
        meta = dict(job.get("metadata") or {})
        meta["namespace"] = request.get("namespace") or meta.get("namespace")
        if not meta.get("name") and meta.get("generateName"):
            # The apiserver names the job after the mutating webhooks: check it under a name as
            # long as the one it will get (generateName and five characters).
            meta["name"] = f"{meta['generateName']}{STAND_IN_SUFFIX}"
        job["metadata"] = meta
        namespace = meta["namespace"]
        try:
            resolve = await runtimes.fetch(self.api, spec["runtimeRef"], namespace)
        except client.ApiError as e:
            found = [
                validation.FieldError(path=expansion.REF, message=f"could not read the runtime: {e.message}")
            ]
            return validating.response(request, found)
        found, warnings, expanded = await self.check(job, resolve)
        response = validating.response(request, found, warnings)
        if not found and expanded is not None:  # only the spec: the name is the apiserver's to give
            patch = [{"op": "replace", "path": "/spec", "value": expanded.obj["spec"]}]
            response["response"]["patchType"] = "JSONPatch"
            response["response"]["patch"] = base64.b64encode(json.dumps(patch).encode()).decode("ascii")
        return response

    async def check(
        self, job: Mapping[str, Any], resolve: expansion.Resolve
    ) -> tuple[list[validation.FieldError], tuple[str, ...], expansion.Expanded | None]:
        """``job`` expanded, and why it must not be admitted (each error in its writer's terms)."""
        try:
            expanded = expansion.expand(job, resolve, self.frameworks)
        except validation.ValidationError as e:
            return list(e.errors), (), None
        try:
            decoded = intake.decode(expanded.obj, self.frameworks, weigh=True)
        except validation.ValidationError as e:
            return [expanded.explain(err) for err in e.errors], (), expanded
        verdict = await dryrun.check(self.api, decoded.job, decoded.framework, self.accelerators)
        return [expanded.explain(err) for err in verdict.errors], verdict.warnings, expanded
